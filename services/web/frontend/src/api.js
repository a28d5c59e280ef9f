// Talking to `web`: JSON in and out, errors as {reason, message}, server-sent events read from fetch.

export class ApiError extends Error {
  constructor(status, reason, message, body = {}) {
    super(message || reason);
    this.status = status;
    this.reason = reason;
    this.body = body;  // everything the server said, e.g. `outcome` of an approval decided already
  }
}

async function failure(response) {
  let body = {};
  try { body = await response.json(); } catch { /* not JSON: keep the status */ }
  return new ApiError(response.status, body.reason || `HTTP_${response.status}`, body.message || response.statusText,
    body);
}

// The page shows this browser's surface, with ?surface=mcp the one outside agents (MCP clients) presented to
// the person, or with ?surface=terminal-… one the person asked in at the terminal (`tessera ask --open`); every
// API call says which. Anything else is this browser's own.
// (globalThis.location: the page's address; absent where the module runs outside a page, as in its tests.)
const ASKED = new URLSearchParams(globalThis.location?.search ?? '').get('surface') ?? '';
const SURFACE = ASKED === 'mcp' || /^terminal-[0-9a-f]{12}$/.test(ASKED) ? ASKED : '';

export function apiPath(path) {
  if (!SURFACE) return path;
  return `${path}${path.includes('?') ? '&' : '?'}surface=${SURFACE}`;
}

export function showsOutsideAgentSurface() {
  return SURFACE === 'mcp';
}

export function showsTerminalSurface() {
  return SURFACE.startsWith('terminal-');
}

export async function getJson(path) {
  const response = await fetch(apiPath(path), { credentials: 'same-origin' });
  if (!response.ok) throw await failure(response);
  return response.json();
}

export async function postJson(path, body) {
  const response = await fetch(apiPath(path), {
    method: 'POST', credentials: 'same-origin',
    headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  });
  if (!response.ok) throw await failure(response);
  return response.json();
}

// Worth trying again: no answer at all (fetch threw), or web says the service behind it is down or slow.
export function retryable(error) {
  return !(error instanceof ApiError) || [502, 503, 504].includes(error.status);
}

// POST the same body again after each delay while it is retryable (only for requests the server makes
// idempotent, e.g. a decision with its decision_id). onRetry(attempt, attempts) lets the page say so.
export async function postJsonRetrying(path, body, onRetry = () => {}, delays = [500, 1000, 2000, 4000]) {
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await postJson(path, body);
    } catch (error) {
      if (attempt >= delays.length || !retryable(error)) throw error;
      onRetry(attempt + 2, delays.length + 1);
      await new Promise((resolve) => { setTimeout(resolve, delays[attempt]); });
    }
  }
}

// An id for a command or a decision: `<prefix>-<uuid>`. crypto.randomUUID exists only in secure contexts (https or
// localhost); a page opened over http by address gets a version-4 UUID from getRandomValues instead.
export function newId(prefix) {
  if (crypto.randomUUID) return `${prefix}-${crypto.randomUUID()}`;
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;  // version 4
  b[8] = (b[8] & 0x3f) | 0x80;  // RFC 4122 variant
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${prefix}-${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

// POST that answers with server-sent events (a turn): calls onEvent for each `data:` object.
export async function postEvents(path, body, onEvent, signal) {
  const response = await fetch(apiPath(path), {
    method: 'POST', credentials: 'same-origin', signal,
    headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  });
  if (!response.ok) throw await failure(response);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffered += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffered.indexOf('\n\n')) >= 0) {
      const block = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      const data = block.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
      if (data) onEvent(JSON.parse(data));
    }
  }
}

// Client-side render problems go back to the server's log (a refused block, a failed window).
export function report(kind, detail) {
  postJson('/api/report', { kind, detail: String(detail).slice(0, 500) }).catch(() => {});
}
