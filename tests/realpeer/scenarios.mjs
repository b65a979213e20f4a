// pi-server's own wire-level test client (`ProtocolTestClient`, `connectUnixTestClient` from
// `@earendil-works/pi-server/testing`) run through scenarios against a server on a Unix socket:
// the handshake, the fences, errors, cancellation, attachments, the Chord catalogue and
// subscriptions. Each scenario prints one JSON line: per connection, the messages sent, the
// messages received (in arrival order) and whether the server closed the connection, with
// server-generated values replaced by placeholders (the hello's serverId by "<serverId>", every
// attachmentId by "<attachment-N>" in order of first appearance) and no timing.
//
// The demo services are the ones tests/realpeer/real-server.mjs offers (and examples/server
// should); `demo.counter` must start at {value: 0, log: ""}, so run against a fresh server.
//
// Usage:
//   node scenarios.mjs --socket PATH [--server-id UUID] [--only NAME,...] [--skip-slow] [--loose] [--pretty]
//   node scenarios.mjs --compare PATH_A PATH_B [--only ...] [--skip-slow] [--loose]
//   node scenarios.mjs --diff FILE_A FILE_B [--loose]
//   node scenarios.mjs --list
// A socket may also be `tcp:HOST:PORT`. --server-id defaults to the socket's file name
// (<serverId>.sock), or for TCP to 3b241101-e2bb-4255-8caf-4136c566a962. --skip-slow leaves out the
// 5 s handshake-deadline scenario. --loose drops error messages (codes are kept). --pretty prints
// each transcript for reading (`a> sent`, `a< received`) instead of JSON lines. --compare runs
// every scenario against both sockets, prints a diff of each scenario whose transcripts differ,
// a summary line, and exits 1 on any difference. --diff does the same for two saved runs (the
// JSON lines of two --socket runs), for servers that cannot run side by side.
import { once } from "node:events";
import { readFileSync } from "node:fs";
import net from "node:net";
import { basename } from "node:path";
import { DEFAULT_SERVER_ID, canonical, load, log, parseArgs, sleep, usageError } from "./common.mjs";

const USAGE =
  "usage: scenarios.mjs --socket PATH [--server-id UUID] [--only NAME,...] [--skip-slow] [--loose] [--pretty]\n" +
  "       scenarios.mjs --compare PATH_A PATH_B [--only NAME,...] [--skip-slow] [--loose]\n" +
  "       scenarios.mjs --diff FILE_A FILE_B [--loose]\n" +
  "       scenarios.mjs --list";

const args = parseArgs(
  process.argv.slice(2),
  {
    socket: "value",
    "server-id": "value",
    only: "value",
    "skip-slow": "switch",
    loose: "switch",
    pretty: "switch",
    compare: "switch",
    diff: "switch",
    list: "switch",
  },
  USAGE,
);

const { ProtocolTestClient, connectUnixTestClient } = await load("@earendil-works/pi-server", "./testing");
const { encodeCbor, encodeFrame, PROTOCOL_VERSION } = await load("@earendil-works/pi-protocol");

/** How long one wait for an expected message (or close) may take before the scenario stops. */
const WAIT_MS = 3_000;
/** How long the handshake-deadline scenario waits (the real server closes after 5,000 ms). */
const HANDSHAKE_WAIT_MS = 8_000;
/** A serverId no server under test has. */
const OTHER_SERVER_ID = "9f0e8d7c-6b5a-4c3d-9e2f-1a0b9c8d7e6f";

const control = (member, ...callArgs) => ({ serviceId: "$chord.service", member, args: callArgs });
const call = (serviceId, member, ...callArgs) => ({ serviceId, member, args: callArgs });
const attachCall = (sessionId) => call("pi.session-management", "attach", sessionId);
const detachCall = () => call("pi.session-management", "detach");

/** Thrown to end a scenario early; its message goes into the transcript. */
class Stop extends Error {}

/**
 * One connection of a scenario: a ProtocolTestClient plus the list of what was sent. Waits take
 * the first matching message not yet taken, so two responses with the same id are told apart.
 */
class Conn {
  constructor(client, serverId) {
    this.client = client;
    this.serverId = serverId;
    this.sent = [];
    this.taken = new Set();
    this.stopped = undefined;
  }

