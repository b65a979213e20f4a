// Asserts what each side of the three interop runs received, and prints which message types crossed
// in each direction. Usage: node check.mjs LOG_DIR
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { encodeClientMessage, encodeServerMessage } from "@earendil-works/pi-protocol";
import { OTHER_SERVER_ID, SERVER_ID } from "./common.mjs";

const dir = process.argv[2];
const lines = (name) =>
  readFileSync(join(dir, name), "utf8")
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l));
const kind = (m) =>
  m.type === "response" ? `response (${m.ok ? "ok" : "error"})` : m.type === "attachment" ? `attachment (${m.attachment ? "route" : "null"})` : m.type;
const kinds = (messages) => [...new Set(messages.map(kind))].sort();

const nodeClient = lines("node-client.log");
const rustServer = lines("rust-server.log");
const nodeServer = lines("node-server.log");
const rustClient = lines("rust-client.log");
const rustClientV7 = lines("rust-client-v7.log");

// ---- TypeScript client -> Rust server: client messages.
const nodeSent = nodeClient.filter((e) => e.sent).map((e) => e.sent);
assert.deepEqual(kinds(nodeSent), ["cancel", "hello", "request"]);
const byEvent = (event, conn) => rustServer.filter((e) => e.event === event && e.conn === conn);
assert.equal(byEvent("closing", 1)[0]?.offeredVersion, 7, "the Rust server saw hello version 7");
assert.equal(byEvent("ready", 2).length, 1, "the Rust server saw hello version 8");
const admitted = byEvent("request", 2).map((e) => e.message);
assert.deepEqual(admitted.map((m) => m.id), ["c-1", "c-2", "c-11", "c-3", "c-4", "c-12", "c-5", "c-7", "c-9"]);
for (const message of admitted) {
  const sent = nodeSent.find((m) => m.type === "request" && m.id === message.id);
  assert.deepEqual(message, sent, `request ${message.id} arrived as sent`);
}
assert.deepEqual(byEvent("fenced", 2).map((e) => [e.id, e.reason]), [["c-6", "WrongServer"], ["c-8", "StaleRoute"]]);
assert.deepEqual(byEvent("cancel", 2).map((e) => e.id), ["c-5"]);

// ---- Rust server -> TypeScript client: server messages (node-client.mjs asserted their content).
const nodeReceived = nodeClient.filter((e) => e.received).map((e) => e.received);
const serverKinds = ["attachment (null)", "attachment (route)", "hello", "hello_error", "response (error)", "response (ok)", "service_update"];
assert.deepEqual(kinds(nodeReceived), serverKinds);

// ---- Rust client -> TypeScript server: client messages.
const tsReceived = nodeServer.filter((e) => e.received);
const received1 = tsReceived.filter((e) => e.conn === 1).map((e) => e.received);
const received2 = tsReceived.filter((e) => e.conn === 2).map((e) => e.received);
assert.deepEqual(received1[0], { type: "hello", version: 8 });
assert.deepEqual(received2, [{ type: "hello", version: 7 }]);
assert.deepEqual(kinds(received1), ["cancel", "hello", "request"]);
assert.deepEqual(
  received1.filter((m) => m.type === "request").map((m) => m.id),
  ["req-1", "req-2", "req-3", "req-4", "req-5", "req-6", "req-7"],
);
const cancel = received1.find((m) => m.type === "cancel");
assert.equal(cancel.id, "req-5");
assert.equal(cancel.target.attachmentId, "node-att-1", "the cancel carries the request's session route");
assert.equal(received1.find((m) => m.id === "req-4").target.attachmentId, "node-att-1", "session calls follow the published route");

// ---- TypeScript server -> Rust client: server messages, as the client's events.
const events = rustClient.filter((e) => e.event);
assert.deepEqual(events[0], { event: "ready", serverId: "3b241101-e2bb-4255-8caf-4136c566a962" });
const tsSent = nodeServer.filter((e) => e.sent && e.conn === 1).map((e) => e.sent);
// The Client hands out answers, not ids, and drops the late answer to the call it cancelled
// (as pi-client does): every other response, in order.
const cancelledId = received1.find((m) => m.type === "cancel").id;
const responses = tsSent.filter((m) => m.type === "response" && m.id !== cancelledId);
const rustResponses = events.filter((e) => e.event === "response");
assert.equal(rustResponses.length, responses.length);
assert.equal(rustClient.find((e) => e.local === "cancel sent")?.call, "wait");
for (const [i, r] of responses.entries()) {
  const e = rustResponses[i];
  assert.equal(e.ok, r.ok);
  if (r.ok) assert.deepEqual(e.result, r.result);
  else assert.deepEqual(e.error, r.error);
}
assert.deepEqual(events.filter((e) => e.event === "update").map((e) => e.update.sequence), [1, 2, 3]);
assert.deepEqual(events.filter((e) => e.event === "attachment").map((e) => e.route?.attachmentId ?? null), ["node-att-1", null]);
assert.equal(rustClient.find((e) => e.local === "session call refused")?.local, "session call refused");
assert.equal(rustClientV7.find((e) => e.event === "rejected")?.error.code, "unsupported_version");
const tsSentKinds = kinds(nodeServer.filter((e) => e.sent).map((e) => e.sent));
assert.deepEqual(tsSentKinds, serverKinds);

