// The page: a question box with the turn's progress, the answer, the live surface, approvals and receipts.

import {
  getJson, postJson, postEvents, ApiError, showsOutsideAgentSurface, showsTerminalSurface,
} from './api.js';
import { SurfaceView } from './surface.js';
import { surfaceState } from './components.js';
import { titles } from './approval-card.js';
import { send } from './actions.js';
import { reasonInWords, statusInWords } from './format.js';
import { confirmWithExisting, createPasskey, passkeysSupported } from './passkeys.js';
import { Thread } from './thread.js';

const $ = (id) => document.getElementById(id);
const STEP = { TOOL_STEP_STATUS_OK: 'done', TOOL_STEP_STATUS_FAILED: 'failed', TOOL_STEP_STATUS_UNAVAILABLE: 'unavailable',
  TOOL_STEP_STATUS_AWAITING_APPROVAL: 'waiting for approval', TOOL_STEP_STATUS_CANCELLED: 'cancelled' };
// What each step is doing, in words: the line a person reads while the question runs (the tool names stay in
// the technical log, for the curious).
const DOING = { inspect_current_context: 'Reading the conversation so far…',
  inspect_catalog: 'Looking at what the data holds…', describe_data: 'Looking up what can be measured and grouped…',
  probe_data: 'Checking the values you named…', run_analysis: 'Running the analysis…',
  present_ui: 'Drawing the answer…' };
const shownApprovals = new Set();

// The one line that says, in words, what the question is doing now (empty: hidden, nothing left spinning).
function say(text, className = '') {
  $('progress-now').textContent = text;
  $('progress-now').className = className;
  $('progress-now').hidden = !text;
}

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
  card.setAttribute('aria-label', `Approval request ${shownApprovals.size}`);  // (each region named apart)
  $('approvals').append(card);
  $('approvals-section').hidden = false;
}

const shownReceipts = new Set();

// One line per outcome, in the words of the card (the same line whether the stream or the click says it first).
function showReceipt(receipt) {
  if (!receipt) return;
  const key = `${receipt.intent_id}:${receipt.status}`;
  if (shownReceipts.has(key)) return;  // a replayed journal shows each outcome once
  shownReceipts.add(key);
  const status = statusInWords(receipt.status);
  const what = receipt.title || titles.get(receipt.intent_id) || receipt.action_id;
  // The button that asked for it says how it ended, too.
  document.dispatchEvent(new CustomEvent('receipt', { detail: receipt }));
  $('receipts-section').hidden = false;
  const why = reasonInWords(receipt.reason);
  item($('receipts'), `${what}: ${status}${why ? ` (${why})` : ''}`, `receipt ${status.replace(/ /g, '-')}`);
}


// A decided card leaves the waiting list (it stays readable under Decided), and the answer says what
// happened, in the card's words.
function moveToDecided(card) {
  if (card?.parentElement !== $('approvals')) return;
  $('decided').prepend(card);
  $('decided-section').hidden = false;
  $('approvals-section').hidden = !$('approvals').children.length;
}

function decided(event) {
  const receipt = event.detail || {};
  moveToDecided(event.target.closest?.('tessera-approval-card') || event.target);
  const status = statusInWords(receipt.status);
  const what = receipt.title || titles.get(receipt.intent_id) || receipt.action_id || 'the request';
  const words = { rejected: `You rejected “${what}”; nothing was changed.`,
    expired: `“${what}” expired without a decision; nothing was changed.`,
    succeeded: `You approved “${what}”; it was done.`, running: `You approved “${what}”; it is running.`,
    failed: `You approved “${what}”, but it failed${receipt.reason ? ` (${reasonInWords(receipt.reason)})` : ''}.`,
  }[status];
  if (words) {
    $('answer').textContent = words;
    $('progress-section').hidden = false;
  }
  showReceipt(receipt);
}

async function refreshApprovals() {
  try {
    const listed = await getJson('/api/approvals');
    for (const approval of listed.approvals || []) showApproval(approval.approval_id, false);
  } catch { /* the list is a convenience: cards also arrive on the stream */ }
}