  server(extra = {}) {
    return { serverId: this.serverId, ...extra };
  }

  /** The Session target of the latest attachment message, or one with a made-up attachmentId. */
  session(sessionId) {
    const latest = this.client.messages.filter((m) => m.type === "attachment").at(-1)?.attachment;
    if (latest && latest.sessionId === sessionId) return { ...latest };
    return { serverId: this.serverId, sessionId, attachmentId: "missing-attachment" };
  }

  /** The attachment (Session target) announced by the n-th attachment message (0-based). */
  attachmentAt(index) {
    const found = this.client.messages.filter((m) => m.type === "attachment")[index];
    if (!found?.attachment) throw new Stop(`no attachment message #${index}`);
    return { ...found.attachment };
  }

  async send(message) {
    this.sent.push(message);
    await this.client.sendMessage(message);
  }

  /** Sends bytes as they are; the transcript shows them as hex. */
  async sendRaw(bytes, note) {
    this.sent.push({ raw: Buffer.from(bytes).toString("hex"), note });
    await this.client.sendBytes(bytes);
  }

  /**
   * Sends `value` CBOR-encoded in one frame without the client codec's checks (for messages
   * that codec refuses to encode); the transcript shows the value, so placeholders apply.
   */
  async sendUnchecked(value, note) {
    this.sent.push({ unchecked: value, note });
    await this.client.sendBytes(encodeFrame(encodeCbor(value)));
  }

  async wait(predicate, what, ms = WAIT_MS) {
    let timer;
    try {
      const found = await Promise.race([
        this.client.next((m) => !this.taken.has(m) && predicate(m)),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Stop(`timed out waiting for ${what}`)), ms);
        }),
      ]);
      this.taken.add(found);
      return found;
    } catch (error) {
      if (error instanceof Stop) throw error;
      const why = error?.message === "Wire connection closed" || error?.message === "Wire client is closed"
        ? "the connection closed"
        : `the connection failed (${error?.message ?? error})`;
      throw new Stop(`${why} while waiting for ${what}`);
    } finally {
      clearTimeout(timer);
    }
  }

  async hello(version = PROTOCOL_VERSION) {
    await this.send({ type: "hello", version });
    return this.wait((m) => m.type === "hello" || m.type === "hello_error", "hello or hello_error");
  }

  async request(target, serviceCall, id) {
    await this.send({ type: "request", id, target, call: serviceCall });
    return this.response(id);
  }

  response(id) {
    return this.wait((m) => m.type === "response" && m.id === id, `response ${id}`);
  }

  cancel(target, id) {
    return this.send({ type: "cancel", id, target });
  }

  /** Waits for the attachment message that follows an attach or detach. */
  attachment(what = "attachment") {
    return this.wait((m) => m.type === "attachment", what);
  }

  update(subscriptionId) {
    return this.wait((m) => m.type === "service_update" && m.subscriptionId === subscriptionId, `service_update ${subscriptionId}`);
  }

  /**
   * A `demo.echo` round trip: everything the server sent before its answer is in the
   * transcript, so nothing is still in flight when the scenario ends.
   */
  async barrier() {
    const id = `barrier-${this.sent.length}`;
    await this.request(this.server(), call("demo.echo", "echo", "barrier"), id);
  }

  async waitClose(ms = WAIT_MS) {
    let timer;
    const closed = await Promise.race([
      this.client.waitForClose().then(() => true),
      new Promise((done) => {
        timer = setTimeout(() => done(false), ms);
      }),
    ]);
    clearTimeout(timer);
    if (!closed) throw new Stop("timed out waiting for the server to close");
  }
}

/** A scenario: a name, what rule it checks, and a body given `open()` for new connections. */
const SCENARIOS = [];
const scenario = (name, rule, body, options = {}) => SCENARIOS.push({ name, rule, body, ...options });

