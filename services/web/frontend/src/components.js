// The tessera.data/v1 catalog as Lit elements for the A2UI v0.9 renderer.
//
// The renderer checks every component against its props schema (generated from the catalog's contracts) and
// each element reads its props resolved by the A2UI binder: a bound prop arrives as the value at its data-model
// path — a resource's descriptor at /resources/<id>, with the latest window of its rows (fetched per node
// under host grants) at /resources/<id>/window. Rows never come from anywhere else. What an element asks for
// is an A2UI action dispatched through the renderer's action channel (actions.js).

import { html, css, nothing } from 'lit';
import { styleMap } from 'lit/directives/style-map.js';
import { A2uiLitElement, Catalog } from '@a2ui/web_core/v0_9';
import { use as useECharts, init as initChart } from 'echarts/core';
import { BarChart, LineChart, ScatterChart, PieChart, HeatmapChart } from 'echarts/charts';
import { GridComponent, TooltipComponent, LegendComponent, AriaComponent, VisualMapComponent } from 'echarts/components';
import { SVGRenderer } from 'echarts/renderers';
import { report } from './api.js';
import { outcomes } from './actions.js';
import { CATALOG_ID, chartRecipes, componentSchemas } from './generated/catalog-schemas.js';
import { columnFormat, formatValue, isNumeric, statusInWords } from './format.js';
import { CHART_NAMES, chartTypes, csvOf, drillQuestion, fileName } from './result-tools.js';
import { chartOption, MAX_CHART_ROWS } from './chart-option.js';

useECharts([BarChart, LineChart, ScatterChart, PieChart, HeatmapChart, GridComponent, TooltipComponent,
  LegendComponent, AriaComponent, VisualMapComponent, SVGRenderer]);

export const surfaceState = {
  revisionId: '',
  canDownload: true,  // false in an outside agent's sandboxed frame, which may not save files (answer-frame.js)
  windows: new Map(),  // key → window, as received (surface.js)
  coming: new Set(),  // keys of first windows the host is sending
  waiting: new Map(),  // key → {timer, ask}: a block waiting for a first window
  arrivals: new EventTarget(),  // a 'window' event (detail: its key) for each window received
  // The window came: stop waiting for it.
  settled(key) {
    const wait = this.waiting.get(key);
    if (wait) clearTimeout(wait.timer);
    this.waiting.delete(key);
  },
  // It will not come: the block asks for it itself.
  notComing(key) {
    const wait = this.waiting.get(key);
    this.settled(key);
    wait?.ask();
  },
};
const FIRST_WINDOW_PATIENCE_MS = 5000;  // a first window the host promised but never sent is asked for

// One caption per answer. What a result answers is the gateway's caption; the one most blocks on screen share
// is shown once, under the answer, by the page (surface.js), outside anything a proposal lays out; a block shows
// its own caption only where it differs from that one. A 'change' event says the shared caption changed.
export class AnswerCaptions extends EventTarget {
  constructor() {
    super();
    this.byBlock = new Map();  // element → the captions of the results it shows
    this.shared = '';
  }

  // `element` shows results with these captions (none: it shows no result, or no longer).
  note(element, texts) {
    const kept = [...new Set(texts.filter(Boolean))];
    if (kept.join('\n') === (this.byBlock.get(element) || []).join('\n')) return;
    if (kept.length) this.byBlock.set(element, kept);
    else this.byBlock.delete(element);
    const counts = new Map();
    for (const texts of this.byBlock.values()) for (const text of texts) counts.set(text, (counts.get(text) || 0) + 1);
    // The most shared; of equally shared ones, the one noted first (the first on screen).
    const shared = [...counts].reduce((best, entry) => (entry[1] > best[1] ? entry : best), ['', 0])[0];
    if (shared === this.shared) return;
    this.shared = shared;
    this.dispatchEvent(new Event('change'));
  }

  // The words under a block: its captions other than the shared one.
  own(texts) { return [...new Set(texts.filter((text) => text && text !== this.shared))]; }

  // The shared caption, once, in `below` (drawn by the page, outside anything a proposal lays out).
  drawInto(below) {
    below.replaceChildren();
    below.hidden = !this.shared;
    if (!this.shared) return;
    const line = document.createElement('p');
    line.className = 'computed';
    line.dataset.caption = '';
    const tag = document.createElement('span');
    tag.className = 'tag';
    tag.textContent = 'Computed';
    line.append(tag, this.shared);
    below.append(line);
  }
}
// The live answer's captions; an earlier answer of the conversation has its own (on its container's
// `answerCaptions`), so its blocks never change what the live answer shares.
export const captions = new AnswerCaptions();

// The captions of the answer an element is drawn in: the nearest container (across shadow roots) that has its own.
function captionsOf(element) {
  for (let node = element; node; node = node.parentNode ?? node.host) {
    if (node.answerCaptions) return node.answerCaptions;
  }
  return captions;
}

