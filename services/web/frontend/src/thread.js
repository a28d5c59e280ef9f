// The conversation: every turn but the one the answer area shows, newest first, each a card with the question
// as asked, the heading its answer was shown under (the question as it was read), what was said, and the
// figures, drawn again when opened. A follow-up names, and links to, the turn it refines. Kept by the host for
// the sign-in's session, so a reload shows the same thread.

import { getJson } from './api.js';
import { drawEarlierAnswer, headingOf } from './earlier-answer.js';

const NOT_ANSWERED = { TURN_OUTCOME_NOT_ANSWERABLE: ['not-answered', 'No answer'],
  TURN_OUTCOME_FAILED: ['failed', 'The question failed'], TURN_OUTCOME_CANCELLED: ['cancelled', 'Cancelled'] };

function element(tag, className, text) {
  const made = document.createElement(tag);
  if (className) made.className = className;
  if (text !== undefined) made.textContent = text;
  return made;
}

function when(timestamp) {
  return timestamp ? new Date(timestamp).toLocaleString([], { dateStyle: 'medium', timeStyle: 'short' }) : '';
}

export class Thread {
  // `askButtons(questions)`: list items that each ask one question (the page's own).
  constructor(section, list, more, askButtons) {
    Object.assign(this, { section, list, more, askButtons });
    this.cards = new Map();  // turn id → its card
    this.questions = new Map();  // turn id → its question (a follow-up names the one it refines)
    this.current = '';
    more.addEventListener('click', () => this.showOlder());
  }

  // The latest page again, every turn but `current` (the answer area's; null: the newest that committed an
  // answer, as after a reload); resolves with the answer area's turn, or null.
  async refresh(current = this.current) {
    let listed;
    try {
      listed = await getJson('/api/turns');
    } catch { return null; }  // a convenience: asking works without it
    const turns = listed.turns || [];
    if (current === null) current = turns.find((t) => t.revision_id)?.turn_id || '';
    this.current = current;
    const older = [...this.list.children].filter((card) => !turns.some((t) => card.id === `turn-${t.turn_id}`));
    this.list.replaceChildren(...turns.filter((t) => t.turn_id !== current).map((t) => this.card(t)), ...older);
    if (!older.length) this.older = listed.next_before || '';
    this.show();
    return turns.find((t) => t.turn_id === current) || null;
  }

  // The question of a turn listed so far ('' unknown).
  questionOf(turnId) { return this.questions.get(turnId) || ''; }

  async showOlder() {
    if (!this.older) return;
    this.more.disabled = true;
    try {
      const listed = await getJson(`/api/turns?before=${encodeURIComponent(this.older)}`);
      this.list.append(...(listed.turns || []).map((t) => this.card(t)));
      this.older = listed.next_before || '';
    } finally {
      this.more.disabled = false;
      this.show();
    }
  }

  show() {
    this.section.hidden = !this.list.children.length;
    this.more.hidden = !this.older;
  }

  // One turn's card (kept while its record does not change, so an opened answer stays open).
  card(turn) {
    this.questions.set(turn.turn_id, turn.question);
    const known = this.cards.get(turn.turn_id);
    if (known && known.dataset.finished === (turn.finished_at || '')) return known;
    const [kind, title] = NOT_ANSWERED[turn.outcome] || (turn.outcome ? ['answered', ''] : ['unfinished', 'Stopped']);
    const card = element('li', `turn ${kind}`);
    card.id = `turn-${turn.turn_id}`;
    card.dataset.finished = turn.finished_at || '';
    const asked = element('p', 'asked');
    asked.append(element('span', 'who', 'You asked'), ` “${turn.question}”`);
    if (turn.asked_at) asked.append(' ', element('time', '', when(turn.asked_at)));
    const heading = element('h3', '', title || turn.question);
    heading.id = `turn-heading-${turn.turn_id}`;
    card.setAttribute('aria-labelledby', heading.id);
    card.append(asked);
    if (turn.follows_turn_id) card.append(this.refines(card, turn.follows_turn_id));
    const said = turn.answer || (turn.outcome ? '' : 'No record of how this question ended (it was stopped).');
    card.append(heading, element('p', 'turn-answer', said));
    if (turn.suggested_questions?.length) {
      const offered = element('ul', 'suggestions');
      offered.setAttribute('aria-label', 'Questions I can answer');
      offered.append(...this.askButtons(turn.suggested_questions));
      card.append(offered);
    }
    if (turn.revision_id) card.append(this.figures(turn.revision_id, heading));
    this.cards.set(turn.turn_id, card);
    return card;
  }

  // "Follow-up to “…”", a link to the card of the turn it refines.
  refines(card, followsId) {
    card.classList.add('follow-up');
    const line = element('p', 'follows', 'Follow-up to ');
    const link = element('a', '', `“${this.questionOf(followsId) || 'an earlier question'}”`);
    link.href = `#turn-${followsId}`;
    line.append(link);
    return line;
  }

  // The answer's figures, drawn again the first time they are opened; its heading is read at once.
  figures(revisionId, heading) {
    const details = element('details', 'turn-figures');
    const summary = element('summary', '', 'Show the figures');
    const drawing = element('div', 'earlier-answer', 'Loading the answer…');
    details.append(summary, drawing);
    const messages = getJson(`/api/revisions/${encodeURIComponent(revisionId)}`).then((r) => r.messages || []);
    messages.then((shown) => { heading.textContent = headingOf(shown) || heading.textContent; }, () => {});
    details.addEventListener('toggle', () => {
      if (!details.open || details.dataset.drawn) return;
      details.dataset.drawn = 'true';
      messages.then((shown) => drawEarlierAnswer(drawing, revisionId, shown), (error) => {
        drawing.textContent = `This answer could not be loaded (${error.reason || error.message}).`;
      });
    });
    return details;
  }
}
