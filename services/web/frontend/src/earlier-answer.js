// An earlier answer of the conversation, drawn again as it was shown: its revision's A2UI messages in a renderer
// of its own, under a surface id of its own (so nothing of it mixes with the live answer: not its data, its
// captions or the outcomes of what its blocks ask for). Read-only: its blocks ask for their rows as the live
// answer's do, naming its revision, and the host sends them on the surface stream (surface.js hands each window
// here); an offered action or choice does not run on an earlier answer.

import { MessageProcessor } from '@a2ui/web_core/v0_9';
import { AnswerCaptions, catalog } from './components.js';
import { outcomes, send } from './actions.js';
import { applyMessage } from './refused.js';

// The surface id of each earlier answer drawn → its renderer's processor and the data-model paths of the results
// it binds (only their windows are its).
const drawn = new Map();
const READ_ONLY = 'This is an earlier answer: ask the question again to act on it.';

// The same message for another surface id.
function renamed(message, surfaceId) {
  const kind = Object.keys(message).find((key) => key !== 'version');
  return { ...message, [kind]: { ...message[kind], surfaceId } };
}

// A window from the surface stream, to the earlier answers drawn that bind its result.
export function showInEarlierAnswers(message) {
  const path = message.updateDataModel?.path;
  if (!path?.endsWith('/window')) return;
  const result = path.slice(0, -'/window'.length);
  for (const [surfaceId, { processor, results }] of drawn) {
    if (results.has(result)) applyMessage(processor, renamed(message, surfaceId));
  }
}

// What a block of an earlier answer asks for: rows, under its revision; nothing else.
function act(action, revisionId) {
  if (action.name === 'resource-window') return send(action, revisionId);
  const outcome = { action, error: new Error(READ_ONLY) };
  outcomes.dispatchEvent(new CustomEvent('outcome', { detail: outcome }));
  return Promise.resolve(outcome);
}

// Draw revision `revisionId` (its A2UI messages) into `container`, with its own caption under it.
export function drawEarlierAnswer(container, revisionId, messages) {
  const surfaceId = `earlier-${revisionId}`;
  const processor = new MessageProcessor([catalog], (action) => act(action, revisionId));
  if (!messages.length || !messages.every((message) => applyMessage(processor, renamed(message, surfaceId)))) {
    container.textContent = 'This answer can no longer be drawn again; its words are above.';
    return;
  }
  const results = new Set(messages.map((m) => m.updateDataModel?.path).filter((p) => p?.startsWith('/resources/')));
  drawn.set(surfaceId, { processor, results });
  const answerCaptions = new AnswerCaptions();
  container.answerCaptions = answerCaptions;  // what its blocks share, said once under it
  const view = document.createElement('a2ui-surface');
  const caption = document.createElement('div');
  caption.className = 'answer-caption';
  caption.hidden = true;
  answerCaptions.addEventListener('change', () => answerCaptions.drawInto(caption));
  container.replaceChildren(view, caption);
  view.surface = processor.model.getSurface(surfaceId);
}

// The heading the answer was shown under (the question as it was read), or ''.
export function headingOf(messages) {
  for (const message of messages) {
    const heading = message.updateComponents?.components?.find((c) => c.component === 'Heading');
    if (typeof heading?.text === 'string') return heading.text;
  }
  return '';
}
