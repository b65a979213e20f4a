// The real @earendil-works/pi-client 0.85.1 run through a user's session against the servers
// in a socket directory: discovery, connect, a demo.echo request, the Chord catalogue, attach
// (and the attachment change it announces), a Session call, a demo.slow call cancelled through
// an AbortSignal, a demo.counter subscription that must deliver the values two bumps make,
// unsubscribe, detach, disconnect and reconnect.
//
// Prints one JSON line per step (`{"client", "step", "ok": true, ...what it saw}`); on the
// first mismatch it prints that step with `"ok": false` and exits with status 1 and a message
// on stderr.
//
// Usage: node real-client.mjs --dir DIR [--server-id UUID] [--session ID] [--bumps N,N]
//                             [--name LABEL] [--shared-counter]
// --server-id: the server to use (default: the only one discovery finds). --session: the
// Session to attach (default session-1). --bumps: the two bump amounts (default 2,3).
// --shared-counter: other clients bump the same counter meanwhile, so the applied values are
// checked for containing this client's bumps in order rather than for exact totals.
import { DEFAULT_SERVER_ID, canonical, load, parseArgs, sameJson, sleep, usageError, within } from "./common.mjs";

const USAGE =
  "usage: real-client.mjs --dir DIR [--server-id UUID] [--session ID] [--bumps N,N] [--name LABEL] [--shared-counter]";
const args = parseArgs(
  process.argv.slice(2),
  { dir: "value", "server-id": "value", session: "value", bumps: "value", name: "value", "shared-counter": "switch" },
  USAGE,
);
if (!args.dir || args._.length > 0) usageError("--dir DIR is needed", USAGE);
const sessionId = args.session ?? "session-1";
const bumps = (args.bumps ?? "2,3").split(",").map(Number);
if (bumps.length !== 2 || !bumps.every((n) => Number.isSafeInteger(n) && n > 0)) {
  usageError("--bumps takes two positive integers, e.g. 2,3", USAGE);
}
const name = args.name ?? "real-client";
const shared = Boolean(args["shared-counter"]);

const { Client, DisconnectedError } = await load("@earendil-works/pi-client");
const { discoverUnixServers, createUnixTransportFactory } = await load("@earendil-works/pi-client", "./unix");
const { apply } = await load("@earendil-works/chord", "./delta");

/** How long any one step may take. */
const STEP_MS = 5_000;

function report(step, saw) {
  process.stdout.write(JSON.stringify({ client: name, step, ok: true, ...saw }) + "\n");
}

function mismatch(step, message, saw = {}) {
  process.stdout.write(JSON.stringify({ client: name, step, ok: false, message, ...saw }) + "\n");
  process.stderr.write(`real-client ${name}: step ${step}: ${message}\n`);
  process.exit(1);
}

function expectEqual(step, what, actual, expected) {
  if (!sameJson(actual, expected)) {
    mismatch(step, `${what}: expected ${canonical(expected)}, saw ${canonical(actual === undefined ? null : actual)}`);
  }
}

/** Runs `body` as one step with a deadline; an unexpected error is a mismatch of that step. */
async function step(label, body) {
  try {
    return await within(STEP_MS, label, body());
  } catch (error) {
    mismatch(label, `${error?.name ?? "Error"}: ${error?.message ?? error}${error?.code ? ` (code ${error.code})` : ""}`);
  }
}

/** Waits (polling every 10 ms, within the step deadline) until `check()` is true. */
async function until(check) {
  while (!check()) await sleep(10);
}

// 1. Discovery: the socket directory holds the server we are to use.
const serverId = await step("discover", async () => {
  const routes = await discoverUnixServers({ directory: args.dir });
  const chosen = args["server-id"] ?? (routes.length === 1 ? routes[0].serverId : undefined);
  if (chosen === undefined) {
    mismatch("discover", `expected exactly one server in ${args.dir} (or --server-id), found ${routes.length}`, { routes });
  }
  if (!routes.some((route) => route.serverId === chosen)) {
    mismatch("discover", `server ${chosen} not found in ${args.dir}`, { routes });
  }
  report("discover", { routes: routes.map((route) => route.serverId) });
  return chosen;
});
const route = { serverId };
const path = `${args.dir}/${serverId}.sock`;

// 2. Connect: the hello names the serverId we dialled (pi-client itself checks it too).
const attachments = [];
const states = [];
const client = await step("connect", async () => {
  const connected = await Client.connect({
    serverId,
    transportFactory: createUnixTransportFactory({ path }),
    onListenerError: (error) => mismatch("listener", `a listener failed: ${error.message}`),
  });
  connected.onAttachmentChange((attachment) => attachments.push(attachment ?? null));
  connected.onConnectionStateChange((change) => states.push(change.state));
  expectEqual("connect", "hello", connected.hello, { type: "hello", version: 8, serverId });
  report("connect", { hello: connected.hello, defaultServerId: serverId === DEFAULT_SERVER_ID });
  return connected;
});

