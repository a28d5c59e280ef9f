// The answer in an outside agent's chat (MCP Apps, extension io.modelcontextprotocol/ui): this page runs in
// the chat client's sandboxed frame, with no network of its own. It speaks JSON-RPC with the client over
// postMessage: the client hands it present_ui's result (a revision id, never rows), and relays its calls of
// the two tools only the app may use to Tessera's MCP front, which reads the revision's part of the person's
// surface from the host and sends what a block asks for as the host's command. It draws exactly one answer,
// the revision it was opened for: a newer answer is the newer frame's, so this one says so, and keeps its
// own (its blocks can still page through their rows, as an earlier answer's can in web).

import { SurfaceView } from './surface.js';
import { surfaceState } from './components.js';
import { send, sendCommandsWith } from './actions.js';

const READ_TOOL = 'read_answer';
const COMMAND_TOOL = 'send_answer_command';
const APPS_PROTOCOL = '2025-11-21';  // the MCP Apps revision this page speaks
const RETRY_MS = [1000, 2000, 5000, 10000, 30000];
const CALL_TIMEOUT_MS = 60_000;  // a read waits at most 25 s at the front: a call without an answer by then is lost
// Refusals that asking again cannot change: the frame says so and stops following.
const FINAL = new Set(['PERSON_UNKNOWN', 'UNKNOWN_TOOL', 'REVISION_UNKNOWN']);
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
      if (message.id !== undefined) {  // a request: answered, or refused as unknown
        this.post(handler ? { id: message.id, result: {} }
          : { id: message.id, error: { code: -32601, message: `${message.method} is not handled here` } });
      }
      handler?.(message.params || {});
      return;
    }
    const waiting = this.pending.get(message.id);
    if (!waiting) return;
    this.pending.delete(message.id);
    clearTimeout(waiting.timer);
    if (message.error) waiting.reject(Object.assign(new Error(message.error.message), { code: message.error.code }));
    else waiting.resolve(message.result);
  }

  post(message) { window.parent.postMessage({ jsonrpc: '2.0', ...message }, '*'); }

  request(method, params) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error('the chat client did not answer'));
      }, CALL_TIMEOUT_MS);
      this.pending.set(id, { resolve, reject, timer });
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

// A tool result's JSON: its structured content, else its text when that is JSON.
function contentOf(result) {
  if (result?.structuredContent) return result.structuredContent;
  try {
    return JSON.parse(result?.content?.find((part) => part.type === 'text')?.text || '{}');
  } catch {
    return {};
  }
}

// A tool of the front, through the client; a refusal becomes an error with its reason and words.
async function callTool(name, args) {
  const result = await link.request('tools/call', { name, arguments: args });
  const content = contentOf(result);
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
    const { reply, error } = await send(action, pinned);
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

// A value clicked (a bar, a row): its follow-up is the person's to ask. Sent to the chat by itself, the value
// (a row's) would reach the outside model, which never sees rows; the person reads it and may ask it there.
document.addEventListener('tessera-ask', (event) => {
  notice(`To ask about it, ask in the chat or in Tessera: “${event.detail.question}”`, true);
});

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
      read = await callTool(READ_TOOL, { revision: pinned, ...(after ? { after } : {}) });
      failures = 0;
    } catch (error) {
      if (FINAL.has(error.reason)) {
        status('');
        notice(`This answer cannot be shown here: ${error.message}`, true);
        return;
      }
      if (error.reason === 'CURSOR_INVALID') after = '';
      notice(`Reconnecting to Tessera (${error.message})…`);
      await new Promise((resolve) => { setTimeout(resolve, RETRY_MS[Math.min(failures, RETRY_MS.length - 1)]); });
      failures += 1;
      continue;
    }
    if ($('frame-notice-text').textContent.startsWith('Reconnecting')) notice('');
    for (const envelope of read.envelopes) {  // only what this frame's revision shows (the front filters)
      try {
        view.receive(envelope);
      } catch (error) {
        notice(`Part of the answer could not be drawn: ${error.message}`);
      }
    }
    after = read.cursor || after;
    if (read.replaced) replaced();
  }
}

// present_ui's result: what this frame shows.
function opened(result) {
  const answer = contentOf(result);
  openUrl = answer.link || '';
  if (!answer.revision) {
    status(result?.isError ? `Tessera refused this display: ${answer.message || answer.error || 'refused'}.`
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