export function captionLine(text) {
  return html`<p class="computed" data-caption><span class="tag">Computed</span>${text}</p>`;
}

// The key the host lists first windows by: the resource (as /resources/<id>), the block, its binding, the offset.
export function windowKey(resourcePath, node, prop, offset) {
  return `${String(resourcePath).split('/').pop()}|${node}|${prop}|${offset}`;
}

// The first window of a block: already here (returned), on its way from the host (waited for), or asked for.
function firstWindow(key, ask) {
  const found = surfaceState.windows.get(key);
  if (found) return found;
  if (surfaceState.coming.has(key)) {
    surfaceState.settled(key);
    surfaceState.waiting.set(key, { ask, timer: setTimeout(() => surfaceState.notComing(key), FIRST_WINDOW_PATIENCE_MS) });
    return null;
  }
  ask();
  return null;
}

const shared = css`
  :host { display: block; font: inherit; color: inherit; }
  .skeleton { min-height: 4rem; border-radius: 6px; background: linear-gradient(90deg, #eef0f3, #f7f8fa, #eef0f3);
    background-size: 200% 100%; animation: shimmer 1.4s infinite; }
  @media (prefers-reduced-motion: reduce) { .skeleton { animation: none; } }
  @keyframes shimmer { to { background-position: -200% 0; } }
  .error { color: #8a1c1c; }
  button { font: inherit; padding: 0.35rem 0.8rem; border-radius: 6px; border: 1px solid #5b6470; background: #fff;
    color: #1d232b; cursor: pointer; }
  button:focus-visible, select:focus-visible { outline: 3px solid #1f5fbf; outline-offset: 2px; }
  button[disabled] { opacity: 0.6; cursor: default; }
  .computed { margin: 0.4rem 0 0; color: #3d4550; font-size: 0.85rem; line-height: 1.35; }
  .computed .tag, .model .tag { display: inline-block; font-size: 0.7rem; font-weight: 600; letter-spacing: 0.02em;
    text-transform: uppercase; border-radius: 4px; padding: 0 0.3rem; margin-right: 0.35rem; }
  .computed .tag { background: #e3efe6; color: #1b4d2b; }
  .cap-note { margin: 0.25rem 0 0; color: #3d4550; font-size: 0.85rem; }
  .tools { display: flex; flex-wrap: wrap; gap: 0.4rem; align-items: center; margin: 0.25rem 0 0.5rem;
    font-size: 0.85rem; }
  .tools button, .tools select { font-size: 0.85rem; padding: 0.2rem 0.55rem; }
  .tools [aria-pressed=true] { background: #1d232b; color: #fff; }
  .tool-status { color: #3d4550; }
  table { border-collapse: collapse; width: 100%; }
  caption { text-align: left; font-weight: 600; margin-bottom: 0.4rem; }
  th, td { padding: 0.35rem 0.6rem; border-bottom: 1px solid #dde1e6; text-align: left; }
  td.number, th.number { text-align: right; font-variant-numeric: tabular-nums; }
  button.drill { border: 0; background: none; padding: 0; color: #1f5fbf; text-decoration: underline;
    text-align: left; }
`;

// Every component: props resolved by the binder, actions through the renderer, children or their skeleton.
class TesseraElement extends A2uiLitElement {
  static styles = shared;

  get props() { return this.controller?.props ?? {}; }
  get nodeId() { return this.context?.componentModel?.id ?? ''; }

  // The entry a bound prop names (`/resources/<id>` → `<id>`): the binder hands over the value there, while a
  // window's key and a state write name the entry itself, so it is read from the binding as authored.
  boundId(prop) { return String(this.context?.componentModel?.properties?.[prop]?.path || '').split('/').pop(); }

  // Asks through the renderer's action channel; how it went comes back as answered({action, reply | error}).
  act(name, context) { this.context.dispatchAction({ event: { name, context } }); }
  answered() {}

  // Whether it shows captions: it is drawn again when the answer's shared caption changes.
  static showsCaptions = false;

  // The captions of the answer this element is part of (found once it is on the page).
  get captions() {
    this._captions ??= captionsOf(this);
    return this._captions;
  }

  connectedCallback() {
    super.connectedCallback();
    if (this.constructor.showsCaptions) {
      this._onCaptions = () => this.requestUpdate();
      this.captions.addEventListener('change', this._onCaptions);
    }
    this._onOutcome = ({ detail }) => {
      const { action } = detail;
      if (action.sourceComponentId === this.nodeId && action.surfaceId === this.context?.dataContext.surface.id) {
        this.answered(detail);
      }
    };
    outcomes.addEventListener('outcome', this._onOutcome);
  }

  disconnectedCallback() {
    super.disconnectedCallback();
    outcomes.removeEventListener('outcome', this._onOutcome);
    if (this._onCaptions) {
      this.captions.removeEventListener('change', this._onCaptions);
      this.captions.note(this, []);  // off the screen: its results no longer count towards the shared caption
    }
  }

