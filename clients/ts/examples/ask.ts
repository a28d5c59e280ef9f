// Ask Tessera one question from TypeScript, as a screen would: open a session on the host, follow its surface,
// run a turn through the agent, and read the rows of every table the answer shows (the host sends a table's
// first window itself to a surface it knows is watched; otherwise the client asks for it). Prints one JSON
// line of what happened.
//
// Usage: node ask.js <host address> <agent address> <cert dir> <question>
// The person's signed actor assertion (a serialised tessera.common.v1.ActorAssertion, base64) comes in
// TESSERA_ACTOR_ASSERTION: it is issued by whoever authenticated the person (web, or the CLI's key), never
// made by a client library. Against a local set: TESSERA_ACTOR_ASSERTION=$(tessera dev actor PERSON --tenant T).
import { fromBinary } from "@bufbuild/protobuf";
import { type Client, createClient } from "@connectrpc/connect";
import { AgentService, ToolStepPhase, type TurnDone } from "../gen/tessera/agent/v1/agent_pb.js";
import { type ActorAssertion, ActorAssertionSchema, TurnOutcomeSchema } from "../gen/tessera/common/v1/common_pb.js";
import { HostService, type OpenSessionResponse, type SubscribeResponse } from "../gen/tessera/host/v1/host_pb.js";
import { mtlsTransport } from "../src/transport.js";

const WAIT_MS = 30_000;
const TABLE_ROWS = 100;

// An A2UI message as the surface's stream carries it (the parts this example reads).
interface A2uiMessage {
  updateComponents?: { components: { id: string; component: string }[] };
  updateDataModel?: { path: string; value: { node?: string } };
}

/** The surface's stream, read in the background from the start of the session: every A2UI message with the
 * revision it belongs to, and a way to wait until what has arrived satisfies a condition. */
class SurfaceFollower {
  readonly messages: { revisionId: string; message: A2uiMessage; text: string }[] = [];
  private readonly stop = new AbortController();
  private wake: () => void = () => {};
  private ended = false;
  private readonly reading: Promise<void>;

  constructor(host: Client<typeof HostService>, actor: ActorAssertion, session: OpenSessionResponse) {
    this.reading = this.read(host.subscribe(
      { actor, sessionId: session.sessionId, surfaceId: session.surfaceId, maxEnvelopes: 64 },
      { signal: this.stop.signal },
    ));
  }

  private async read(stream: AsyncIterable<SubscribeResponse>): Promise<void> {
    try {
      for await (const reply of stream) {
        for (const envelope of [reply.envelope, ...reply.following]) {
          if (envelope?.payload.case !== "a2ui") continue;
          const text = envelope.payload.value.messageJson;
          this.messages.push({ revisionId: envelope.revisionId, message: JSON.parse(text), text });
        }
        this.wake();
      }
    } catch (error) {
      if (!this.stop.signal.aborted) throw error;
    } finally {
      this.ended = true;
      this.wake();
    }
  }

  async until(what: string, condition: () => boolean): Promise<void> {
    const deadline = Date.now() + WAIT_MS;
    while (!condition()) {
      if (Date.now() > deadline) throw new Error(`gave up waiting for ${what} on the surface`);
      if (this.ended) {
        await this.reading;  // the stream's own error, if it failed
        throw new Error(`the surface's stream ended before ${what}`);
      }
      // Woken by the next message (or the stream's end); the timer only ends the wait at the deadline.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([new Promise<void>((resolve) => { this.wake = resolve; }),
        new Promise((resolve) => { timer = setTimeout(resolve, deadline - Date.now()); }), this.reading]);
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    this.stop.abort();
    await this.reading;
  }
}

const [hostAddress, agentAddress, certDir, question] = process.argv.slice(2);
const encoded = process.env.TESSERA_ACTOR_ASSERTION;
if (!hostAddress || !agentAddress || !certDir || !question || !encoded) {
  console.error("usage: TESSERA_ACTOR_ASSERTION=<base64> node ask.js <host> <agent> <cert dir> <question>");
  process.exit(2);
}
const actor = fromBinary(ActorAssertionSchema, Buffer.from(encoded, "base64"));
const host = createClient(HostService, mtlsTransport({ address: hostAddress, certDir, principal: "cli", peer: "host" }));
const agent = createClient(AgentService, mtlsTransport({ address: agentAddress, certDir, principal: "cli", peer: "agent" }));

const session = await host.openSession({ actor, requestId: `ts-${crypto.randomUUID()}` }, { timeoutMs: WAIT_MS });
const surface = new SurfaceFollower(host, actor, session);
try {
  const steps: string[] = [];
  let done: TurnDone | undefined;
  for await (const event of agent.startTurn(
    { actor, sessionId: session.sessionId, question, requestId: `ts-${crypto.randomUUID()}` },
    { timeoutMs: 120_000 },
  )) {
    if (event.event.case === "toolStep" && event.event.value.phase === ToolStepPhase.FINISHED) steps.push(event.event.value.tool);
    if (event.event.case === "done") done = event.event.value;
  }
  if (done === undefined) throw new Error("the turn's stream ended without its done event");
  const shown = done.revisionIds.at(-1);
  const tables: string[] = [];
  if (shown !== undefined) {
    await surface.until(`revision ${shown}`, () => surface.messages.some((m) => m.revisionId === shown));
    for (const { message } of surface.messages.filter((m) => m.revisionId === shown)) {
      for (const block of message.updateComponents?.components ?? []) {
        if (block.component === "DataTable") tables.push(block.id);
      }
    }
    const windowOf = (node: string) => surface.messages.some(
      (m) => m.message.updateDataModel?.path.endsWith("/window") && m.message.updateDataModel.value.node === node);
    for (const node of tables) {
      // Not sent by the host (it did not know this surface was watched yet): ask, as a screen does.
      if (!windowOf(node)) {
        await host.sendCommand({
          actor, commandId: `ts-${crypto.randomUUID()}`, sessionId: session.sessionId, surfaceId: session.surfaceId,
          revisionId: shown, command: { case: "resourceWindow", value: { nodeId: node, offset: 0n, limit: TABLE_ROWS } },
        }, { timeoutMs: WAIT_MS });
      }
    }
    await surface.until("the tables' rows", () => tables.every(windowOf));
  }
  console.log(JSON.stringify({
    // The outcome by its name in the contract ("TURN_OUTCOME_ANSWERED"), not its wire number.
    sessionId: session.sessionId, surfaceId: session.surfaceId, steps,
    outcome: TurnOutcomeSchema.value[done.outcome]?.name ?? `unknown outcome ${done.outcome}`, answer: done.answer,
    revisionIds: done.revisionIds, tables, a2uiMessages: surface.messages.map((m) => JSON.parse(m.text)),
  }));
} finally {
  await surface.close();
}