// ---- the handshake
scenario("hello", "hello with version 8 is answered with hello {version 8, serverId}", async (open) => {
  const c = await open();
  await c.hello();
  await c.barrier();
});
scenario("hello-version-7", "an older version gets hello_error `version` naming it, then the close", async (open) => {
  const c = await open();
  await c.hello(7);
  await c.waitClose();
});
scenario("hello-version-9", "a newer version gets hello_error `version`, then the close", async (open) => {
  const c = await open();
  await c.hello(9);
  await c.waitClose();
});
scenario("hello-version-float", "version 8 written as a CBOR float (8.0) is version 8", async (open) => {
  const c = await open();
  // {"type": "hello", "version": 8.0} with the version as a float64.
  const payload = Buffer.from("a264747970656568656c6c6f6776657273696f6efb4020000000000000", "hex");
  await c.sendRaw(encodeFrame(payload), "hello with version 8.0 as float64");
  await c.wait((m) => m.type === "hello" || m.type === "hello_error", "hello or hello_error");
  await c.barrier();
});
scenario("hello-version-fraction", "version 8.5 is not an integer: hello_error, then the close", async (open) => {
  const c = await open();
  const payload = Buffer.from("a264747970656568656c6c6f6776657273696f6efb4021000000000000", "hex");
  await c.sendRaw(encodeFrame(payload), "hello with version 8.5");
  await c.wait((m) => m.type === "hello_error", "hello_error");
  await c.waitClose();
});
scenario("request-before-hello", "a request before hello: hello_error invalid_request, then the close", async (open) => {
  const c = await open();
  await c.send({ type: "request", id: "early", target: c.server(), call: call("demo.echo", "echo") });
  await c.wait((m) => m.type === "hello_error", "hello_error");
  await c.waitClose();
});
scenario("cancel-before-hello", "a cancel before hello: hello_error invalid_request, then the close", async (open) => {
  const c = await open();
  await c.cancel(c.server(), "early");
  await c.wait((m) => m.type === "hello_error", "hello_error");
  await c.waitClose();
});
scenario("second-hello", "a second hello: hello_error invalid_request, then the close", async (open) => {
  const c = await open();
  await c.hello();
  await c.send({ type: "hello", version: PROTOCOL_VERSION });
  await c.wait((m) => m.type === "hello_error", "hello_error");
  await c.waitClose();
});
scenario("malformed-frame", "a frame that is not CBOR: hello_error invalid_request, then the close", async (open) => {
  const c = await open();
  await c.hello();
  await c.sendRaw(encodeFrame(Uint8Array.of(0xff, 0xff, 0xff)), "frame of three 0xff bytes");
  await c.wait((m) => m.type === "hello_error", "hello_error");
  await c.waitClose();
});
scenario("malformed-before-hello", "a bad frame instead of hello: hello_error invalid_request, then the close", async (open) => {
  const c = await open();
  await c.sendRaw(encodeFrame(Uint8Array.of(0x1c)), "frame of one reserved CBOR byte");
  await c.wait((m) => m.type === "hello_error", "hello_error");
  await c.waitClose();
});
scenario("unknown-message-type", "a CBOR map that is no client message: hello_error, then the close", async (open) => {
  const c = await open();
  await c.hello();
  await c.sendUnchecked({ type: "ping", id: "x" }, "no client message has type ping");
  await c.wait((m) => m.type === "hello_error", "hello_error");
  await c.waitClose();
});
scenario("fragmented-request", "a request split across two writes is one request", async (open) => {
  const c = await open();
  await c.hello();
  const message = { type: "request", id: "split", target: c.server(), call: call("demo.echo", "echo", "split") };
  c.sent.push({ ...message, note: "sent in two writes, split after 3 bytes" });
  await c.client.sendFragmentedMessage(message, 3);
  await c.response("split");
});
scenario("oversized-frame", "a frame header over the 16 MiB limit: hello_error, then the close", async (open) => {
  const c = await open();
  await c.hello();
  await c.sendRaw(Uint8Array.of(0x01, 0x00, 0x00, 0x01), "frame header announcing 16 MiB + 1 bytes, no payload");
  await c.wait((m) => m.type === "hello_error", "hello_error");
  await c.waitClose();
});
scenario("empty-frame", "a zero-length frame: hello_error, then the close", async (open) => {
  const c = await open();
  await c.hello();
  await c.sendRaw(Uint8Array.of(0, 0, 0, 0), "frame header of length 0");
  await c.wait((m) => m.type === "hello_error", "hello_error");
  await c.waitClose();
});
scenario("empty-request-id", "a request whose id is empty is no client message: hello_error, then the close", async (open) => {
  const c = await open();
  await c.hello();
  const message = { type: "request", id: "", target: c.server(), call: call("demo.echo", "echo") };
  await c.sendUnchecked(message, "request with an empty id");
  await c.wait((m) => m.type === "hello_error", "hello_error");
  await c.waitClose();
});
scenario("incomplete-session-target", "a target with a sessionId but no attachmentId: hello_error, then the close", async (open) => {
  const c = await open();
  await c.hello();
  const message = { type: "request", id: "r1", target: { serverId: c.serverId, sessionId: "session-1" }, call: call("demo.echo", "echo") };
  await c.sendUnchecked(message, "request whose target lacks attachmentId");
  await c.wait((m) => m.type === "hello_error", "hello_error");
  await c.waitClose();
});
scenario(
  "handshake-deadline",
  "no hello within 5 s: hello_error invalid_request `Handshake timeout`, then the close",
  async (open) => {
    const c = await open();
    await c.wait((m) => m.type === "hello_error", "hello_error", HANDSHAKE_WAIT_MS);
    await c.waitClose();
  },
  { slow: true },
);