// The answer panel says which question it answers: while a new one runs the previous answer is marked as
// the previous one; a refusal takes the panel's place instead of sitting under a stale answer.
const answerPanel = {
  pending: '',
  asking(question) {
    this.pending = question;
    $('refusal').hidden = true;
    const shown = Boolean($('surface').querySelector('a2ui-surface'));
    $('surface').hidden = false;
    $('surface').classList.toggle('stale', shown);
    $('answer-state').textContent = shown ? `Working on “${question}”; below is your previous answer.`
      : `Working on “${question}”…`;
    $('answer-state').hidden = false;
  },
  rendered() {
    if (!this.pending) return;
    $('surface').classList.remove('stale');
    $('answer-state').textContent = `Answer to “${this.pending}”`;
  },
  // The turn the answer area shows, as the conversation keeps it: its question, and the turn it refines.
  showing(turn) {
    if (!turn) return;
    if (!this.pending && turn.revision_id) {  // (after a reload: the answer drawn is this turn's)
      $('answer-state').textContent = `Answer to “${turn.question}”`;
      $('answer-state').hidden = false;
    }
    const follows = thread.questionOf(turn.follows_turn_id);
    if (!turn.follows_turn_id || !follows || $('answer-state').hidden) return;
    const link = document.createElement('a');
    link.href = `#turn-${turn.follows_turn_id}`;
    link.textContent = `“${follows}”`;
    $('answer-state').append(', a follow-up to ', link);
  },
  // Questions that can be answered, beside an answer that had nothing to show: one click asks one.
  offer(questions) {
    if (!questions.length) return;
    const box = $('refusal');
    box.className = 'refusal offers';
    box.replaceChildren(...youCouldAsk(questions));
    box.hidden = false;
  },
  finished(question, done, committed) {
    this.pending = '';
    if (committed) {
      $('surface').classList.remove('stale');
      $('answer-state').textContent = `Answer to “${question}”`;
      this.offer(done?.suggested_questions || []);  // (an answer with nothing to show says what has)
      return;
    }
    const cancelled = done?.outcome === 'TURN_OUTCOME_CANCELLED';
    const answered = done?.outcome === 'TURN_OUTCOME_ANSWERED';
    // No new display: what the agent said is the answer; the previous surface is hidden, not passed off as it.
    $('answer-state').hidden = true;
    $('surface').classList.remove('stale');
    $('surface').hidden = Boolean($('surface').querySelector('a2ui-surface'));
    const box = $('refusal');
    box.className = answered ? 'refusal answered' : cancelled ? 'refusal cancelled' : 'refusal';
    box.replaceChildren();
    const title = document.createElement('strong');
    title.textContent = cancelled ? `You cancelled “${question}”.` : answered ? `“${question}”`
      : `No answer to “${question}”`;
    const text = document.createElement('p');
    text.style.margin = '0';
    text.textContent = done?.answer || (cancelled ? 'Nothing more was done.' : 'The question stopped before an answer.');
    box.append(title, text);
    const offered = done?.suggested_questions || [];
    if (offered.length) box.append(...youCouldAsk(offered));  // nearest first: one click asks one
    if ($('surface').hidden) {
      const again = document.createElement('button');
      again.type = 'button';
      again.id = 'show-previous';
      again.className = 'secondary';
      again.textContent = 'Show the previous answer';
      again.addEventListener('click', () => { $('surface').hidden = false; again.remove(); });
      box.append(again);
    }
    box.hidden = false;
  },
};

let runningTurn = '';
let thread;  // the conversation so far (thread.js), below the answer

async function cancelTurn() {
  $('cancel-button').disabled = true;
  if (!runningTurn) {  // not started yet: leaving the request stops it before it begins
    currentAbort?.abort();
    return;
  }
  try {
    const reply = await postJson(`/api/turns/${encodeURIComponent(runningTurn)}/cancel`, {});
    if (!reply.cancelled) currentAbort?.abort();  // another agent replica runs it: leaving the stream stops it
  } catch {
    currentAbort?.abort();
  }
}

let currentAbort = null;

// What one question's stream shows while it arrives (its steps, the answer, tools that were unavailable),
// and how the question ended.
class TurnProgress {
  constructor() {
    this.started = false;
    this.finished = false;
    this.committed = false;
    this.done = null;
    this.degraded = [];
    this.running = new Map();  // call id → its progress item
    this.began = performance.now();
    $('progress').replaceChildren();
    $('progress-log').open = false;
    $('progress-log').querySelector('summary').textContent = 'Technical log';
    $('answer').textContent = '';
    $('answer').setAttribute('aria-live', 'off');  // not re-read on every streamed piece
    $('degraded').hidden = true;
    $('progress-section').hidden = false;
  }

