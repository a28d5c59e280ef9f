// The tessera.data/v1 catalog as Lit elements for the A2UI v0.9 renderer.
//
// Props arrive as the compiler wrote them (already validated against the contracts); bound
// props are data-model paths: a resource's descriptor at /resources/<id>, its rows — fetched
// per node through `resource-window` commands under host grants — at /resources/<id>/window.
// Rows never come from anywhere else.

import { html, css, nothing } from 'lit';
import { z } from 'zod';
import { A2uiLitElement, Catalog } from '@a2ui/web_core/v0_9';
import { use as useECharts, init as initChart } from 'echarts/core';
import { BarChart, LineChart, ScatterChart, PieChart, HeatmapChart } from 'echarts/charts';
import { GridComponent, TooltipComponent, LegendComponent, AriaComponent, VisualMapComponent } from 'echarts/components';
import { SVGRenderer } from 'echarts/renderers';
import { postJson, commandId, report } from './api.js';

useECharts([BarChart, LineChart, ScatterChart, PieChart, HeatmapChart, GridComponent, TooltipComponent,
  LegendComponent, AriaComponent, VisualMapComponent, SVGRenderer]);

export const CATALOG_ID = 'https://tessera.dev/catalogs/tessera.data/v1/catalog.json';
export const surfaceState = { revisionId: '', onAction: () => {} };
const MAX_CHART_ROWS = 1000;

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
`;

// Every component: raw props, data-model reads with subscriptions, children or their skeleton.
class TesseraElement extends A2uiLitElement {
  static styles = shared;

  get props() { return this.context?.componentModel?.properties ?? {}; }
  get nodeId() { return this.context?.componentModel?.id ?? ''; }
  get model() { return this.context.dataContext.dataModel; }

  watch(path, onChange) {
    this._subscriptions = this._subscriptions || [];
    const subscription = this.model.subscribe(path, onChange);
    this._subscriptions.push(subscription);
    return subscription.value;
  }

  disconnectedCallback() {
    super.disconnectedCallback();
    for (const s of this._subscriptions || []) s.unsubscribe?.();
    this._subscriptions = [];
  }

  // A child that has not arrived yet keeps its place with a fixed minimum height: no layout jump.
  child(id) {
    if (!this.context.surfaceComponents.get(id)) return html`<div class="skeleton" aria-hidden="true"></div>`;
    return this.renderNode(id);
  }

  children() { return (this.props.children || []).map((id) => this.child(id)); }
}

// A bound resource: its descriptor, and the rows of the window this node asked for.
class ResourceElement extends TesseraElement {
  static properties = { _window: { state: true }, _loading: { state: true }, _error: { state: true } };

  get resourcePath() { return this.props.resource?.path || ''; }
  get descriptor() { return this.resourcePath ? this.model.get(this.resourcePath) : undefined; }

  connectedCallback() {
    super.connectedCallback();
    queueMicrotask(() => this.start());
  }

  // The renderer may reuse this element for another node (e.g. switching tabs): start over for it.
  willUpdate(changed) {
    super.willUpdate(changed);
    const bound = `${this.nodeId}|${this.resourcePath}`;
    if (this._started && this._bound !== bound) {
      for (const s of this._subscriptions || []) s.unsubscribe?.();
      this._subscriptions = [];
      this._started = false;
      this._window = undefined;
      this._error = '';
      queueMicrotask(() => this.start());
    }
  }

  start() {
    if (this._started || !this.resourcePath) return;
    this._started = true;
    this._bound = `${this.nodeId}|${this.resourcePath}`;
    this.watch(`${this.resourcePath}/window`, (window) => {
      if (window && window.node === this.nodeId && window.offset === this._asked) {
        this._window = window;
        this._loading = false;
      }
    });
    this.watch(this.resourcePath, () => this.requestUpdate());
    this.fetchWindow(this.firstOffset());
  }

  firstOffset() { return 0; }
  windowSize() { return 25; }

  async fetchWindow(offset) {
    this._asked = offset;
    this._loading = true;
    this._error = '';
    try {
      await postJson('/api/commands', {
        command_id: commandId('window'), revision_id: surfaceState.revisionId,
        resource_window: { node_id: this.nodeId, offset, limit: this.windowSize() },
      });
    } catch (error) {
      this._loading = false;
      this._error = `Could not load rows (${error.reason || error.message}).`;
      report('window-failed', `${this.nodeId}: ${error.reason}`);
    }
  }

  status() {
    if (this._error) {
      return html`<p class="error" role="alert">${this._error}
        <button @click=${() => this.fetchWindow(this._asked || 0)}>Retry</button></p>`;
    }
    if (this._loading && !this._window) return html`<div class="skeleton" role="status" aria-label="Loading"></div>`;
    return nothing;
  }
}

function columnLabel(descriptor, id) {
  return descriptor?.columns?.find((c) => c.id === id)?.label || id;
}

const MIDNIGHT = /^(\d{4}-\d{2}-\d{2})T00:00:00$/;

function formatValue(value, format) {
  if (value === null || value === undefined) return '—';
  if (typeof value === 'string' && MIDNIGHT.test(value)) return value.slice(0, 10);  // a date grain, not a time
  if (typeof value !== 'number') return String(value);
  if (format === 'percent') return `${(value * 100).toLocaleString(undefined, { maximumFractionDigits: 1 })}%`;
  if (format === 'currency') return value.toLocaleString(undefined, { style: 'currency', currency: 'USD' });
  return value.toLocaleString(undefined, { maximumFractionDigits: 2 });
}

class TColumn extends TesseraElement {
  static styles = [shared, css`.stack { display: flex; flex-direction: column; gap: var(--gap, 1rem); }`];
  render() {
    const gap = { none: '0', small: '0.5rem', medium: '1rem', large: '1.75rem' }[this.props.gap] || '1rem';
    return html`<div class="stack" style="--gap:${gap}">${this.children()}</div>`;
  }
}

class TRow extends TesseraElement {
  static styles = [shared, css`.row { display: flex; flex-wrap: wrap; gap: var(--gap, 1rem); }
    .row > * { flex: 1 1 16rem; min-width: 0; }`];
  render() {
    const gap = { none: '0', small: '0.5rem', medium: '1rem', large: '1.75rem' }[this.props.gap] || '1rem';
    return html`<div class="row" style="--gap:${gap}; align-items:${this.props.align || 'stretch'}">${this.children()}</div>`;
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
  render() { return html`<hr style="border:0;border-top:1px solid #c9ced6">`; }
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
    return html`<p style="margin:0;${this.props.tone === 'muted' ? 'color:#4a525c' : ''}">${this.props.text}</p>`;
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

class TMetric extends ResourceElement {
  static styles = [shared, css`figure { margin: 0; } figcaption { color: #4a525c; }
    .value { font-size: 2rem; font-weight: 650; min-height: 2.5rem; }`];
  firstOffset() { return this.props.row || 0; }
  windowSize() { return 1; }
  render() {
    const window = this._window;
    const column = window?.columns?.indexOf(this.props.column) ?? -1;
    const value = window && column >= 0 && window.rows[0] ? window.rows[0][column] : undefined;
    return html`<figure><figcaption>${this.props.label}</figcaption>
      ${this.status()}${window ? html`<div class="value" data-value=${String(value)}>
        ${formatValue(value, this.props.format)}</div>` : nothing}</figure>`;
  }
}

class TDataTable extends ResourceElement {
  static styles = [shared, css`table { border-collapse: collapse; width: 100%; }
    caption { text-align: left; font-weight: 600; margin-bottom: 0.4rem; }
    th, td { padding: 0.35rem 0.6rem; border-bottom: 1px solid #dde1e6; text-align: left; }
    td.number { text-align: right; font-variant-numeric: tabular-nums; }
    .pager { display: flex; gap: 0.5rem; align-items: center; margin-top: 0.5rem; }
    .frame { min-height: 8rem; }`];
  windowSize() { return this.props.page_size || 25; }
  render() {
    const descriptor = this.descriptor;
    const window = this._window;
    const columns = window?.columns || this.props.columns || [];
    const total = window?.totalRows ?? descriptor?.rowCount ?? 0;
    const offset = window?.offset ?? 0;
    const size = this.windowSize();
    const numeric = columns.map((id) => ['number', 'integer', 'decimal'].includes(
      descriptor?.columns?.find((c) => c.id === id)?.type));
    return html`<div class="frame">${this.status()}
      ${window ? html`<table>
        ${this.props.title ? html`<caption>${this.props.title}</caption>` : nothing}
        <thead><tr>${columns.map((id) => html`<th scope="col">${columnLabel(descriptor, id)}</th>`)}</tr></thead>
        <tbody>${window.rows.map((row) => html`<tr>${row.map((cell, i) => html`
          <td class=${numeric[i] ? 'number' : ''}>${formatValue(cell)}</td>`)}</tr>`)}</tbody>
      </table>
      <div class="pager">
        <button ?disabled=${offset === 0 || this._loading} @click=${() => this.fetchWindow(Math.max(0, offset - size))}
          aria-label="Previous page">Previous</button>
        <span role="status">Rows ${total ? offset + 1 : 0}–${Math.min(offset + size, total)} of ${total}${
          descriptor?.truncated ? ' (capped)' : ''}</span>
        <button ?disabled=${offset + size >= total || this._loading} @click=${() => this.fetchWindow(offset + size)}
          aria-label="Next page">Next</button>
      </div>` : nothing}</div>`;
  }
}

class TChart extends ResourceElement {
  static styles = [shared, css`.chart { width: 100%; height: 320px; } h3 { margin: 0 0 0.5rem; font-size: 1.05rem; }`];
  windowSize() { return Math.min(this.descriptor?.rowCount || MAX_CHART_ROWS, MAX_CHART_ROWS); }
  updated() {
    const window = this._window;
    const target = this.renderRoot.querySelector('.chart');
    if (!window || !target) return;
    this._chart = this._chart || initChart(target, null, { renderer: 'svg' });
    this._chart.setOption(chartOption(this.props.spec || {}, window, this.descriptor, this.props.title), true);
  }
  disconnectedCallback() { super.disconnectedCallback(); this._chart?.dispose(); this._chart = null; }
  render() {
    const label = `${this.props.title || 'Chart'}${this._window ? `: ${this._window.rows.length} points` : ''}`;
    return html`${this.props.title ? html`<h3>${this.props.title}</h3>` : nothing}${this.status()}
      <div class="chart" role="img" aria-label=${label} ?hidden=${!this._window}></div>`;
  }
}

function chartOption(spec, window, descriptor, title) {
  const at = (id) => window.columns.indexOf(id);
  const rows = window.rows;
  const base = { aria: { enabled: true }, animation: false, tooltip: { trigger: 'axis' },
    grid: { left: 64, right: 24, top: 24, bottom: 48, containLabel: true } };
  if (spec.recipe === 'donut') {
    return { ...base, tooltip: { trigger: 'item' }, series: [{ type: 'pie', radius: ['45%', '70%'],
      data: rows.map((r) => ({ name: String(r[at(spec.category)]), value: r[at(spec.value)] })) }] };
  }
  const x = rows.map((r) => formatValue(r[at(spec.x)]));
  const ys = Array.isArray(spec.y) ? spec.y : [spec.y];
  if (spec.recipe === 'grouped_bar' || spec.recipe === 'stacked_bar') {
    const groups = [...new Set(rows.map((r) => String(r[at(spec.series)])))];
    const xs = [...new Set(x)];
    return { ...base, legend: {}, xAxis: { type: 'category', data: xs }, yAxis: { type: 'value' },
      series: groups.map((g) => ({ name: g, type: 'bar', stack: spec.recipe === 'stacked_bar' ? 'all' : undefined,
        data: xs.map((value) => rows.find((r) => String(r[at(spec.x)]) === value && String(r[at(spec.series)]) === g)
          ?.[at(spec.y)] ?? null) })) };
  }
  if (spec.recipe === 'scatter') {
    return { ...base, tooltip: { trigger: 'item' }, xAxis: { type: 'value', name: columnLabel(descriptor, spec.x) },
      yAxis: { type: 'value', name: columnLabel(descriptor, spec.y) },
      series: [{ type: 'scatter', data: rows.map((r) => [r[at(spec.x)], r[at(spec.y)]]) }] };
  }
  if (spec.recipe === 'heatmap') {
    const xs = [...new Set(rows.map((r) => String(r[at(spec.x)])))];
    const yv = [...new Set(rows.map((r) => String(r[at(spec.y)])))];
    const values = rows.map((r) => r[at(spec.value)]);
    return { ...base, tooltip: { trigger: 'item' }, xAxis: { type: 'category', data: xs },
      yAxis: { type: 'category', data: yv }, visualMap: { min: Math.min(...values), max: Math.max(...values) },
      series: [{ type: 'heatmap', data: rows.map((r) => [xs.indexOf(String(r[at(spec.x)])),
        yv.indexOf(String(r[at(spec.y)])), r[at(spec.value)]]) }] };
  }
  const type = spec.recipe === 'bar' ? 'bar' : 'line';
  return { ...base, legend: ys.length > 1 ? {} : undefined, xAxis: { type: 'category', data: x },
    yAxis: { type: 'value' }, series: ys.map((y) => ({ name: columnLabel(descriptor, y), type,
      areaStyle: spec.recipe === 'area' ? {} : undefined, data: rows.map((r) => r[at(y)]) })) };
}

class TEvidenceNote extends TesseraElement {
  static styles = [shared, css`p { margin: 0; color: #4a525c; font-size: 0.9rem; }`];
  connectedCallback() {
    super.connectedCallback();
    queueMicrotask(() => { if (this.props.evidence?.path) this.watch(this.props.evidence.path, () => this.requestUpdate()); });
  }
  render() {
    const e = this.props.evidence?.path ? this.model.get(this.props.evidence.path) : undefined;
    if (!e) return html`<div class="skeleton" style="min-height:1.5rem" aria-hidden="true"></div>`;
    const when = new Date(e.observedAt).toLocaleString();
    return html`<p role="note">${this.props.caption ? `${this.props.caption} ` : ''}Computed from ${
      e.rowCount.toLocaleString()} result rows at ${when} in ${e.elapsedMs} ms; query ${
      String(e.queryFingerprint).slice(0, 12)}, catalog ${String(e.catalogFingerprint).slice(0, 12)}.</p>`;
  }
}

class TActionButton extends TesseraElement {
  static properties = { _state: { state: true } };
  static styles = [shared, css`.danger { border-color: #8a1c1c; color: #8a1c1c; }
    .primary { background: #1d232b; color: #fff; } .status { margin-left: 0.5rem; }`];
  async press() {
    this._state = 'Sending…';
    try {
      const reply = await postJson('/api/commands', {
        command_id: commandId('press'), revision_id: surfaceState.revisionId,
        action_trigger: { node_id: this.nodeId, action_slice_id: this.props.action,
          input_json: JSON.stringify(this.props.input || {}) },
      });
      const status = (reply.receipt?.status || '').replace('INTENT_STATUS_', '').toLowerCase().replace('_', ' ');
      this._state = status === 'awaiting approval' ? 'Waiting for approval' : status;
      surfaceState.onAction(reply.receipt);
    } catch (error) {
      this._state = `Not sent (${error.reason || error.message})`;
    }
  }
  render() {
    return html`<button class=${this.props.variant || 'secondary'} @click=${this.press}
      ?disabled=${this._state === 'Sending…'}>${this.props.label}</button>
      <span class="status" role="status">${this._state || ''}</span>`;
  }
}

class TFilterSelect extends TesseraElement {
  static properties = { _error: { state: true } };
  async choose(event) {
    const option = (this.props.options || [])[Number(event.target.value)];
    try {
      await postJson('/api/commands', { command_id: commandId('state'), revision_id: surfaceState.revisionId,
        state_write: { state_slice_id: this.props.state, value_json: JSON.stringify(option.value) } });
      this._error = '';
    } catch (error) { this._error = `Not applied (${error.reason || error.message})`; }
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
  connectedCallback() {
    super.connectedCallback();
    queueMicrotask(() => report('placeholder-shown', `${this.nodeId}: ${this.props.code || ''} ${this.props.reason || ''}`));
  }
  render() {
    return html`<div role="note" class="placeholder">Couldn't display one element.
      ${this.props.reason ? html`<br><small>${this.props.reason}</small>` : nothing}</div>`;
  }
}

const permissive = z.object({}).passthrough();
const implementations = [
  ['Column', 'tessera-column', TColumn], ['Row', 'tessera-row', TRow], ['Card', 'tessera-card', TCard],
  ['Tabs', 'tessera-tabs', TTabs], ['Divider', 'tessera-divider', TDivider], ['Heading', 'tessera-heading', THeading],
  ['Text', 'tessera-text', TText], ['Callout', 'tessera-callout', TCallout], ['Metric', 'tessera-metric', TMetric],
  ['DataTable', 'tessera-data-table', TDataTable], ['Chart', 'tessera-chart', TChart],
  ['EvidenceNote', 'tessera-evidence-note', TEvidenceNote], ['ActionButton', 'tessera-action-button', TActionButton],
  ['FilterSelect', 'tessera-filter-select', TFilterSelect], ['Placeholder', 'tessera-placeholder', TPlaceholder],
];

for (const [name, tag, element] of implementations) {
  element.prototype.api = { name, schema: permissive };
  if (!customElements.get(tag)) customElements.define(tag, element);
}

export const catalog = new Catalog(CATALOG_ID, implementations.map(([name, tagName]) => ({ name, tagName,
  schema: permissive })), []);