// ---- fences and the shape of a call
scenario("wrong-server", "a request naming another serverId is answered wrong_server", async (open) => {
  const c = await open();
  await c.hello();
  await c.request({ serverId: OTHER_SERVER_ID }, call("demo.echo", "echo", 1), "r1");
  await c.barrier();
});
scenario("invalid-call", "a call without args is answered invalid_request `Invalid service call`", async (open) => {
  const c = await open();
  await c.hello();
  await c.request(c.server(), { serviceId: "demo.echo", member: "echo" }, "r1");
  await c.request(c.server(), { serviceId: "demo.echo", member: "echo", args: [], extra: true }, "r2");
  await c.request(c.server(), { serviceId: "", member: "echo", args: [] }, "r3");
  await c.request(c.server(), "demo.echo", "r4");
  await c.barrier();
});
scenario("invalid-call-before-fence", "the call's shape is checked before the serverId fence", async (open) => {
  const c = await open();
  await c.hello();
  await c.request({ serverId: OTHER_SERVER_ID }, { serviceId: "demo.echo", member: "echo" }, "r1");
  await c.barrier();
});
scenario("duplicate-in-flight-id", "an id that is still in flight is refused; the first call is still answered", async (open) => {
  const c = await open();
  await c.hello();
  await c.send({ type: "request", id: "dup", target: c.server(), call: call("demo.slow", "wait", 300) });
  await c.send({ type: "request", id: "dup", target: c.server(), call: call("demo.echo", "echo", "second") });
  await c.response("dup");
  await c.response("dup");
  await c.request(c.server(), call("demo.echo", "echo", "reused"), "dup");
});

// ---- server services
scenario("echo", "demo.echo echo(...args) answers {echo: args}", async (open) => {
  const c = await open();
  await c.hello();
  await c.request(c.server(), call("demo.echo", "echo", 1, "two", { three: [3] }, null, true), "r1");
  await c.request(c.server(), call("demo.echo", "echo"), "r2");
});
scenario("unknown-service", "a service nobody offers", async (open) => {
  const c = await open();
  await c.hello();
  await c.request(c.server(), call("demo.nope", "echo"), "r1");
});
scenario("unknown-member", "a member the service does not have", async (open) => {
  const c = await open();
  await c.hello();
  await c.request(c.server(), call("demo.echo", "shout", "x"), "r1");
});
scenario("state-member-called", "calling a state member as a method", async (open) => {
  const c = await open();
  await c.hello();
  await c.request(c.server(), call("demo.counter", "count"), "r1");
});
scenario("singleton-with-instance", "a call with an instance address to a singleton", async (open) => {
  const c = await open();
  await c.hello();
  await c.request(c.server(), { serviceId: "demo.echo", member: "echo", args: [], instance: { key: "k", generation: 1 } }, "r1");
});
scenario("handler-throws", "an unexpected handler failure is hidden as internal_error", async (open) => {
  const c = await open();
  await c.hello();
  await c.request(c.server(), call("pi.session-management", "attach", 42), "r1");
  await c.request(c.server(), call("pi.session-management", "list"), "r2");
  await c.barrier();
});

