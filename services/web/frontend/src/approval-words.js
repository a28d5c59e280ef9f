// What an approval card says in words, apart from the card so it can be checked on its own (in Node): the risk,
// whether the run may have read outside text, where each read came from, and who decided.

// What approving risks, in words (the policy's risk class, never its internal name).
export const RISK_WORDS = { mutate: 'Changes data', read: 'Only reads data' };
// Reads the agent recorded itself: values from the organisation's own data (probe_data), not outside text.
const OWN_DATA = 'probe_data';
const SHOWN_READS = 3;  // the broker hands the card a run's newest reads, at most this many

// Whether the run read text from outside (a tool server's answer) before asking: when every read is on the card
// and each is a value from the person's own data, it did not; otherwise it may have, and the card says so.
export function readOutsideText(card) {
  const reads = card.recent_reads || [];
  if (!card.tainted) return false;
  return reads.length >= SHOWN_READS || reads.some((r) => r.source !== OWN_DATA);
}

export function readWords(read) {
  return read.source === OWN_DATA ? 'a value from your data' : `text from ${read.source}`;
}

// How the broker records a decision's signature ("passkey:<id>", "operator-key:<key id>", "unsigned"), in words.
const SIGNED = { passkey: 'signed with their passkey', 'operator-key': "signed with the operator's key",
  unsigned: 'without a signature' };

// "Decided by local-user, signed with their passkey": who decided, and how the decision was signed.
export function decidedWords(card) {
  if (!card.decided_by) return '';
  const how = SIGNED[(card.signed_with || '').split(':')[0]];
  return `Decided by ${card.decided_by}${how ? `, ${how}` : ''}.`;
}