  event(e) {
    if (e.started) {
      this.started = true;
      runningTurn = e.turn_id || '';
      say('Working on your question…');
      item($('progress'), `turn ${e.turn_id || ''} started`);
    }
    if (e.surface_committed) this.committed = true;
    if (e.tool_step) this.step(e.tool_step);
    if (e.degraded) {
      this.degraded.push(`${e.degraded.tool} (${e.degraded.message})`);
      this.sayUnavailable(`Some tools were unavailable: ${this.degraded.join('; ')}.`);
    }
    if (e.error) {
      say(`Problem: ${e.error.message || e.error.reason}`, 'failed');
      item($('progress'), `${e.error.reason}: ${e.error.message}`, 'failed');
    }
    if (e.answer_delta) $('answer').textContent += e.answer_delta.text;
    if (e.done) this.end(e.done);
  }

  step(step) {
    if (step.phase === 'TOOL_STEP_PHASE_STARTED') {
      say(DOING[step.tool] || `Using ${step.tool}…`);
      this.running.set(step.call_id, item($('progress'), `${step.tool}…`));
      return;
    }
    const li = this.running.get(step.call_id) || item($('progress'), step.tool);
    const status = STEP[step.status] || 'done';
    li.textContent = `${step.tool}: ${status}${step.summary ? ` — ${step.summary}` : ''}`;
    li.className = status.replace(/ /g, '-');
    if (step.approval_id) {
      say('Waiting for your approval, below.');
      showApproval(step.approval_id);
    }
  }

  end(done) {
    this.finished = true;
    this.done = done;
    say('');  // nothing left spinning: the answer says how it ended
    const seconds = ((performance.now() - this.began) / 1000).toFixed(1);
    $('progress-log').querySelector('summary').textContent =
      `Technical log (${$('progress').children.length} steps, ${seconds} s)`;
    this.committed = this.committed || (done.revision_ids || []).length > 0;
    $('answer').setAttribute('aria-live', 'polite');  // announced once, complete
    $('answer').textContent = done.answer || $('answer').textContent;
    if (done.degraded && !this.degraded.length) this.sayUnavailable('Some tools were unavailable for this answer.');
  }

  sayUnavailable(text) {
    $('degraded').textContent = text;
    $('degraded').hidden = false;
  }

  // The stream failed or was stopped: say which, and what stays.
  stopped(error, cancelled) {
    if (cancelled) {  // the person's own choice: said plainly, not as an error
      this.done = { outcome: 'TURN_OUTCOME_CANCELLED', answer: 'The question was stopped. Anything it already '
        + 'showed stays on the surface.' };
      say('Cancelled.', 'cancelled');
      item($('progress'), 'cancelled by the person');
    } else if (this.started && !this.finished) {
      // The turn lived on that connection and stopped with it (see WebApi.ask in api.py); what it
      // already showed stays on the surface, whose stream resumes on its own, on any web replica.
      say('The connection to this question was lost, so it stopped. Anything it already showed stays on the '
        + 'surface; ask again to finish it.', 'failed');
    } else {
      const reason = error instanceof ApiError ? `${error.reason}: ${error.message}` : error.message;
      say(`The question was not sent (${reason}).`, 'failed');
    }
  }
}

async function ask(event) {
  event.preventDefault();
  const question = $('question').value.trim();
  if (!question) return;
  $('ask-button').disabled = true;
  answerPanel.asking(question);
  currentAbort = new AbortController();
  $('cancel-button').hidden = false;
  $('cancel-button').disabled = false;
  const progress = new TurnProgress();
  try {
    await postEvents('/api/ask', { question }, (e) => progress.event(e), currentAbort.signal);
    if (progress.started && !progress.finished) throw new Error('the stream ended early');
  } catch (error) {
    progress.stopped(error, currentAbort.signal.aborted);
  } finally {
    $('ask-button').disabled = false;
    $('cancel-button').hidden = true;
    const asked = runningTurn;
    runningTurn = '';
    answerPanel.finished(question, progress.done, progress.committed);
    refreshApprovals();
    // The answer area shows this turn now; the one it showed before joins the conversation below.
    if (asked) answerPanel.showing(await thread.refresh(asked));
  }
}