// ---- cancellation
scenario("cancel", "a cancelled call is answered cancelled", async (open) => {
  const c = await open();
  await c.hello();
  await c.send({ type: "request", id: "slow", target: c.server(), call: call("demo.slow", "wait", 10_000) });
  await sleep(50);
  await c.cancel(c.server(), "slow");
  await c.response("slow");
  await c.barrier();
});
scenario("cancel-unknown-id", "a cancel for no call in flight is ignored", async (open) => {
  const c = await open();
  await c.hello();
  await c.cancel(c.server(), "never-sent");
  await c.barrier();
});
scenario("cancel-other-target", "a cancel whose target is not the call's is ignored", async (open) => {
  const c = await open();
  await c.hello();
  await c.send({ type: "request", id: "slow", target: c.server(), call: call("demo.slow", "wait", 300) });
  await c.cancel({ serverId: OTHER_SERVER_ID }, "slow");
  await c.cancel({ serverId: c.serverId, sessionId: "session-1", attachmentId: "missing-attachment" }, "slow");
  await c.response("slow");
});
scenario("cancel-after-answer", "a cancel after the answer changes nothing", async (open) => {
  const c = await open();
  await c.hello();
  await c.request(c.server(), call("demo.slow", "wait", 1), "quick");
  await c.cancel(c.server(), "quick");
  await c.barrier();
});

// ---- attachments and Sessions
scenario("session-call-unattached", "a Session call without an attachment is session_not_attached", async (open) => {
  const c = await open();
  await c.hello();
  await c.request(c.session("session-1"), call("demo.session", "ping"), "r1");
});
scenario("attach", "attach: the attachment message comes before the (empty) answer", async (open) => {
  const c = await open();
  await c.hello();
  await c.request(c.server(), attachCall("session-1"), "a1");
  await c.request(c.session("session-1"), call("demo.session", "ping", 1), "s1");
});
scenario("attach-twice", "attaching again to the same Session sends no second attachment message", async (open) => {
  const c = await open();
  await c.hello();
  await c.request(c.server(), attachCall("session-1"), "a1");
  await c.request(c.server(), attachCall("session-1"), "a2");
  await c.request(c.session("session-1"), call("demo.session", "ping"), "s1");
  await c.barrier();
});
scenario("attach-detach-attach", "detach announces attachment null; a new attach gets a new attachmentId", async (open) => {
  const c = await open();
  await c.hello();
  await c.request(c.server(), attachCall("session-1"), "a1");
  const first = c.attachmentAt(0);
  await c.request(c.server(), detachCall(), "d1");
  await c.request(first, call("demo.session", "ping"), "s1");
  await c.request(c.server(), attachCall("session-1"), "a2");
  await c.request(c.session("session-1"), call("demo.session", "ping"), "s2");
  await c.request(first, call("demo.session", "ping"), "s3");
});
scenario("detach-unattached", "detach without an attachment answers and announces nothing", async (open) => {
  const c = await open();
  await c.hello();
  await c.request(c.server(), detachCall(), "d1");
  await c.barrier();
});
scenario("switch-session", "attaching to another Session replaces the attachment; the old one is stale", async (open) => {
  const c = await open();
  await c.hello();
  await c.request(c.server(), attachCall("session-1"), "a1");
  const first = c.attachmentAt(0);
  await c.request(c.server(), attachCall("session-2"), "a2");
  await c.request(first, call("demo.session", "ping"), "s1");
  await c.request(c.session("session-2"), call("demo.session", "ping"), "s2");
  await c.request({ ...c.session("session-2"), sessionId: "session-1" }, call("demo.session", "ping"), "s3");
});
scenario("unknown-session", "attach to a Session that does not exist", async (open) => {
  const c = await open();
  await c.hello();
  await c.request(c.server(), attachCall("session-9"), "a1");
  await c.barrier();
});
scenario("detach-with-args", "the stock host takes detach with no arguments only", async (open) => {
  const c = await open();
  await c.hello();
  await c.request(c.server(), call("pi.session-management", "detach", "session-1"), "d1");
  await c.barrier();
});
scenario("subscribe-on-session", "a subscribe sent to a Session: its answer is no snapshot", async (open) => {
  const c = await open();
  await c.hello();
  await c.request(c.server(), attachCall("session-1"), "a1");
  await c.request(c.session("session-1"), control("subscribe", "sub-1", "demo.counter", "singleton"), "s1");
  await c.request(c.session("session-1"), call("demo.session", "ping"), "s2");
});
scenario("two-connections-one-session", "two connections attach the same Session, each with its own attachmentId", async (open) => {
  const a = await open();
  const b = await open();
  await a.hello();
  await b.hello();
  await a.request(a.server(), attachCall("session-1"), "a1");
  await b.request(b.server(), attachCall("session-1"), "b1");
  await a.request(a.session("session-1"), call("demo.session", "ping"), "s1");
  await b.request(a.session("session-1"), call("demo.session", "ping"), "s2");
  await b.request(b.session("session-1"), call("demo.session", "ping"), "s3");
});
scenario("session-target-services", "Session calls go to the Session, not the server's services", async (open) => {
  const c = await open();
  await c.hello();
  await c.request(c.server(), attachCall("session-2"), "a1");
  await c.request(c.session("session-2"), control("catalogue"), "s1");
  await c.request(c.session("session-2"), call("demo.echo", "echo", 1), "s2");
});