// ---- Byte level: what each TypeScript side read from the Rust side is exactly what the TypeScript
// encoder produces for the same messages (same key order, same number encodings).
function sameBytes(log, encode, who) {
  for (const conn of new Set(log.filter((e) => e.conn).map((e) => e.conn))) {
    const bytes = log.find((e) => e.conn === conn && e.receivedBytes !== undefined)?.receivedBytes;
    assert.ok(bytes !== undefined, `${who} logged the bytes of connection ${conn}`);
    const expected = log
      .filter((e) => e.conn === conn && e.received)
      .map((e) => Buffer.from(encode(e.received)).toString("hex"))
      .join("");
    assert.equal(bytes, expected, `${who}, connection ${conn}: the Rust bytes differ from the TypeScript encoding`);
  }
}
sameBytes(nodeClient, encodeServerMessage, "TypeScript client");
sameBytes(nodeServer, encodeClientMessage, "TypeScript server");

// ---- TypeScript client -> Rust router -> two Rust servers.
const viaRouter = lines("node-client-router.log");
const serverA = lines("router-server-a.log");
const serverB = lines("router-server-b.log");
const router = lines("router.log");
const routedSent = viaRouter.filter((e) => e.conn === 2 && e.sent?.type === "request").map((e) => e.sent);
const upstreamConn = 2; // server A's first connection is the router asking for its serverId
const reached = (log, conn) => log.filter((e) => e.event === "request" && e.conn === conn).map((e) => e.message);
const routedA = reached(serverA, upstreamConn);
const routedB = reached(serverB, 1);
// Each request reached the server its target names, with the same target and call, under an id
// of the router's: c-6 went to B, c-8 was fenced by A (stale route), c-10 stopped at the router.
const toA = routedSent.filter((m) => m.target.serverId === SERVER_ID);
const upstreamId = (clientId) => `req-${toA.findIndex((m) => m.id === clientId) + 1}`; // the router's ids count up
const expectA = toA.filter((m) => m.id !== "c-8");
const expectB = routedSent.filter((m) => m.target.serverId === OTHER_SERVER_ID);
const strip = (m) => ({ target: m.target, call: m.call });
assert.deepEqual(routedA.map(strip), expectA.map(strip), "the requests for A arrived as sent");
assert.deepEqual(routedB.map(strip), expectB.map(strip), "the request for B arrived as sent");
assert.deepEqual(routedA.map((m) => m.id), expectA.map((m) => upstreamId(m.id)), "under ids of the router's");
assert.deepEqual(routedB.map((m) => m.id), ["req-1"]);
const fencedA = serverA.filter((e) => e.event === "fenced" && e.conn === upstreamConn);
assert.deepEqual(fencedA.map((e) => [e.id, e.reason]), [[upstreamId("c-8"), "StaleRoute"]]);
const cancelsA = serverA.filter((e) => e.event === "cancel" && e.conn === upstreamConn);
assert.deepEqual(cancelsA.map((e) => e.id), [upstreamId("c-5")], "the cancel followed its request");
assert.equal(router.filter((e) => e.event === "refused" && e.reason === "UnknownServer").length, 1);
assert.equal(router.filter((e) => e.event === "client_closed").length, 2);
const routedReceived = viaRouter.filter((e) => e.received).map((e) => e.received);
assert.deepEqual(kinds(routedReceived), serverKinds);
sameBytes(viaRouter, encodeServerMessage, "TypeScript client through the router");

process.stdout.write(
  [
    "interop: every assertion held; the Rust frames are byte-identical to the TypeScript encoder's",
    `  TypeScript client -> Rust server: ${kinds(nodeSent).join(", ")}`,
    `  Rust server -> TypeScript client: ${kinds(nodeReceived).join(", ")}`,
    `  Rust client -> TypeScript server: ${kinds([...received1, ...received2]).join(", ")}`,
    `  TypeScript server -> Rust client: ${tsSentKinds.join(", ")}`,
    `  TypeScript client -> Rust router -> Rust servers A and B: ${kinds(viaRouter.filter((e) => e.sent).map((e) => e.sent)).join(", ")}`,
    `  Rust servers -> Rust router -> TypeScript client: ${kinds(routedReceived).join(", ")}`,
  ].join("\n") + "\n",
);