// "You could ask:" and the questions, each a button that asks it.
function youCouldAsk(questions) {
  const lead = document.createElement('p');
  lead.textContent = 'You could ask:';
  const list = document.createElement('ul');
  list.className = 'suggestions';
  list.setAttribute('aria-label', 'Questions I can answer');
  list.append(...askButtons(questions));
  return [lead, list];
}

// One list item per question: a button that asks it.
function askButtons(questions) {
  return questions.map((question) => {
    const item = document.createElement('li');
    const button = document.createElement('button');
    button.type = 'button';
    button.textContent = question;
    button.addEventListener('click', () => { $('question').value = question; $('ask').requestSubmit(); });
    item.append(button);
    return item;
  });
}

// The empty state: questions this data can answer, and what it holds (labels only), from the agent.
async function showOutline() {
  let outline;
  try {
    outline = await getJson('/api/outline');
  } catch { return; }  // a convenience: asking works without it
  if (!$('empty-state')?.isConnected) return;  // an answer took the empty page's place while this was asked for
  const questions = outline.suggested_questions || [];
  $('suggested-questions').replaceChildren(...askButtons(questions));
  $('suggestions').hidden = !questions.length;
  const entities = outline.entities || [];
  const list = document.createElement('dl');
  for (const entity of entities) {
    const term = document.createElement('dt');
    term.textContent = entity.label;
    const measures = document.createElement('dd');
    measures.textContent = `Measures: ${(entity.measures || []).join(', ') || 'none'}`;
    const dimensions = document.createElement('dd');
    dimensions.textContent = `By: ${(entity.dimensions || []).join(', ') || 'none'}`;
    list.append(term, measures, dimensions);
  }
  $('outline-entries').replaceChildren(list);
  $('outline').hidden = !entities.length;
}

// A one-time link (/sign-in#token=…): its token is handed to web once and leaves the address bar at once,
// so it is neither kept in history nor sent anywhere else. The reply may open a passkey enrollment.
async function signInWithLink() {
  const token = new URLSearchParams(window.location.hash.slice(1)).get('token');
  window.history.replaceState(null, '', `/${window.location.search}`);  // (?surface=…: the answer it opens)
  if (!token) return null;
  const signedIn = await postJson('/api/sign-in/link', { token });
  showPasskeysAdded(signedIn.passkeys_added || []);
  if (signedIn.enrollment) offerPasskey(signedIn.enrollment, signedIn.passkeys);
  return signedIn;
}

// Passkeys added since the person last signed in (by link or through their organisation's sign-in): whoever
// added one could approve as them, so the page says so, with when, and what to do about one they did not add.
function showPasskeysAdded(added) {
  if (!added.length) return;
  const list = document.createElement('ul');
  for (const passkey of added) {
    const item = document.createElement('li');
    item.textContent = `passkey ${passkey.credential_id.slice(0, 12)}… added ${
      new Date(passkey.created_at).toLocaleString()}`;
    list.append(item);
  }
  $('passkeys-added-list').replaceChildren(list);
  $('passkeys-added').hidden = false;
}

function offerPasskey(enrollment, existing) {
  $('passkey').hidden = false;
  $('passkey-until').textContent = new Date(enrollment.expires_at).toLocaleTimeString();
  if (existing) {
    $('passkey-title').textContent = `Add another passkey (you have ${existing})`;
    $('passkey-confirm').hidden = false;
  }
  if (!passkeysSupported()) {
    $('add-passkey').disabled = true;
    $('passkey-status').textContent = 'This browser cannot create passkeys; open the link in one that can.';
    return;
  }
  $('add-passkey').addEventListener('click', async () => {
    $('add-passkey').disabled = true;
    $('passkey-status').textContent = 'Follow your device’s prompt…';
    try {
      const credential = await createPasskey(enrollment.options);
      const body = { enrollment_id: enrollment.enrollment_id, credential };
      if (enrollment.existing_credential_ids?.length) {
        $('passkey-status').textContent = 'Now confirm the new passkey with one you already have…';
        body.existing_passkey = await confirmWithExisting(enrollment, credential);
      }
      const added = await postJson('/api/passkeys', body);
      $('passkey-status').textContent = `Passkey added (you have ${added.passkeys}). You can approve actions now.`;
      $('passkey').dataset.enrolled = 'true';
    } catch (error) {
      $('add-passkey').disabled = false;
      $('passkey-status').textContent = error.name === 'NotAllowedError'
        ? 'No passkey was added (cancelled or timed out). Try again.'
        : `No passkey was added (${error.reason || error.message}).`;
    }
  });
}