// ---- Chord: catalogue and subscriptions
scenario("catalogue", "$chord.service catalogue lists the demo services", async (open) => {
  const c = await open();
  await c.hello();
  await c.request(c.server(), control("catalogue"), "r1");
  await c.request(c.server(), control("catalogue", "extra"), "r2");
});
scenario("subscribe-counter", "subscribe, bump twice (an update before each answer), unsubscribe", async (open) => {
  const c = await open();
  await c.hello();
  await c.request(c.server(), control("subscribe", "sub-1", "demo.counter", "singleton"), "r1");
  await c.request(c.server(), call("demo.counter", "bump", 2), "r2");
  await c.request(c.server(), call("demo.counter", "bump", 3), "r3");
  await c.request(c.server(), call("demo.counter", "bump", 4), "r4");
  await c.request(c.server(), control("unsubscribe", "sub-1"), "r5");
  await c.request(c.server(), call("demo.counter", "bump", 1), "r6");
  await c.barrier();
});
scenario("subscribe-echo", "a service without state members: its snapshot lists the methods", async (open) => {
  const c = await open();
  await c.hello();
  await c.request(c.server(), control("subscribe", "sub-1", "demo.echo", "singleton"), "r1");
});
scenario("subscribe-duplicate-id", "a subscriptionId already in use is refused", async (open) => {
  const c = await open();
  await c.hello();
  await c.request(c.server(), control("subscribe", "sub-1", "demo.echo", "singleton"), "r1");
  await c.request(c.server(), control("subscribe", "sub-1", "demo.slow", "singleton"), "r2");
});
scenario("subscribe-errors", "subscribe to an unknown service or in the wrong mode; unsubscribe an unknown id", async (open) => {
  const c = await open();
  await c.hello();
  await c.request(c.server(), control("subscribe", "sub-1", "demo.nope", "singleton"), "r1");
  await c.request(c.server(), control("subscribe", "sub-2", "demo.counter", "keyed"), "r2");
  await c.request(c.server(), control("subscribe", "sub-3", "demo.counter", "many"), "r3");
  await c.request(c.server(), control("unsubscribe", "sub-9"), "r4");
  await c.request(c.server(), control("shout"), "r5");
  await c.barrier();
});
scenario("subscribe-two-connections", "a bump from one connection reaches another connection's subscription", async (open) => {
  const a = await open();
  const b = await open();
  await a.hello();
  await b.hello();
  await a.request(a.server(), control("subscribe", "sub-1", "demo.counter", "singleton"), "r1");
  await b.request(b.server(), call("demo.counter", "bump", 10), "r1");
  await a.update("sub-1");
  await a.barrier();
});

// ---- running

/** Replaces server-generated values by placeholders, in place order of first appearance. */
function normalizer(serverIds) {
  const attachments = new Map();
  const walk = (value, key) => {
    if (typeof value === "string") {
      if (serverIds.has(value)) return "<serverId>";
      if (key === "attachmentId" && value !== "missing-attachment") {
        if (!attachments.has(value)) attachments.set(value, `<attachment-${attachments.size + 1}>`);
        return attachments.get(value);
      }
      return value;
    }
    if (Array.isArray(value)) return value.map((item) => walk(item));
    if (value !== null && typeof value === "object") {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, k)]));
    }
    return value;
  };
  return walk;
}

