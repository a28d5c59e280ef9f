// The approval card (§8), in plain words: what approving does and what it risks ("Changes data"), each change
// (a before/after diff), a warning when the run read outside text, flags with each snippet and its source,
// up to three reads the run made before asking (flagged first), the internal names behind Details,
// a reason field, a countdown to expiry, and Reject focused by default. A click is one decision: it gets one
// decision id, kept on every retry while the broker is unreachable, so a decision that went through unseen is
// answered with its outcome; if someone (another tab, the CLI) decided first, the card says how it ended.
// Every decision is signed by the person's passkey over a nonce from the broker, which verifies it.

import { LitElement, html, css, nothing } from 'lit';
import { getJson, newId, postJsonRetrying, retryable } from './api.js';
import { reasonInWords, statusInWords } from './format.js';
import { passkeysSupported, signDecision } from './passkeys.js';
import { RISK_WORDS, decidedWords, readOutsideText, readWords } from './approval-words.js';

// What each intent does, in words, from the cards loaded so far (receipts on the stream carry only ids).
export const titles = new Map();

// A before/after value as a person reads it: text without JSON quotes, null as "(empty)".
function plain(json) {
  try {
    const value = JSON.parse(json);
    if (value === null || value === '') return '(empty)';
    return typeof value === 'string' ? value : JSON.stringify(value);
  } catch { return json; }
}

export class ApprovalCard extends LitElement {
  static properties = { approvalId: { attribute: 'approval-id' }, _card: { state: true }, _error: { state: true },
    _left: { state: true }, _busy: { state: true }, _outcome: { state: true }, _note: { state: true } };

  static styles = css`
    :host { display: block; border: 2px solid #1d232b; border-radius: 10px; padding: 1rem; background: #fff; }
    h3 { margin: 0 0 0.25rem; font-size: 1.1rem; } .what { margin: 0 0 0.5rem; color: #3d4550; }
    .badge { display: inline-block; padding: 0.1rem 0.5rem; border-radius: 999px; font-size: 0.85rem;
      border: 1px solid currentColor; margin-left: 0.5rem; }
    .mutate { color: #8a1c1c; } .read { color: #1b6b3a; }
    .chip { display: inline-block; margin: 0.2rem 0.3rem 0.2rem 0; padding: 0.15rem 0.55rem; border-radius: 999px;
      background: #fdf6e7; border: 1px solid #8a5a00; color: #5c3c00; font-size: 0.85rem; }
    .chip.tainted { display: block; border-radius: 6px; background: #eef0f3; border-color: #5b6470;
      color: #1d232b; }
    .technical { margin-top: 0.5rem; font-size: 0.85rem; color: #3d4550; } dd { margin: 0 0 0.25rem 1rem; }
    table { border-collapse: collapse; margin: 0.5rem 0; } th, td { padding: 0.25rem 0.5rem; text-align: left;
      border-bottom: 1px solid #dde1e6; }
    del { color: #8a1c1c; } ins { color: #1b6b3a; text-decoration: none; font-weight: 600; }
    pre { background: #f4f5f7; padding: 0.5rem; overflow-x: auto; max-height: 12rem; }
    .reads li { margin-bottom: 0.4rem; } .reads q { color: #4a525c; }
    label { display: block; margin-top: 0.5rem; } textarea { width: 100%; min-height: 3rem; font: inherit; }
    .actions { display: flex; gap: 0.5rem; margin-top: 0.75rem; align-items: center; }
    button { font: inherit; padding: 0.4rem 1rem; border-radius: 6px; border: 1px solid #5b6470; background: #fff;
      color: #1d232b; cursor: pointer; }
    button.approve { background: #1b6b3a; color: #fff; border-color: #1b6b3a; }
    button:focus-visible, textarea:focus-visible { outline: 3px solid #1f5fbf; outline-offset: 2px; }
    .error { color: #8a1c1c; } .note { color: #4a525c; }
  `;

  connectedCallback() {
    super.connectedCallback();
    this.load();
    this._timer = setInterval(() => this.tick(), 1000);
  }

  disconnectedCallback() { super.disconnectedCallback(); clearInterval(this._timer); }

  async load() {
    try {
      this._card = await getJson(`/api/approvals/${encodeURIComponent(this.approvalId)}`);
      const { intent_id: intentId, title, status } = this._card.summary || {};
      if (intentId && title) titles.set(intentId, title);
      if (status && status !== 'INTENT_STATUS_AWAITING_APPROVAL' && !this._outcome) {
        // Decided before this page showed it (a reload, another tab): it belongs with the decided ones.
        this.dispatchEvent(new CustomEvent('found-decided', { bubbles: true, composed: true }));
      }
      this.tick();
      await this.updateComplete;
      if (this.hasAttribute('focus-on-open')) this.focusDefault();
    } catch (error) {
      this._error = `Could not load this approval (${error.reason || error.message}).`;
    }
  }

