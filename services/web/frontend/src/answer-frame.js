// The answer in an outside agent's chat (MCP Apps, extension io.modelcontextprotocol/ui): this page runs in
// the chat client's sandboxed frame, with no network of its own. It speaks JSON-RPC with the client over
// postMessage: the client hands it present_ui's result (a revision id, never rows), and relays its calls of
// the two tools only the app may use to Tessera's MCP front, which reads the person's surface from the host
// and sends what a block asks for as the host's command. It draws exactly one answer, the revision it was
// opened for: a newer answer is the newer frame's, so this one says so, and keeps its own (its blocks can
// still page through their rows, as an earlier answer's can in web).

import { SurfaceView } from './surface.js';
import { surfaceState } from './components.js';
import { send, sendCommandsWith } from './actions.js';

const READ_TOOL = 'read_answer';
const COMMAND_TOOL = 'send_answer_command';
const APPS_PROTOCOL = '2025-11-21';  // the MCP Apps revision this page speaks
const RETRY_MS = [1000, 2000, 5000, 10000, 30000];
const $ = (id) => document.getElementById(id);

// JSON-RPC 2.0 with the client that framed this page.
class ClientLink {
  constructor() {
    this.nextId = 1;
    this.pending = new Map();
    this.handlers = new Map();
    window.addEventListener('message', (event) => this.receive(event));
  }

  on(method, handler) { this.handlers.set(method, handler); }

  receive(event) {
    if (event.source !== window.parent) return;  // only the client that framed us speaks for the chat
    const message = event.data;
    if (!message || message.jsonrpc !== '2.0') return;
    if (message.method) {
      const handler = this.handlers.get(message.method);
      if (message.id !== undefined) this.post({ id: message.id, result: {} });  // requests are acknowledged
      handler?.(message.params || {});
      return;
    }
    const waiting = this.pending.get(message.id);
    if (!waiting) return;
    this.pending.delete(message.id);
    if (message.error) waiting.reject(Object.assign(new Error(message.error.message), { code: message.error.code }));
    else waiting.resolve(message.result);
  }

  post(message) { window.parent.postMessage({ jsonrpc: '2.0', ...message }, '*'); }

  request(method, params) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.post({ id, method, params });
    });
  }

  notify(method, params) { this.post({ method, params }); }
}

const link = new ClientLink();
let pinned = '';  // the revision this frame shows
let openUrl = '';  // Tessera's own page for this answer (approvals are signed there)
let stopped = false;

function status(text) {
  $('frame-status').textContent = text;
  $('frame-status').hidden = !text;
}

function notice(text, offerOpen = false) {
  $('frame-notice-text').textContent = text;
  $('frame-open').hidden = !offerOpen || !openUrl;
  $('frame-notice').hidden = !text;
}

// A tool of the front, through the client; a refusal becomes an error with its reason and words.
async function callTool(name, args) {
  const result = await link.request('tools/call', { name, arguments: args });
  const content = result?.structuredContent
    ?? JSON.parse(result?.content?.find((part) => part.type === 'text')?.text || '{}');
  if (result?.isError) {
    throw Object.assign(new Error(content.message || 'refused'), { reason: content.error || 'REFUSED' });
  }
  return content;
}

function approvalNeeded() {
  notice('This action needs your approval: approve it in Tessera, where your passkey signs it.', true);
}

const view = new SurfaceView($('surface'), {
  async onAction(action) {
    const { reply, error } = await send(action, surfaceState.revisionId);
    if (error) notice(`Not sent: ${error.message}`);
    else if (reply?.receipt?.approval_id) approvalNeeded();
  },
  onHostEvent(kind, event) {
    if (kind === 'approval_requested') approvalNeeded();
    if (kind === 'effect_receipt') notice(`Action ${String(event.receipt?.status || '').toLowerCase().replace(/_/g, ' ')}.`);
  },
  onRendered() { status(''); document.body.dataset.rendered = String(Date.now()); },
  onError(error) { notice(`The answer stopped updating: ${error.message}`); },
});
sendCommandsWith((command) => callTool(COMMAND_TOOL, { command }));
surfaceState.canDownload = false;  // the frame may not save files: the rows as CSV are in Tessera

// A value clicked (a bar, a row): its follow-up question goes to the chat as the person's message.
document.addEventListener('tessera-ask', (event) => {
  const { question } = event.detail;
  link.request('ui/message', { role: 'user', content: [{ type: 'text', text: question }] })
    .catch(() => notice(`Ask it in the chat: “${question}”`));
});

// One envelope of the journal, shown if it is this frame's: its revision's messages, and the host's events
// about it (an approval its button raised). A read from the start of the journal replays earlier answers and
// their events: skipped. A revision after ours is a newer answer: not drawn here.
let seenPinned = false;
function take(envelope) {
  if (envelope.kind !== 'a2ui') {
    if (envelope.revision_id === pinned || envelope.kind === 'snapshot_required') view.receive(envelope);
  } else if (envelope.revision_id && envelope.revision_id !== pinned) {
    if (seenPinned) replaced();
  } else {
    seenPinned = seenPinned || Boolean(envelope.revision_id);
    view.receive(envelope);
  }
}

let saidReplaced = false;
function replaced() {
  if (saidReplaced) return;
  saidReplaced = true;
  status('');
  notice('A newer answer replaced this one on your surface; it is in the newer frame, and in Tessera.', true);
}

async function follow() {
  let after = '';
  for (let failures = 0; !stopped;) {
    let read;
    try {
      read = await callTool(READ_TOOL, after ? { after } : {});
      failures = 0;
    } catch (error) {
      if (error.reason === 'CURSOR_INVALID') after = '';
      notice(`Reconnecting to Tessera (${error.message})…`);
      await new Promise((resolve) => { setTimeout(resolve, RETRY_MS[Math.min(failures, RETRY_MS.length - 1)]); });
      failures += 1;
      continue;
    }
    if ($('frame-notice-text').textContent.startsWith('Reconnecting')) notice('');
    read.envelopes.forEach(take);
    after = read.cursor || after;
    // Caught up with the journal (present_ui answered after the commit) and ours is not there: replaced.
    if (!read.more && !seenPinned) replaced();
  }
}

// present_ui's result: what this frame shows.
function opened(result) {
  const answer = result?.structuredContent
    ?? JSON.parse(result?.content?.find((part) => part.type === 'text')?.text || '{}');
  openUrl = answer.link || '';
  if (!answer.revision) {
    status(result?.isError ? `Tessera refused this display: ${answer.message || answer.error}.`
      : 'Tessera is preparing the answer; it appears in the next frame.');
    return;
  }
  if (pinned) return;  // one answer per frame
  pinned = answer.revision;
  status('Loading the answer…');
  follow();
}

$('frame-open').addEventListener('click', () => {
  link.request('ui/open-link', { url: openUrl }).catch(() => notice(`Open ${openUrl} to approve it.`));
});

link.on('ui/notifications/tool-result', opened);
link.on('ui/resource-teardown', () => { stopped = true; });
link.request('ui/initialize', {
  appInfo: { name: 'tessera-answer', version: '1' }, appCapabilities: {}, protocolVersion: APPS_PROTOCOL,
}).then(() => {
  link.notify('ui/notifications/initialized', {});
  // The client sizes the frame to the answer (the extension's size notifications, once initialized).
  new ResizeObserver(() => link.notify('ui/notifications/size-changed', {
    width: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight,
  })).observe(document.body);
}, (error) => status(`This chat client did not start the frame: ${error.message}`));