function dropMessages(value) {
  if (Array.isArray(value)) return value.map(dropMessages);
  if (value !== null && typeof value === "object") {
    const out = {};
    for (const [key, inner] of Object.entries(value)) {
      if (key === "message" && typeof inner === "string" && ("code" in value)) continue;
      out[key] = dropMessages(inner);
    }
    return out;
  }
  return value;
}

async function runScenario(socket, serverId, entry, loose) {
  const conns = [];
  const open = async () => {
    const client = await connectTo(socket).catch((error) => {
      throw new Stop(`cannot connect to ${socket}: ${error?.code ?? error?.message ?? error}`);
    });
    const conn = new Conn(client, serverId);
    conns.push(conn);
    return conn;
  };
  let stopped;
  try {
    await entry.body(open);
  } catch (error) {
    if (!(error instanceof Stop)) throw error;
    stopped = error.message;
  }
  const transcript = conns.map((conn) => ({
    sent: conn.sent,
    received: [...conn.client.messages],
    closed: conn.client.closed,
  }));
  for (const conn of conns) await conn.client.close();
  const normalize = normalizer(new Set([serverId]));
  let line = { scenario: entry.name, rule: entry.rule, connections: normalize(transcript) };
  if (stopped !== undefined) line.stopped = stopped;
  if (loose) line = dropMessages(line);
  return line;
}

/**
 * A ProtocolTestClient on `address`: a Unix socket path, or `tcp:HOST:PORT` (wired the way
 * pi-server's own `connectUnixTestClient` wires a Unix socket).
 */
async function connectTo(address) {
  if (!address.startsWith("tcp:")) return connectUnixTestClient(address);
  const hostPort = address.slice("tcp:".length);
  const colon = hostPort.lastIndexOf(":");
  const socket = net.createConnection({ host: hostPort.slice(0, colon), port: Number(hostPort.slice(colon + 1)) });
  await once(socket, "connect");
  socket.setNoDelay(true);
  const write = (chunk) => new Promise((resolve, reject) => socket.write(chunk, (e) => (e ? reject(e) : resolve())));
  const client = new ProtocolTestClient({
    send: write,
    async sendFragmented(chunk, splitAt) {
      await write(chunk.subarray(0, splitAt));
      await write(chunk.subarray(splitAt));
    },
    async close() {
      if (socket.destroyed) return;
      const closed = once(socket, "close");
      socket.destroy();
      await closed;
    },
  });
  socket.on("data", (chunk) => client.receive(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength)));
  socket.on("error", (error) => client.fail(error));
  socket.once("close", () => client.markClosed());
  return client;
}

/** Runs the chosen scenarios against one socket; the slow ones run alongside the rest. */
async function runAll(socket, serverId, chosen, loose) {
  const results = new Array(chosen.length);
  const slow = [];
  for (let index = 0; index < chosen.length; index++) {
    if (chosen[index].slow) {
      slow.push(runScenario(socket, serverId, chosen[index], loose).then((line) => (results[index] = line)));
    }
  }
  for (let index = 0; index < chosen.length; index++) {
    if (!chosen[index].slow) results[index] = await runScenario(socket, serverId, chosen[index], loose);
  }
  await Promise.all(slow);
  return results;
}

function chooseScenarios() {
  let chosen = SCENARIOS;
  if (args.only) {
    const names = new Set(args.only.split(","));
    for (const name of names) {
      if (!SCENARIOS.some((s) => s.name === name)) usageError(`unknown scenario ${name} (see --list)`, USAGE);
    }
    chosen = chosen.filter((s) => names.has(s.name));
  }
  if (args["skip-slow"]) chosen = chosen.filter((s) => !s.slow);
  return chosen;
}

function serverIdOf(socket) {
  if (socket.startsWith("tcp:")) return args["server-id"] ?? DEFAULT_SERVER_ID;
  const name = basename(socket);
  return name.endsWith(".sock") ? name.slice(0, -".sock".length) : DEFAULT_SERVER_ID;
}