  // The safe choice is the default — for a card the person just caused, and never by taking the
  // focus away from something they are typing in. Before the card has loaded, it waits for it.
  focusDefault() {
    this.setAttribute('focus-on-open', '');
    const typing = ['INPUT', 'TEXTAREA', 'SELECT'].includes(document.activeElement?.tagName);
    if (!typing) this.renderRoot?.querySelector('button.reject')?.focus();
  }

  tick() {
    const expires = this._card?.summary?.expires_at;
    if (!expires) return;
    this._left = Math.max(0, Math.round((Date.parse(expires) - Date.now()) / 1000));
    if (this._left === 0 && !this._outcome) {  // expiry counts as rejection: show what the broker recorded
      clearInterval(this._timer);
      setTimeout(() => this.load(), 1500);
    }
  }

  // Signs with the person's passkey: the broker gives a nonce, the authenticator signs this exact decision.
  // Without a passkey, approving is not possible (the card says how to get one); rejecting still is.
  async signed(body) {
    const url = `/api/approvals/${encodeURIComponent(this.approvalId)}/challenge`;
    const begun = await postJsonRetrying(url, {});
    if (!begun.credential_ids?.length) {
      if (body.approve) throw Object.assign(new Error(begun.enroll_hint), { reason: 'PASSKEY_NEEDED', hint: true });
      return body;  // an unsigned rejection: it runs nothing
    }
    if (!passkeysSupported()) throw Object.assign(new Error('This browser cannot use passkeys.'), { hint: true });
    this._note = 'Confirm with your passkey…';
    try {
      const passkey = await signDecision(begun, this.approvalId, body.arguments_sha256, body.approve, [], body.reason);
      return { ...body, nonce: begun.nonce, passkey };
    } catch (error) {
      if (error.name === 'NotAllowedError') {
        throw Object.assign(new Error('No passkey confirmed the decision (cancelled, timed out, or none of your passkeys is on this device); nothing was decided.'),
          { hint: true });
      }
      throw error;
    } finally {
      this._note = '';
    }
  }

  async decide(approve) {
    this._busy = true;
    this._error = '';
    try {
      const unsigned = { approve, decision_id: newId('web'), arguments_sha256: this._card.arguments_sha256,
        reason: this.renderRoot.querySelector('textarea')?.value || '' };
      const body = await this.signed(unsigned);
      const reply = await postJsonRetrying(`/api/approvals/${encodeURIComponent(this.approvalId)}/decision`, body,
        (attempt, attempts) => { this._note = `The broker is not answering; trying again (${attempt} of ${attempts})…`; });
      await this.settle(reply.receipt, reply.replayed ? 'your decision had gone through; this is its outcome' : '');
    } catch (error) {
      const outcome = error.body?.outcome;
      if (outcome?.approval_state) {  // decided already (elsewhere, or by a click whose answer was lost)
        await this.settle({ intent_id: outcome.intent_id, action_id: this._card.summary.tool_id,
          approval_id: this.approvalId, status: outcome.intent_status, reason: outcome.intent_reason }, decidedBefore(outcome));
      } else if (error.hint) {  // no passkey, or it did not confirm: nothing was sent
        this._error = error.message;
      } else if (retryable(error)) {  // still no answer: show what the broker has recorded, if it can say
        this._note = '';
        this._error = 'The broker did not answer; your decision may have been recorded. The card shows the latest state.';
        await this.load();
      } else {
        this._error = `The decision was not accepted (${error.reason || error.message}).`;
      }
    } finally {
      this._busy = false;
    }
  }

  async settle(receipt, note) {
    this._outcome = receipt;
    this._note = note;
    clearInterval(this._timer);
    this.dispatchEvent(new CustomEvent('decided', { detail: { ...receipt, title: this._card?.summary?.title },
      bubbles: true, composed: true }));
    await this.updateComplete;
    this.renderRoot.querySelector('.receipt')?.focus();  // focus stays in the card, on the outcome
  }

