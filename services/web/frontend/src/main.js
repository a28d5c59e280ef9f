// The page: a question box with the turn's progress, the answer, the live surface, approvals and receipts.

import { getJson, postEvents, ApiError } from './api.js';
import { SurfaceView } from './surface.js';
import { surfaceState } from './components.js';
import './approval-card.js';

const $ = (id) => document.getElementById(id);
const STEP = { TOOL_STEP_STATUS_OK: 'done', TOOL_STEP_STATUS_FAILED: 'failed', TOOL_STEP_STATUS_UNAVAILABLE: 'unavailable',
  TOOL_STEP_STATUS_AWAITING_APPROVAL: 'waiting for approval', TOOL_STEP_STATUS_CANCELLED: 'cancelled' };
const shownApprovals = new Set();

function item(list, text, className = '') {
  const li = document.createElement('li');
  li.textContent = text;
  if (className) li.className = className;
  list.append(li);
  return li;
}

function showApproval(approvalId, caused = true) {
  if (!approvalId) return;
  if (shownApprovals.has(approvalId)) {  // e.g. the stream's event came before the press's reply
    if (caused) document.querySelector(`tessera-approval-card[approval-id="${CSS.escape(approvalId)}"]`)?.focusDefault();
    return;
  }
  shownApprovals.add(approvalId);
  const card = document.createElement('tessera-approval-card');
  card.setAttribute('approval-id', approvalId);
  if (caused) card.setAttribute('focus-on-open', '');  // opened by what the person just did
  card.setAttribute('role', 'region');
  card.setAttribute('aria-label', 'Approval request');
  $('approvals').append(card);
  $('approvals-section').hidden = false;
}

const shownReceipts = new Set();

function showReceipt(receipt, where = '') {
  if (!receipt) return;
  const key = `${receipt.intent_id}:${receipt.status}`;
  if (shownReceipts.has(key)) return;  // a replayed journal shows each outcome once
  shownReceipts.add(key);
  const status = (receipt.status || '').replace('INTENT_STATUS_', '').toLowerCase().replace(/_/g, ' ');
  $('receipts-section').hidden = false;
  item($('receipts'), `${receipt.action_id}${where}: ${status}${receipt.reason ? ` (${receipt.reason})` : ''}`,
    `receipt ${status.replace(/ /g, '-')}`);
}

async function refreshApprovals() {
  try {
    const listed = await getJson('/api/approvals');
    for (const approval of listed.approvals || []) showApproval(approval.approval_id, false);
  } catch { /* the list is a convenience: cards also arrive on the stream */ }
}

async function ask(event) {
  event.preventDefault();
  const question = $('question').value.trim();
  if (!question) return;
  $('ask-button').disabled = true;
  $('progress').replaceChildren();
  $('answer').textContent = '';
  $('answer').setAttribute('aria-live', 'off');  // not re-read on every streamed piece
  $('degraded').hidden = true;
  $('progress-section').hidden = false;
  const degraded = [];
  const running = new Map();
  let started = false;
  let finished = false;
  try {
    await postEvents('/api/ask', { question }, (e) => {
      if (e.started) { started = true; item($('progress'), 'Thinking…'); }
      if (e.tool_step) {
        const step = e.tool_step;
        if (step.phase === 'TOOL_STEP_PHASE_STARTED') running.set(step.call_id, item($('progress'), `${step.tool}…`));
        else {
          const li = running.get(step.call_id) || item($('progress'), step.tool);
          const status = STEP[step.status] || 'done';
          li.textContent = `${step.tool}: ${status}${step.summary ? ` — ${step.summary}` : ''}`;
          li.className = status.replace(/ /g, '-');
          if (step.approval_id) showApproval(step.approval_id);
        }
      }
      if (e.degraded) {
        degraded.push(`${e.degraded.tool} (${e.degraded.message})`);
        $('degraded').textContent = `Some tools were unavailable: ${degraded.join('; ')}.`;
        $('degraded').hidden = false;
      }
      if (e.error) item($('progress'), `Problem: ${e.error.message || e.error.reason}`, 'failed');
      if (e.answer_delta) $('answer').textContent += e.answer_delta.text;
      if (e.done) {
        finished = true;
        $('answer').setAttribute('aria-live', 'polite');  // announced once, complete
        $('answer').textContent = e.done.answer || $('answer').textContent;
        if (e.done.degraded && !degraded.length) {
          $('degraded').textContent = 'Some tools were unavailable for this answer.';
          $('degraded').hidden = false;
        }
      }
    });
    if (started && !finished) throw new Error('the stream ended early');
  } catch (error) {
    if (started && !finished) {
      // The turn lived on that connection and stopped with it (see WebApi.ask in api.py); what it
      // already showed stays on the surface, whose stream resumes on its own, on any web replica.
      item($('progress'), 'The connection to this question was lost, so it stopped. Anything it already '
        + 'showed stays on the surface; ask again to finish it.', 'failed');
    } else {
      const reason = error instanceof ApiError ? `${error.reason}: ${error.message}` : error.message;
      item($('progress'), `The question was not sent (${reason}).`, 'failed');
    }
  } finally {
    $('ask-button').disabled = false;
    refreshApprovals();
  }
}

async function start() {
  try {
    const session = await getJson('/api/session');
    $('who').textContent = `Signed in as ${session.name} · surface ${session.surface_id}`;
  } catch (error) {
    $('who').textContent = `Not connected (${error.reason || error.message}).`;
    return;
  }
  surfaceState.onAction = (receipt) => {
    if (receipt?.approval_id) showApproval(receipt.approval_id);
  };
  const view = new SurfaceView($('surface'), {
    onHostEvent(kind, event) {
      // From the stream (also replayed on every load): shown, but it does not take the focus.
      if (kind === 'approval_requested') showApproval(event.approval_id, false);
      if (kind === 'effect_receipt') showReceipt(event.receipt, event.node_id ? ` (${event.node_id})` : '');
      if (kind === 'rejected') item($('progress'), 'A display was refused; the last good one stays.', 'failed');
    },
    onRendered() { document.body.dataset.rendered = String(Date.now()); },
    onError(error) { $('degraded').textContent = `The live view stopped: ${error.message}`; $('degraded').hidden = false; },
    onConnection(open) {
      if (open && $('degraded').dataset.stream) { $('degraded').hidden = true; delete $('degraded').dataset.stream; }
      if (!open) {
        $('degraded').textContent = 'The live view lost its connection; reconnecting…';
        $('degraded').dataset.stream = 'lost';
        $('degraded').hidden = false;
      }
    },
    reopen: () => getJson('/api/session'),  // a new cookie if web forgot ours
  });
  view.connect();
  document.addEventListener('decided', (event) => showReceipt(event.detail));
  $('ask').addEventListener('submit', ask);
  refreshApprovals();
  document.body.dataset.ready = 'true';
}

start();