/** A line diff (longest common subsequence) of two texts, as `-`/`+`/` ` prefixed lines. */
function diffLines(left, right) {
  const a = left.split("\n");
  const b = right.split("\n");
  const table = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      table[i][j] = a[i] === b[j] ? table[i + 1][j + 1] + 1 : Math.max(table[i + 1][j], table[i][j + 1]);
    }
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      out.push(`  ${a[i]}`);
      i++;
      j++;
    } else if (table[i + 1][j] >= table[i][j + 1]) out.push(`- ${a[i++]}`);
    else out.push(`+ ${b[j++]}`);
  }
  while (i < a.length) out.push(`- ${a[i++]}`);
  while (j < b.length) out.push(`+ ${b[j++]}`);
  // Keep CONTEXT unchanged lines around each change; elide the rest.
  const CONTEXT = 4;
  const near = out.map(() => false);
  out.forEach((line, index) => {
    if (line.startsWith("  ")) return;
    for (let k = Math.max(0, index - CONTEXT); k <= Math.min(out.length - 1, index + CONTEXT); k++) near[k] = true;
  });
  const shown = [];
  out.forEach((line, index) => {
    if (near[index]) shown.push(line);
    else if (shown.at(-1) !== "  ...") shown.push("  ...");
  });
  return shown.join("\n");
}

/** A scenario's transcript for people: `a> sent`, `a< received` per connection a, b, ... */
function pretty(line) {
  const out = [`## ${line.scenario}: ${line.rule}${line.stopped ? ` (stopped: ${line.stopped})` : ""}`];
  line.connections.forEach((conn, index) => {
    const label = String.fromCharCode(97 + index);
    for (const message of conn.sent) out.push(`${label}> ${JSON.stringify(message)}`);
    for (const message of conn.received) out.push(`${label}< ${JSON.stringify(message)}`);
    out.push(`${label}: ${conn.closed ? "closed by the server" : "still open at the end"}`);
  });
  return out.join("\n") + "\n";
}

if (args.list) {
  for (const s of SCENARIOS) log({ scenario: s.name, rule: s.rule, ...(s.slow ? { slow: true } : {}) });
  process.exit(0);
}

/**
 * Prints a diff of every scenario whose lines differ between two runs (by scenario name, in
 * the left run's order; a scenario only one side has counts as differing), then a summary
 * line; exits 1 on any difference.
 */
function report(leftName, rightName, leftLines, rightLines) {
  const rightByName = new Map(rightLines.map((line) => [line.scenario, line]));
  const names = [...leftLines.map((line) => line.scenario)];
  for (const line of rightLines) if (!names.includes(line.scenario)) names.push(line.scenario);
  const leftByName = new Map(leftLines.map((line) => [line.scenario, line]));
  let differing = 0;
  const prettyJson = (line) => (line === undefined ? "(no such scenario)" : JSON.stringify(JSON.parse(canonical(line)), null, 1));
  for (const name of names) {
    const l = leftByName.get(name);
    const r = rightByName.get(name);
    if (l !== undefined && r !== undefined && canonical(l) === canonical(r)) continue;
    differing++;
    process.stdout.write(`scenario ${name} differs (- ${leftName}, + ${rightName}):\n`);
    process.stdout.write(diffLines(prettyJson(l), prettyJson(r)) + "\n");
  }
  process.stdout.write(`scenarios: ${names.length - differing} identical, ${differing} differ\n`);
  process.exit(differing === 0 ? 0 : 1);
}

function readRun(file) {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line));
}

if (args.diff) {
  if (args._.length !== 2) usageError("--diff takes exactly two files", USAGE);
  const [left, right] = args._;
  const strip = (lines) => (args.loose ? lines.map(dropMessages) : lines);
  report(left, right, strip(readRun(left)), strip(readRun(right)));
}

const chosen = chooseScenarios();
if (args.compare) {
  if (args._.length !== 2 || args.socket) usageError("--compare takes exactly two socket paths", USAGE);
  const [left, right] = args._;
  const [leftLines, rightLines] = await Promise.all([
    runAll(left, serverIdOf(left), chosen, args.loose),
    runAll(right, serverIdOf(right), chosen, args.loose),
  ]);
  report(left, right, leftLines, rightLines);
} else {
  if (!args.socket || args._.length > 0) usageError("--socket PATH is needed", USAGE);
  const serverId = args["server-id"] ?? serverIdOf(args.socket);
  for (const line of await runAll(args.socket, serverId, chosen, args.loose)) {
    if (args.pretty) process.stdout.write(pretty(line));
    else log(line);
  }
  process.exit(0);
}