  render() {
    if (this._error && !this._card) return html`<p class="error" role="alert">${this._error}</p>`;
    const card = this._card;
    if (!card) return html`<p role="status">Loading the approval…</p>`;
    const risk = (card.summary.risk || '').replace('TOOL_RISK_', '').toLowerCase();
    const reads = card.recent_reads || [];
    const args = JSON.parse(card.arguments_json || '{}');
    const minutes = Math.floor((this._left ?? 0) / 60);
    const seconds = String((this._left ?? 0) % 60).padStart(2, '0');
    const decided = this._outcome || !['INTENT_STATUS_AWAITING_APPROVAL', undefined].includes(card.summary.status);
    return html`
      <h3 id="title">${card.summary.title || card.summary.tool_id}</h3>
      <p class="what">${decided ? 'Decided' : 'Approve this?'} <span class="badge ${risk}">${RISK_WORDS[risk] || risk}</span>
        ${card.dry_run ? html`<span class="badge">a trial run: nothing is changed</span>` : nothing}</p>
      ${readOutsideText(card) ? html`<p class="chip tainted">Before asking, this run read text it did not write
        (listed below). Make sure this request is what you wanted, not something that text asked for.</p>` : nothing}
      ${card.drifted_tools?.length ? html`<p class="chip flag" role="alert">Since it was reviewed, this tool's server
        changed ${card.drifted_tools.join(', ')}: it is not the server that was reviewed, and approving will not
        run this.</p>` : nothing}
      ${(card.matches || []).map((m) => html`<span class="chip flag" title=${m.snippet}>looks like instructions
        (${m.rule}): “${m.snippet}” — ${m.source}, ${m.ref}</span>`)}
      ${card.changes?.length ? html`<table><caption>Changes</caption><thead><tr><th scope="col">record</th>
        <th scope="col">change</th></tr></thead>
        <tbody>${card.changes.map((c) => html`<tr data-entry=${c.entry_id}><td>${c.record || c.entry_id}</td>
          <td>${c.field ? `${c.field}: ` : ''}<del>${plain(c.before_json)}</del> → <ins>${plain(c.after_json)}</ins></td>
          </tr>`)}</tbody></table>`
        : html`<p>With:</p><pre>${JSON.stringify(args.arguments ?? args, null, 2)}</pre>`}
      ${reads.length ? html`<details><summary>What this run read before asking (${reads.length === 1 ? 'one read'
        : `${reads.length} reads`}: flagged ones first)</summary>
        <ul class="reads">${reads.map((r) => html`<li><strong>${readWords(r)}</strong> (${r.ref}):
          <q>${(r.text || '').slice(0, 200)}</q></li>`)}</ul></details>` : nothing}
      <details class="technical"><summary>Details</summary><dl>
        <dt>Action</dt><dd><code>${card.summary.tool_id}</code></dd>
        ${card.changes?.length ? html`<dt>Checked against</dt><dd>${card.changes.map((c) => html`<span>
          ${c.record || c.entry_id}: version ${c.record_version} (if it changed since, nothing is done) </span>`)}</dd>`
          : nothing}
        <dt>Arguments fingerprint (SHA-256)</dt><dd><code>${card.arguments_sha256}</code></dd></dl></details>
      ${decided ? html`<p role="status" class="receipt" tabindex="-1">Receipt: ${statusInWords(this._outcome?.status || card.summary.status)}${
        reasonInWords(this._outcome?.reason) ? ` (${reasonInWords(this._outcome.reason)})` : ''}${
        this._note ? ` — ${this._note}` : ''}</p>
        ${!this._outcome && decidedWords(card) ? html`<p class="note">${decidedWords(card)}</p>` : nothing}` : html`
        <label>Reason (kept in the audit trail)<textarea maxlength="2000"></textarea></label>
        <div class="actions">
          <button class="reject" ?disabled=${this._busy || this._left === 0} @click=${() => this.decide(false)}>
            Reject</button>
          <button class="approve" ?disabled=${this._busy || this._left === 0} @click=${() => this.decide(true)}>
            Approve</button>
          <span role="timer" aria-live="off">expires in ${minutes}:${seconds}</span>
        </div>`}
      ${!decided && this._note ? html`<p class="note" role="status">${this._note}</p>` : nothing}
      ${this._error ? html`<p class="error" role="alert">${this._error}</p>` : nothing}`;
  }
}

// "already approved by local-user at 2026-…": how an approval ended before this click's decision arrived.
function decidedBefore(outcome) {
  const who = outcome.decided_by ? ` by ${outcome.decided_by}` : '';
  const when = outcome.decided_at ? ` at ${new Date(outcome.decided_at).toLocaleString()}` : '';
  return `already ${outcome.approval_state}${who}${when}`;
}

if (!customElements.get('tessera-approval-card')) customElements.define('tessera-approval-card', ApprovalCard);