async function askToSignIn(message) {
  $('who').textContent = 'Not signed in.';
  $('sign-in-message').textContent = message;
  $('sign-in').hidden = false;
  $('ask').hidden = true;
  try {
    const options = await getJson('/api/sign-in/options');
    if (options.oidc) {
      $('oidc-sign-in').textContent = `Sign in with ${options.oidc.provider}`;
      $('oidc-sign-in').href = options.oidc.url;
      $('oidc-sign-in').hidden = false;
      $('sign-in-message').textContent = `Or: ${options.link}`;
    }
  } catch { /* the link way is already on the page */ }
}

async function signOut() {
  try { await postJson('/api/sign-out', {}); } finally { window.location.assign('/'); }
}

async function start() {
  try {
    if (window.location.pathname === '/sign-in') await signInWithLink();
    const session = await getJson('/api/session');
    // A sign-in that redirected here (OpenID Connect) hands its passkey notice to this first call, once.
    if (session.passkeys_added) showPasskeysAdded(session.passkeys_added);
    const showing = showsOutsideAgentSurface() ? ' · showing what your outside agents (MCP) presented'
      : showsTerminalSurface() ? ' · showing what you asked at the terminal' : '';
    $('who').textContent = `Signed in as ${session.name}${showing}`;
    $('who').title = `surface ${session.surface_id}`;  // for support, not for reading
    $('sign-out').hidden = false;
    $('sign-out').addEventListener('click', signOut);
    showOutline();
    thread = new Thread($('thread-section'), $('thread'), $('thread-more'), askButtons);
    thread.refresh(null).then((turn) => answerPanel.showing(turn));
  } catch (error) {
    if (error.status === 401 || error.reason?.startsWith('LINK_')) askToSignIn(error.message);
    else $('who').textContent = `Not connected (${error.reason || error.message}).`;
    return;
  }
  const view = new SurfaceView($('surface'), {
    // The one handler of every action a block dispatches: its command goes to web for the revision shown; an
    // offered action that needs a decision opens its approval card (the person just asked for it).
    async onAction(action) {
      const { reply } = await send(action, surfaceState.revisionId);
      if (reply?.receipt?.approval_id) showApproval(reply.receipt.approval_id);
    },
    onHostEvent(kind, event) {
      // From the stream (also replayed on every load): shown, but it does not take the focus.
      if (kind === 'approval_requested') showApproval(event.approval_id, false);
      if (kind === 'effect_receipt') showReceipt(event.receipt);
      if (kind === 'rejected') say('A display was refused; the last good one stays.', 'failed');
    },
    onRendered() {
      answerPanel.rendered();
      document.body.dataset.rendered = String(Date.now());
    },
    onError(error) { $('degraded').textContent = `The live view stopped: ${error.message}`; $('degraded').hidden = false; },
    onConnection(open) {
      if (open && $('degraded').dataset.stream) { $('degraded').hidden = true; delete $('degraded').dataset.stream; }
      if (!open) {
        $('degraded').textContent = 'The live view lost its connection; reconnecting…';
        $('degraded').dataset.stream = 'lost';
        $('degraded').hidden = false;
      }
    },
    // Still signed in? A sign-in that ended (expired, signed out, or web restarted without a shared
    // secret) stops the reconnecting and asks the person to sign in again.
    reopen: () => getJson('/api/session').catch((error) => {
      if (error.status !== 401) throw error;
      $('degraded').hidden = true;
      askToSignIn(`Your sign-in ended. ${error.message}`);
      return new Promise(() => {});
    }),
  });
  view.connect();
  document.addEventListener('decided', decided);
  document.addEventListener('found-decided', (event) => moveToDecided(event.target));
  $('ask').addEventListener('submit', ask);
  // A value of an answer clicked (a bar, a row): its follow-up is asked like any question, unless one is running.
  document.addEventListener('tessera-ask', (event) => {
    if ($('ask-button').disabled) return;
    $('question').value = event.detail.question;
    $('ask').requestSubmit();
  });
  $('cancel-button').addEventListener('click', cancelTurn);
  refreshApprovals();
  document.body.dataset.ready = 'true';
}

start();