  // A child that has not arrived yet keeps its place with a fixed minimum height: no layout jump.
  child(id) {
    if (!this.context.surfaceComponents.get(id)) return html`<div class="skeleton" aria-hidden="true"></div>`;
    return this.renderNode(id);
  }

  children() { return (this.props.children || []).map((id) => this.child(id)); }
}

// A bound resource: its descriptor (the binder's value of the `resource` prop), and the rows of the window this
// node asked for.
const EXPORT_WINDOW = 1000;  // rows asked for at a time for a CSV (the most one window holds)
const EXPORT_PATIENCE_MS = 30_000;

class ResourceElement extends TesseraElement {
  static properties = { _window: { state: true }, _loading: { state: true }, _error: { state: true },
    _exported: { state: true }, _exporting: { state: true } };
  static showsCaptions = true;

  get descriptor() { return this.props.resource; }

  // First time, or the renderer reused this element for another block (e.g. switching tabs): start over for it.
  // Otherwise the descriptor's latest window is this block's when it is for this node at the offset it asked.
  willUpdate(changed) {
    super.willUpdate(changed);
    this.captions.note(this, [this.descriptor?.interpretation?.text]);
    const bound = `${this.nodeId}|${this.boundId('resource')}`;
    if (this._bound !== bound) {
      if (this._firstKey) surfaceState.settled(this._firstKey);  // no longer this block's window to wait for
      this._bound = bound;
      this._window = undefined;
      this._error = '';
      this._exported = '';
      this.rebound();
      queueMicrotask(() => this.start());
      return;
    }
    const window = this.descriptor?.window;
    if (window && window !== this._window && window.node === this.nodeId && window.offset === this._asked) {
      this._window = window;
      this._loading = false;
    }
  }

  start() {
    if (!this.boundId('resource')) return;
    const offset = this.firstOffset();
    this._asked = offset;
    this._loading = true;
    this._firstKey = windowKey(this.boundId('resource'), this.nodeId, '/resource', offset);
    const found = firstWindow(this._firstKey, () => this.fetchWindow(offset));
    if (found) {
      this._window = found;
      this._loading = false;
    }
  }

  disconnectedCallback() {
    super.disconnectedCallback();
    if (this._firstKey) surfaceState.settled(this._firstKey);
  }

  firstOffset() { return 0; }
  windowSize() { return 25; }
  // Another result now: what the person chose for the one before (a chart's view or type) is not this one's.
  rebound() {}

  fetchWindow(offset) {
    this._asked = offset;
    this._loading = true;
    this._error = '';
    this.act('resource-window', { offset, limit: this.windowSize() });
  }

  // The window of `limit` rows from `offset`, asked for under the block's own grant and waited for on the stream.
  windowAt(offset, limit) {
    const key = windowKey(this.boundId('resource'), this.nodeId, '/resource', offset);
    const wanted = Math.min(limit, Math.max(0, Number(this.descriptor?.rowCount || 0) - offset));
    return new Promise((resolve, reject) => {
      const done = (outcome) => {
        clearTimeout(timer);
        surfaceState.arrivals.removeEventListener('window', arrived);
        this._exportFailed = null;
        outcome();
      };
      const arrived = ({ detail }) => {
        const found = surfaceState.windows.get(detail);
        if (detail === key && found && found.rows.length >= wanted) done(() => resolve(found));
      };
      const timer = setTimeout(() => done(() => reject(new Error('no rows came in time'))), EXPORT_PATIENCE_MS);
      this._exportFailed = (reason) => done(() => reject(new Error(reason)));
      surfaceState.arrivals.addEventListener('window', arrived);
      this.act('resource-window', { offset, limit, purpose: 'export' });
    });
  }

  // Every row of the result the person may see, through the same grant as the block's own, saved as CSV; one
  // export at a time (the button waits).
  async exportCsv() {
    if (this._exporting) return;
    this._exporting = true;
    try {
      await this.saveCsv();
    } finally {
      this._exporting = false;
    }
  }

  async saveCsv() {
    const total = Number(this.descriptor?.rowCount || 0);
    const rows = [];
    let columns = [];
    this._exported = total > EXPORT_WINDOW ? `Preparing ${total.toLocaleString()} rows…` : 'Preparing…';
    try {
      for (let offset = 0; offset === 0 || offset < total; offset += EXPORT_WINDOW) {
        const window = await this.windowAt(offset, EXPORT_WINDOW);
        columns = window.columns;
        rows.push(...window.rows);
        if (!window.rows.length) break;
        if (total > EXPORT_WINDOW) {
          this._exported = `Preparing ${rows.length.toLocaleString()} of ${total.toLocaleString()} rows…`;
        }
      }
    } catch (error) {
      this._exported = `Not exported: ${error.message}.`;
      return;
    }
    const labels = Object.fromEntries((this.descriptor?.columns || []).map((c) => [c.id, c.label]));
    const link = document.createElement('a');
    link.href = URL.createObjectURL(new Blob([csvOf(columns, labels, rows)], { type: 'text/csv;charset=utf-8' }));
    link.download = fileName(this.props.title || this.descriptor?.interpretation?.measures?.join(' and '));
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
    this._exported = `Saved ${rows.length.toLocaleString()} ${rows.length === 1 ? 'row' : 'rows'} as ${link.download}.`;
  }