// 3. A server call.
await step("echo", async () => {
  const result = await client.request(route, { serviceId: "demo.echo", member: "echo", args: [name, 1, { nested: [true, null] }] });
  expectEqual("echo", "result", result, { echo: [name, 1, { nested: [true, null] }] });
  report("echo", { result });
});

// 4. The Chord catalogue.
await step("catalogue", async () => {
  const catalogue = await client.serviceCatalogue(route);
  const sorted = [...catalogue].sort((a, b) => a.serviceId.localeCompare(b.serviceId));
  expectEqual("catalogue", "catalogue (sorted)", sorted, [
    { serviceId: "demo.counter", mode: "singleton" },
    { serviceId: "demo.echo", mode: "singleton" },
    { serviceId: "demo.slow", mode: "singleton" },
  ]);
  report("catalogue", { catalogue });
});

// 5. Attach: the attachment change arrives (before the answer) and names our server and Session.
const attachment = await step("attach", async () => {
  const result = await client.request(route, { serviceId: "pi.session-management", member: "attach", args: [sessionId] });
  if (result !== null && result !== undefined) mismatch("attach", `expected no result, saw ${canonical(result)}`);
  const current = client.attachment;
  if (!current) mismatch("attach", "no attachment after attach answered");
  expectEqual("attach", "attachment serverId and sessionId", { serverId: current.serverId, sessionId: current.sessionId }, { serverId, sessionId });
  expectEqual("attach", "attachment changes seen", attachments, [current]);
  report("attach", { sessionId: current.sessionId, attachmentIdLength: current.attachmentId.length, result: result ?? null });
  return current;
});

// 6. Attaching again to the same Session changes nothing.
await step("attach-again", async () => {
  await client.request(route, { serviceId: "pi.session-management", member: "attach", args: [sessionId] });
  await client.request(route, { serviceId: "demo.echo", member: "echo", args: [] });
  expectEqual("attach-again", "attachment", client.attachment, attachment);
  expectEqual("attach-again", "attachment changes seen", attachments.length, 1);
  report("attach-again", { attachmentUnchanged: true });
});

// 7. A Session call on the current attachment.
await step("session-call", async () => {
  const result = await client.request(client.attachment, { serviceId: "demo.session", member: "ping", args: [name] });
  expectEqual("session-call", "result", result, { ok: true });
  report("session-call", { result });
});

// 8. Cancel through an AbortSignal: the call rejects at once; the connection stays usable.
await step("cancel", async () => {
  const controller = new AbortController();
  const started = Date.now();
  const pending = client.request(route, { serviceId: "demo.slow", member: "wait", args: [10_000] }, controller.signal);
  await sleep(100);
  controller.abort();
  const outcome = await pending.then(
    (result) => ({ settled: "resolved", result }),
    (error) => ({ settled: "rejected", name: error?.name }),
  );
  if (outcome.settled !== "rejected" || outcome.name !== "AbortError") {
    mismatch("cancel", `expected an AbortError, saw ${canonical(outcome)}`);
  }
  const after = await client.request(route, { serviceId: "demo.echo", member: "echo", args: ["after-cancel"] });
  expectEqual("cancel", "echo after the cancel", after, { echo: ["after-cancel"] });
  const elapsedUnder2s = Date.now() - started < 2_000;
  if (!elapsedUnder2s) mismatch("cancel", "the cancelled call took 2 s or more to settle");
  report("cancel", { rejected: outcome.name, connectionStillUsable: true });
});

// 9. A demo.counter subscription: apply each update to the snapshot's value and check the
// values our bumps make.
const applied = [];
let value;
let sequence;
const subscription = await step("subscribe", async () => {
  const sub = await client.subscribeService(route, "demo.counter", "singleton", (update) => {
    if (update.type !== "state" || update.member !== "count") {
      mismatch("subscribe", `unexpected update ${canonical(update)}`);
    }
    if (update.sequence !== sequence + 1) {
      mismatch("subscribe", `update sequence ${update.sequence} does not follow ${sequence}`);
    }
    sequence = update.sequence;
    value = apply(structuredClone(value), update.ops);
    applied.push({ sequence, value: structuredClone(value) });
  });
  const members = sub.snapshot.instances[0]?.members ?? [];
  const count = members.find((member) => member.name === "count");
  expectEqual("subscribe", "snapshot shape", { serviceId: sub.snapshot.serviceId, mode: sub.snapshot.mode, instances: sub.snapshot.instances.length, members: members.map((m) => [m.name, m.kind]) }, {
    serviceId: "demo.counter",
    mode: "singleton",
    instances: 1,
    members: [
      ["bump", "method"],
      ["count", "state"],
    ],
  });
  sequence = count.sequence;
  value = apply(undefined, count.ops);
  if (typeof value?.value !== "number" || typeof value?.log !== "string") {
    mismatch("subscribe", `the snapshot's count is not {value, log}: ${canonical(value)}`);
  }
  sub.start();
  report("subscribe", { subscriptionId: sub.id, sequence, value });
  return sub;
});
const initial = structuredClone(value);

