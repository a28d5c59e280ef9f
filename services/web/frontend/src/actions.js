// What a block asks for (a window of rows, a figure, an offered action, a state choice) is an A2UI action: the
// block dispatches it through the renderer's action channel, the message processor hands every action to one
// handler (main.js), and `send` turns it into the command web accepts for it. How it went goes back to the
// block that asked, by its component id, on `outcomes`. The answer frame in an outside agent's chat
// (answer-frame.js) sends the same commands another way: `sendCommandsWith` replaces web's endpoint.

import { newId, postJson } from './api.js';

export const outcomes = new EventTarget();
let deliver = (command) => postJson('/api/commands', command);

// Where commands go: a function of the command body that resolves with the host's reply.
export function sendCommandsWith(transport) {
  deliver = transport;
}

// The command for each action: the block is the action's source; its context says the rest.
const COMMANDS = {
  'resource-window': (node, { prop, offset, limit }) => ({
    resource_window: { node_id: node, ...(prop ? { prop } : {}), offset, limit } }),
  'action-trigger': (node, { action, input }) => ({
    action_trigger: { node_id: node, action_slice_id: action, input_json: JSON.stringify(input || {}) } }),
  'state-write': (node, { state, value }) => ({
    state_write: { state_slice_id: state, value_json: JSON.stringify(value) } }),
};

// Sends one action as a command bound to the revision shown; resolves with {action, reply} or {action, error}.
export async function send(action, revisionId) {
  let outcome;
  try {
    const command = COMMANDS[action.name];
    if (!command) throw new Error(`no command for the action ${action.name}`);
    // The id begins with what asked, for whoever reads the host's records (the CLI's decision ids begin with cli-).
    const reply = await deliver({ command_id: newId(action.name),
      revision_id: revisionId, ...command(action.sourceComponentId, action.context || {}) });
    outcome = { action, reply };
  } catch (error) {
    outcome = { action, error };
  }
  outcomes.dispatchEvent(new CustomEvent('outcome', { detail: outcome }));
  return outcome;
}