  // A question about one value of the result, asked as a follow-up in the conversation (main.js asks it).
  drill(question) {
    if (!question) return;
    this.dispatchEvent(new CustomEvent('tessera-ask', { detail: { question }, bubbles: true, composed: true }));
  }

  // Rows as a table; each value of its first dimension a button that asks about that value.
  rowsTable(columns, rows, title) {
    const described = columns.map((id) => this.descriptor?.columns?.find((c) => c.id === id));
    const formats = columns.map((id) => this.format(id));
    const dimensionAt = described.findIndex((c) => c?.role === 'dimension' || c?.role === 'time');
    const cell = (value, i) => {
      const shown = formatValue(value, formats[i]);
      const question = i === dimensionAt ? drillQuestion(value, described[i]) : null;
      if (!question) return shown;
      return html`<button class="drill" title=${question} @click=${() => this.drill(question)}>${shown}</button>`;
    };
    return html`<table>
      ${title ? html`<caption>${title}</caption>` : nothing}
      <thead><tr>${described.map((c, i) => html`<th scope="col" class=${isNumeric(formats[i]) ? 'number' : ''}>${
        c?.label || columns[i]}</th>`)}</tr></thead>
      <tbody>${rows.map((row) => html`<tr>${row.map((value, i) => html`
        <td class=${isNumeric(formats[i]) ? 'number' : ''}>${cell(value, i)}</td>`)}</tr>`)}</tbody>
    </table>`;
  }

  // The result's own tools: what the block adds (a chart's view and type), then the rows as CSV.
  tools(own = nothing) {
    const csv = surfaceState.canDownload
      ? html`<button type="button" ?disabled=${this._exporting} @click=${this.exportCsv}>Download CSV</button>`
      : nothing;
    return html`<div class="tools" role="group" aria-label="This result">${own}${csv}
      <span class="tool-status" role="status">${this._exported || ''}</span></div>`;
  }

  answered({ action, error }) {
    if (error && action.context?.purpose === 'export') {
      this._exportFailed?.(error.reason || error.message);
      return;
    }
    if (!error || action.name !== 'resource-window' || action.context.prop) return;
    this._loading = false;
    this._error = `Could not load rows (${error.reason || error.message}).`;
    report('window-failed', `${this.nodeId}: ${error.reason}`);
  }

  // What the gateway says this result answers (no proposal can set it): under the block only where it differs
  // from the caption the answer shows once.
  caption() { return this.captions.own([this.descriptor?.interpretation?.text]).map(captionLine); }

  format(columnId) { return columnFormat(this.descriptor, columnId); }

  status() {
    if (this._error) {
      return html`<p class="error" role="alert">${this._error}
        <button @click=${() => this.fetchWindow(this._asked || 0)}>Retry</button></p>`;
    }
    if (this._loading && !this._window) return html`<div class="skeleton" role="status" aria-label="Loading"></div>`;
    return nothing;
  }
}

class TColumn extends TesseraElement {
  static styles = [shared, css`.stack { display: flex; flex-direction: column; gap: var(--gap, 1rem); }`];
  render() {
    const gap = { none: '0', small: '0.5rem', medium: '1rem', large: '1.75rem' }[this.props.gap] || '1rem';
    return html`<div class="stack" style=${styleMap({ '--gap': gap })}>${this.children()}</div>`;
  }
}

class TRow extends TesseraElement {
  static styles = [shared, css`.row { display: flex; flex-wrap: wrap; gap: var(--gap, 1rem); }
    .row > * { flex: 1 1 16rem; min-width: 0; }`];
  render() {
    const gap = { none: '0', small: '0.5rem', medium: '1rem', large: '1.75rem' }[this.props.gap] || '1rem';
    return html`<div class="row" style=${styleMap({ '--gap': gap, 'align-items': this.props.align || 'stretch' })}>${this.children()}</div>`;
  }
}

class TCard extends TesseraElement {
  static styles = [shared, css`section { border: 1px solid #c9ced6; border-radius: 8px; padding: 1rem; }
    h3 { margin: 0 0 0.75rem; font-size: 1.05rem; }`];
  render() {
    return html`<section aria-label=${this.props.title || nothing}>
      ${this.props.title ? html`<h3>${this.props.title}</h3>` : nothing}${this.children()}</section>`;
  }
}