await step("bump", async () => {
  for (const n of bumps) {
    const result = await client.request(route, { serviceId: "demo.counter", member: "bump", args: [n] });
    if (result !== undefined && result !== null) mismatch("bump", `expected no result, saw ${canonical(result)}`);
  }
  const mine = bumps.map((n) => `+${n}`).join("");
  if (!shared) {
    await until(() => applied.length >= bumps.length);
    expectEqual("bump", "applied values", applied.map((entry) => entry.value), [
      { value: initial.value + bumps[0], log: `${initial.log}+${bumps[0]}` },
      { value: initial.value + bumps[0] + bumps[1], log: `${initial.log}${mine}` },
    ]);
  } else {
    // Other clients' bumps may come between ours: our two bumps appear in order, and value
    // always equals the initial value plus every increment the log gained.
    await until(() => {
      const suffix = value.log.slice(initial.log.length);
      const tokens = suffix.split("+").filter(Boolean);
      const first = tokens.indexOf(String(bumps[0]));
      return first >= 0 && tokens.indexOf(String(bumps[1]), first + 1) > first;
    });
    for (const entry of applied) {
      if (!entry.value.log.startsWith(initial.log)) mismatch("bump", `the log lost its start: ${canonical(entry.value)}`);
      const gained = entry.value.log
        .slice(initial.log.length)
        .split("+")
        .filter(Boolean)
        .reduce((sum, token) => sum + Number(token), 0);
      if (entry.value.value !== initial.value + gained) mismatch("bump", `value and log disagree: ${canonical(entry.value)}`);
    }
  }
  report("bump", { bumps, applied });
});

await step("unsubscribe", async () => {
  const before = applied.length;
  await subscription.dispose();
  await client.request(route, { serviceId: "demo.echo", member: "echo", args: [] });
  if (!shared && applied.length !== before) mismatch("unsubscribe", "an update arrived after unsubscribe");
  report("unsubscribe", { subscriptionId: subscription.id });
});

// 10. Detach: the attachment change to none; the old attachment is refused.
await step("detach", async () => {
  const result = await client.request(route, { serviceId: "pi.session-management", member: "detach", args: [] });
  if (result !== null && result !== undefined) mismatch("detach", `expected no result, saw ${canonical(result)}`);
  expectEqual("detach", "attachment after detach", client.attachment ?? null, null);
  expectEqual("detach", "attachment changes seen", attachments, [attachment, null]);
  const refused = await client.request(attachment, { serviceId: "demo.session", member: "ping", args: [] }).then(
    () => undefined,
    (error) => error?.code,
  );
  expectEqual("detach", "code for a Session call on the old attachment", refused, "session_not_attached");
  report("detach", { staleAttachmentCode: refused });
});

// 11. Disconnect: calls fail locally; reconnect gives a fresh connection with no attachment.
await step("disconnect", async () => {
  await client.request(route, { serviceId: "pi.session-management", member: "attach", args: [sessionId] });
  const pending = client.request(route, { serviceId: "demo.slow", member: "wait", args: [10_000] }).then(
    () => "resolved",
    (error) => error?.constructor?.name,
  );
  client.disconnect();
  const outcome = await pending;
  expectEqual("disconnect", "pending call outcome", outcome, DisconnectedError.name);
  expectEqual("disconnect", "state", client.connectionState, "disconnected");
  expectEqual("disconnect", "attachment", client.attachment ?? null, null);
  const after = await client.request(route, { serviceId: "demo.echo", member: "echo", args: [] }).then(
    () => "resolved",
    (error) => error?.constructor?.name,
  );
  expectEqual("disconnect", "a call while disconnected", after, DisconnectedError.name);
  report("disconnect", { pendingCall: outcome, state: client.connectionState });
});

await step("reconnect", async () => {
  const hello = await client.reconnect();
  expectEqual("reconnect", "hello", hello, { type: "hello", version: 8, serverId });
  expectEqual("reconnect", "attachment", client.attachment ?? null, null);
  const result = await client.request(route, { serviceId: "demo.echo", member: "echo", args: ["again"] });
  expectEqual("reconnect", "echo", result, { echo: ["again"] });
  await client.dispose();
  report("reconnect", { hello, states });
});
process.exit(0);