class TTabs extends TesseraElement {
  static properties = { _active: { state: true } };
  static styles = [shared, css`[role=tablist] { display: flex; gap: 0.25rem; margin-bottom: 0.75rem; }
    [aria-selected=true] { background: #1d232b; color: #fff; }`];
  constructor() { super(); this._active = 0; }
  async key(event) {
    const count = (this.props.children || []).length;
    if (event.key === 'ArrowRight') this._active = (this._active + 1) % count;
    else if (event.key === 'ArrowLeft') this._active = (this._active + count - 1) % count;
    else return;
    await this.updateComplete;
    this.renderRoot.querySelectorAll('[role=tab]')[this._active]?.focus();  // focus follows the selected tab
  }
  render() {
    const labels = this.props.labels || [];
    const kids = this.props.children || [];
    return html`<div role="tablist" @keydown=${this.key}>${labels.map((label, i) => html`
        <button role="tab" aria-selected=${String(i === this._active)} tabindex=${i === this._active ? 0 : -1}
          @click=${() => { this._active = i; }}>${label}</button>`)}</div>
      <div role="tabpanel">${kids[this._active] ? this.child(kids[this._active]) : nothing}</div>`;
  }
}

class TDivider extends TesseraElement {
  render() { return html`<hr style=${styleMap({ border: '0', 'border-top': '1px solid #c9ced6' })}>`; }
}

class THeading extends TesseraElement {
  static styles = [shared, css`h2, h3, h4 { margin: 0; line-height: 1.25; }`];
  render() {
    const level = this.props.level || 1;
    if (level >= 3) return html`<h4>${this.props.text}</h4>`;
    return level === 2 ? html`<h3>${this.props.text}</h3>` : html`<h2>${this.props.text}</h2>`;
  }
}

class TText extends TesseraElement {
  render() {
    return html`<p style=${styleMap({ margin: '0', color: this.props.tone === 'muted' ? '#4a525c' : null })}>${this.props.text}</p>`;
  }
}

class TCallout extends TesseraElement {
  static styles = [shared, css`div { border-left: 4px solid #1f5fbf; padding: 0.5rem 0.75rem; background: #f2f6fc; }
    .warning { border-color: #8a5a00; background: #fdf6e7; } .error { border-color: #8a1c1c; background: #fbeeee; }
    .success { border-color: #1b6b3a; background: #eef8f1; } strong { display: block; }`];
  render() {
    return html`<div role="note" class=${this.props.tone || 'info'}>
      ${this.props.title ? html`<strong>${this.props.title}</strong>` : nothing}<span>${this.props.text}</span></div>`;
  }
}

// "{region} leads with {revenue}": the model wrote the words and named the cells; this fills them in from
// windows the host grants for exactly those cells, formatted by the result's own column formats.
const TEMPLATE_TOKEN = /\{\{|\}\}|\{([a-z][a-z0-9_]{0,31})\}/g;

function templateParts(text) {
  const parts = [];
  let position = 0;
  for (const match of text.matchAll(TEMPLATE_TOKEN)) {
    if (match.index > position) parts.push(text.slice(position, match.index));
    parts.push(match[1] ? { slot: match[1] } : match[0][0]);
    position = match.index + match[0].length;
  }
  if (position < text.length) parts.push(text.slice(position));
  return parts;
}

// Each figure binds its own result; the binder does not descend into a map of them, so this block follows the
// results through the A2UI data context itself.
class TFigureText extends TesseraElement {
  static properties = { _values: { state: true }, _failed: { state: true } };
  static showsCaptions = true;
  static styles = [shared, css`p { margin: 0; } .figure { font-weight: 650; font-variant-numeric: tabular-nums; }
    .pending { display: inline-block; min-width: 3ch; border-radius: 4px; background: #eef0f3; color: transparent; }
    .muted { color: #4a525c; }`];

  // First time, or the renderer reused this element for another block, or a revision bound other cells: start over.
  willUpdate(changed) {
    super.willUpdate(changed);
    if (this._bound !== this.binding()) {
      this.stop();
      this._bound = this.binding();
      queueMicrotask(() => this.start());
    }
    this.captions.note(this, this.captionTexts());
  }

  // What the gateway says each figure's result answers.
  captionTexts() {
    return Object.values(this.props.figures || {}).map((f) => this._results?.get(f.resource?.path)
      ?.interpretation?.text);
  }

  connectedCallback() {
    super.connectedCallback();
    if (this.hasUpdated) this.requestUpdate();  // back in the page: follow its results again
  }

  disconnectedCallback() {
    super.disconnectedCallback();
    this.stop();
    this._bound = undefined;
  }

  binding() { return `${this.nodeId}|${this.props.text}|${JSON.stringify(this.props.figures || {})}`; }

  stop() {
    for (const s of this._subscriptions || []) s.unsubscribe();
    this._subscriptions = [];
    for (const key of this._keys || []) surfaceState.settled(key);
    this._keys = [];
  }

  start() {
    if (!this.isConnected) return;  // gone before it began: started again if it comes back
    const figures = this.props.figures || {};
    this._values = {};
    this._failed = {};
    this._results = new Map();  // path → the result's descriptor, with its latest window
    for (const path of new Set(Object.values(figures).map((f) => f.resource?.path).filter(Boolean))) {
      const followed = this.context.dataContext.subscribeDynamicValue({ path }, (result) => {
        this._results.set(path, result);
        this.received(result?.window, path);
        this.requestUpdate();
      });
      this._results.set(path, followed.value);
      this._subscriptions.push(followed);
    }
    for (const [name, figure] of Object.entries(figures)) {
      const key = windowKey(figure.resource?.path, this.nodeId, `/figures/${name}`, figure.row || 0);
      this._keys.push(key);
      const found = firstWindow(key, () => this.act('resource-window',
        { prop: `/figures/${name}`, offset: figure.row || 0, limit: 1 }));
      if (found) this.received(found, figure.resource?.path);
    }
  }

  // A window for one of this block's figures, from the figure's own result, at its row.
  received(window, path) {
    if (!window || window.node !== this.nodeId || !String(window.prop || '').startsWith('/figures/')) return;
    const name = window.prop.slice('/figures/'.length);
    const figure = (this.props.figures || {})[name];
    if (!figure || figure.resource?.path !== path || window.offset !== (figure.row || 0) || !window.rows?.length) {
      return;
    }
    const cell = window.rows[0][window.columns.indexOf(figure.column)];
    this._values = { ...this._values, [name]: formatValue(cell, columnFormat(this._results.get(path), figure.column)) };
  }

  answered({ action, error }) {
    if (!error || !String(action.context.prop || '').startsWith('/figures/')) return;
    const name = action.context.prop.slice('/figures/'.length);
    this._failed = { ...this._failed, [name]: true };
    report('window-failed', `${this.nodeId}/${name}: ${error.reason}`);
  }

  render() {
    const parts = templateParts(this.props.text || '').map((part) => {
      if (typeof part === 'string') return part;
      if (this._values?.[part.slot] !== undefined) {
        return html`<span class="figure" data-figure=${part.slot}>${this._values[part.slot]}</span>`;
      }
      if (this._failed?.[part.slot]) return html`<span class="figure" data-figure=${part.slot}>(unavailable)</span>`;
      return html`<span class="pending" role="status" aria-label="Loading a figure">000</span>`;
    });
    return html`<p class=${this.props.tone === 'muted' ? 'muted' : ''} data-answer>${parts}</p>
      ${this.captions.own(this.captionTexts()).map(captionLine)}`;
  }
}

class TMetric extends ResourceElement {
  static styles = [shared, css`figure { margin: 0; } .label { color: #3d4550; }
    .value { font-size: 2rem; font-weight: 650; min-height: 2.5rem; font-variant-numeric: tabular-nums; }`];
  firstOffset() { return this.props.row || 0; }
  windowSize() { return 1; }
  render() {
    const own = this.caption();
    const window = this._window;
    const column = window?.columns?.indexOf(this.props.column) ?? -1;
    const value = window && column >= 0 && window.rows[0] ? window.rows[0][column] : undefined;
    return html`<figure><div class="label">${this.props.label}</div>
      ${this.status()}${window ? html`<div class="value" data-value=${String(value)}>
        ${formatValue(value, this.format(this.props.column))}</div>` : nothing}
      ${own.length ? html`<figcaption>${own}</figcaption>` : nothing}</figure>`;
  }
}

class TDataTable extends ResourceElement {
  static styles = [shared, css`.pager { display: flex; gap: 0.5rem; align-items: center; margin-top: 0.5rem; }
    .frame { min-height: 8rem; overflow-x: auto; }`];
  windowSize() { return this.props.page_size || 25; }
  render() {
    const descriptor = this.descriptor;
    const window = this._window;
    const columns = window?.columns || this.props.columns || [];
    const total = window?.totalRows ?? descriptor?.rowCount ?? 0;
    const offset = window?.offset ?? 0;
    const size = this.windowSize();
    // (a window asked for a CSV may hold more rows than a page: the page shows its own)
    return html`<div class="frame">${this.status()}
      ${window ? html`${this.tools()}${this.rowsTable(columns, window.rows.slice(0, size), this.props.title)}
      <div class="pager">
        <button ?disabled=${offset === 0 || this._loading} @click=${() => this.fetchWindow(Math.max(0, offset - size))}
          aria-label="Previous page">Previous</button>
        <span role="status">Rows ${total ? (offset + 1).toLocaleString() : 0}–${
          Math.min(offset + size, total).toLocaleString()} of ${total.toLocaleString()}${
          descriptor?.truncated ? ' (capped)' : ''}</span>
        <button ?disabled=${offset + size >= total || this._loading} @click=${() => this.fetchWindow(offset + size)}
          aria-label="Next page">Next</button>
      </div>` : nothing}${this.caption()}</div>`;
  }
}

class TChart extends ResourceElement {
  static properties = { _view: { state: true }, _spec: { state: true } };
  static styles = [shared, css`.chart { width: 100%; height: 320px; } h3 { margin: 0 0 0.5rem; font-size: 1.05rem; }
    .table { overflow-x: auto; max-height: 24rem; overflow-y: auto; }`];
  windowSize() { return Math.min(this.descriptor?.rowCount || MAX_CHART_ROWS, MAX_CHART_ROWS); }
  // The spec drawn: the one the person chose among the types the result allows, else the proposal's.
  spec() { return this._spec || this.props.spec || {}; }
  rebound() {
    this._spec = undefined;
    this._view = undefined;
    this._drawn = undefined;
  }
  // Drawing a chart takes tens of milliseconds: it waits until the frame with the rest of the answer has been
  // painted (the next frame, then a task), so words and figures are on screen first.
  updated() {
    if (!this._drawn || this._drawing || this._view === 'table') return;
    this._drawing = requestAnimationFrame(() => setTimeout(() => {
      this._drawing = 0;
      const target = this.renderRoot.querySelector('.chart');
      if (!this._drawn || !target || !this.isConnected || this._view === 'table') return;
      if (!this._chart) {
        this._chart = initChart(target, null, { renderer: 'svg' });
        // A bar, a slice or a point asks about its own value.
        this._chart.on('click', ({ dataIndex }) => this.drill(this._drawn?.questions[dataIndex]));
      }
      this._chart.setOption(this._drawn.option, true);
      this._chart.resize();  // (its height follows its labels; it may have been hidden behind the table)
      this.dataset.drawn = String(this._drawn.points);
    }, 0));
  }
  connectedCallback() {
    super.connectedCallback();
    // A phone turned, a window narrowed: drawn again at the new width (long labels may have to lie down).
    this._resizes = new ResizeObserver(() => {
      const width = Math.round(this.getBoundingClientRect().width);
      const before = this._width;
      this._width = width;
      if (!before || Math.abs(width - before) < 8 || !this._drawn) return;
      this._drawn = undefined;
      this.requestUpdate();
    });
    this._resizes.observe(this);
  }
  disconnectedCallback() {
    super.disconnectedCallback();
    this._resizes?.disconnect();
    cancelAnimationFrame(this._drawing);
    this._drawing = 0;
    this._chart?.dispose();
    this._chart = null;
  }
  willUpdate(changed) {
    super.willUpdate(changed);
    if (changed.has('_window') || changed.has('_spec') || !this._drawn) {
      this._drawn = this._window ? chartOption({ ...this.props, spec: this.spec() }, this._window, this.descriptor,
        this.getBoundingClientRect().width || undefined) : undefined;
    }
  }
  // Chart or table, and the chart types this result can be drawn as (its contract's recipes that fit it).
  viewTools() {
    const table = this._view === 'table';
    const types = chartTypes(this.props.spec || {}, chartRecipes, this.descriptor?.columns || []);
    const chosen = types.findIndex((t) => t.recipe === this.spec().recipe);
    const view = (name) => () => { this._view = name; };
    return html`<button type="button" aria-pressed=${String(!table)} @click=${view('chart')}>Chart</button>
      <button type="button" aria-pressed=${String(table)} @click=${view('table')}>Table</button>
      ${types.length > 1 && !table ? html`<label>Chart type <select @change=${(e) => {
        this._spec = types[Number(e.target.value)];
      }}>${types.map((t, i) => html`<option value=${i} ?selected=${i === chosen}>${CHART_NAMES[t.recipe]}</option>`)}
      </select></label>` : nothing}`;
  }
  render() {
    const drawn = this._drawn;
    const table = this._view === 'table';
    return html`${this.props.title ? html`<h3>${this.props.title}</h3>` : nothing}${this.status()}
      ${this._window ? this.tools(this.viewTools()) : nothing}
      <div class="chart" role="img" aria-label=${drawn?.words || this.props.title || 'Chart'}
        data-points=${drawn ? drawn.points : nothing} ?hidden=${!this._window || table}
        style=${styleMap({ height: drawn?.height ? `${drawn.height}px` : null })}></div>
      ${table && this._window ? html`<div class="table">${this.rowsTable(this._window.columns, this._window.rows,
        '')}</div>` : nothing}
      ${drawn?.note && !table ? html`<p class="cap-note" data-cap-note>${drawn.note}</p>` : nothing}${this.caption()}`;
  }
}

// Where the figures come from, behind Details; what was computed only where it differs from the answer's caption.
class TEvidenceNote extends TesseraElement {
  static showsCaptions = true;
  static styles = [shared, css`details { font-size: 0.85rem; color: #3d4550; } summary { cursor: pointer; }
    code { font-size: 0.8rem; } p { margin: 0.25rem 0 0; }`];
  render() {
    const e = this.props.evidence;
    if (!e) return html`<div class="skeleton" style=${styleMap({ 'min-height': '1.5rem' })} aria-hidden="true"></div>`;
    const when = new Date(e.observedAt).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
    const rows = Number(e.rowCount);
    return html`<div role="note" data-evidence>${this.captions.own([e.computed]).map(captionLine)}
      <details><summary>Where these figures come from</summary>
        <p>Read from the warehouse on ${when}: ${rows.toLocaleString()} result ${rows === 1 ? 'row' : 'rows'} in ${
          Math.max(1, Math.round(e.elapsedMs)).toLocaleString()} ms.</p>
        <p>Query fingerprint <code>${e.queryFingerprint}</code>; catalog <code>${e.catalogFingerprint}</code>.</p>
      </details></div>`;
  }
}

const ENDED = { succeeded: 'Done', rejected: 'Rejected: nothing was changed', expired: 'Expired: nothing was changed',
  failed: 'Failed', cancelled: 'Cancelled' };

class TActionButton extends TesseraElement {
  static properties = { _state: { state: true } };

  connectedCallback() {
    super.connectedCallback();
    // How the request this button made ended (a decision here, in another tab or at the CLI).
    this._onReceipt = (event) => {
      const receipt = event.detail || {};
      if (!this._intent || receipt.intent_id !== this._intent) return;
      const status = statusInWords(receipt.status);
      if (ENDED[status]) this._state = ENDED[status];
    };
    document.addEventListener('receipt', this._onReceipt);
  }

  disconnectedCallback() {
    super.disconnectedCallback();
    document.removeEventListener('receipt', this._onReceipt);
  }

  static styles = [shared, css`.danger { border-color: #8a1c1c; color: #8a1c1c; }
    .primary { background: #1d232b; color: #fff; } .status { margin-left: 0.5rem; }`];
  press() {
    this._state = 'Sending…';
    this.act('action-trigger', { action: this.props.action, input: this.props.input || {} });
  }
  answered({ action, reply, error }) {
    if (action.name !== 'action-trigger') return;
    if (error) {
      this._state = `Not sent (${error.reason || error.message})`;
      return;
    }
    const status = statusInWords(reply.receipt?.status);
    this._state = status === 'awaiting approval' ? 'Waiting for approval' : status;
    this._intent = reply.receipt?.intent_id;
  }
  render() {
    return html`<button class=${this.props.variant || 'secondary'} @click=${this.press}
      ?disabled=${this._state === 'Sending…'}>${this.props.label}</button>
      <span class="status" role="status">${this._state || ''}</span>`;
  }
}

// The state it is bound to is written by the host, on a `state-write` of the chosen option's value.
class TFilterSelect extends TesseraElement {
  static properties = { _error: { state: true } };
  choose(event) {
    const option = (this.props.options || [])[Number(event.target.value)];
    this.act('state-write', { state: this.boundId('state'), value: option.value });
  }
  answered({ action, error }) {
    if (action.name === 'state-write') this._error = error ? `Not applied (${error.reason || error.message})` : '';
  }
  render() {
    const id = `select-${this.nodeId}`;
    return html`<label for=${id}>${this.props.label}</label>
      <select id=${id} @change=${this.choose}>${(this.props.options || []).map((o, i) => html`
        <option value=${i}>${o.label}</option>`)}</select>
      ${this._error ? html`<span class="error" role="alert">${this._error}</span>` : nothing}`;
  }
}

class TPlaceholder extends TesseraElement {
  static styles = [shared, css`div { border: 1px dashed #8a5a00; border-radius: 6px; padding: 0.75rem;
    background: #fdf6e7; min-height: 2.5rem; }`];
  firstUpdated() {
    report('placeholder-shown', `${this.nodeId}: ${this.props.code || ''} ${this.props.reason || ''}`);
  }
  render() {
    return html`<div role="note" class="placeholder">Couldn't display one element.
      ${this.props.reason ? html`<br><small>${this.props.reason}</small>` : nothing}</div>`;
  }
}

const implementations = [
  ['Column', 'tessera-column', TColumn], ['Row', 'tessera-row', TRow], ['Card', 'tessera-card', TCard],
  ['Tabs', 'tessera-tabs', TTabs], ['Divider', 'tessera-divider', TDivider], ['Heading', 'tessera-heading', THeading],
  ['Text', 'tessera-text', TText], ['FigureText', 'tessera-figure-text', TFigureText],
  ['Callout', 'tessera-callout', TCallout], ['Metric', 'tessera-metric', TMetric],
  ['DataTable', 'tessera-data-table', TDataTable], ['Chart', 'tessera-chart', TChart],
  ['EvidenceNote', 'tessera-evidence-note', TEvidenceNote], ['ActionButton', 'tessera-action-button', TActionButton],
  ['FilterSelect', 'tessera-filter-select', TFilterSelect], ['Placeholder', 'tessera-placeholder', TPlaceholder],
];

for (const [name, tag, element] of implementations) {
  element.prototype.api = { name, schema: componentSchemas[name] };
  if (!customElements.get(tag)) customElements.define(tag, element);
}

export const catalog = new Catalog(CATALOG_ID, implementations.map(([name, tagName]) => ({ name, tagName,
  schema: componentSchemas[name] })), []);
