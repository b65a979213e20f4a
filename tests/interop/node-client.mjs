// A client on the published TypeScript package, talking to the Rust example server.
// Usage: node node-client.mjs --connect HOST:PORT [--via-router yes]
// With --via-router, the address is the Rust example router in front of two example servers
// (SERVER_ID and OTHER_SERVER_ID): the call to OTHER_SERVER_ID is answered by the second server,
// and one more call, to a server nobody serves, gets the router's own unknown_server error.
// Connection 1 offers version 7 and must get hello_error; connection 2 runs a session that makes
// every client message type cross to the server, and makes the server send every message type
// back (including its fencing answers). Logs every message sent and received as JSON lines;
// exits 1 on the first unexpected message.
import assert from "node:assert/strict";
import { ServerMessageDecoder, encodeClientMessage } from "@earendil-works/pi-protocol";
import { NOBODY_SERVER_ID, OTHER_SERVER_ID, SERVER_ID, connect, flags, wrap } from "./common.mjs";

const args = flags(process.argv.slice(2));
const address = args.connect;
const viaRouter = args["via-router"] !== undefined;

async function open(conn) {
  return wrap(await connect(address), conn, ServerMessageDecoder, encodeClientMessage);
}

const server = { serverId: SERVER_ID };
const call = (serviceId, member, args) => ({ serviceId, member, args });
const request = (id, target, c) => ({ type: "request", id, target, call: c });

// 1. An unsupported version: the server names it (code `version`); the router answers itself.
{
  const c = await open(1);
  c.send({ type: "hello", version: 7 });
  const reply = await c.next();
  assert.equal(reply.type, "hello_error");
  assert.equal(reply.error.code, viaRouter ? "unsupported_version" : "version");
  await c.closed;
}

// 2. A whole session, on the services of the example server (issue 22 point 5).
{
  const c = await open(2);
  c.send({ type: "hello", version: 8 });
  assert.deepEqual(await c.next(), { type: "hello", version: 8, serverId: SERVER_ID });

  c.send(request("c-1", server, call("$chord.service", "catalogue", [])));
  let m = await c.next();
  assert.equal(m.type, "response");
  assert.equal(m.id, "c-1");
  assert.equal(m.ok, true);
  assert.deepEqual(m.result.map((e) => e.serviceId), ["demo.echo", "demo.slow", "demo.counter"]);

  c.send(request("c-2", server, call("$chord.service", "subscribe", ["sub-a", "demo.counter", "singleton"])));
  m = await c.next();
  assert.equal(m.id, "c-2");
  assert.equal(m.ok, true);
  assert.equal(m.result.serviceId, "demo.counter");
  const count = m.result.instances[0].members.find((member) => member.name === "count");
  assert.equal(count.kind, "state");
  assert.equal(count.ops[0][0], "r");

  // The update comes before the response of the call that caused it.
  c.send(request("c-11", server, call("demo.counter", "bump", [2])));
  m = await c.next();
  assert.equal(m.type, "service_update");
  assert.equal(m.subscriptionId, "sub-a");
  assert.equal(m.update.sequence, count.sequence + 1);
  m = await c.next();
  assert.equal(m.id, "c-11");
  assert.equal(m.ok, true);

  c.send(request("c-3", server, call("pi.session-management", "attach", ["session-2"])));
  m = await c.next();
  assert.equal(m.type, "attachment");
  const route = m.attachment;
  assert.equal(route.serverId, SERVER_ID);
  assert.equal(route.sessionId, "session-2");
  m = await c.next();
  assert.deepEqual(m, { type: "response", id: "c-3", ok: true, result: null });

  c.send(request("c-4", server, call("demo.echo", "echo", ["hi", 1.5, { nested: [true, null] }])));
  m = await c.next();
  assert.deepEqual(m, { type: "response", id: "c-4", ok: true, result: { echo: ["hi", 1.5, { nested: [true, null] }] } });

  c.send(request("c-12", route, call("demo.echo", "echo", [])));
  assert.deepEqual(await c.next(), { type: "response", id: "c-12", ok: true, result: { ok: true } });

  c.send(request("c-5", server, call("demo.slow", "wait", [30000])));
  c.send({ type: "cancel", id: "c-5", target: server });
  m = await c.next();
  assert.equal(m.id, "c-5");
  assert.equal(m.ok, false);
  assert.deepEqual(m.error, { code: "cancelled", message: "RPC request cancelled" });

  c.send(request("c-6", { serverId: OTHER_SERVER_ID }, call("$chord.service", "catalogue", [])));
  m = await c.next();
  assert.equal(m.id, "c-6");
  if (viaRouter) {
    assert.equal(m.ok, true, "the router sends it to the other server");
    assert.ok(Array.isArray(m.result));
    c.send(request("c-10", { serverId: NOBODY_SERVER_ID }, call("$chord.service", "catalogue", [])));
    m = await c.next();
    assert.equal(m.id, "c-10");
    assert.equal(m.ok, false);
    assert.equal(m.error.code, "unknown_server");
  } else {
    assert.equal(m.ok, false);
    assert.equal(m.error.code, "wrong_server");
  }

  c.send(request("c-7", server, call("pi.session-management", "detach", [])));
  assert.deepEqual(await c.next(), { type: "attachment", attachment: null });
  assert.deepEqual(await c.next(), { type: "response", id: "c-7", ok: true, result: null });

  c.send(request("c-8", route, call("demo.echo", "echo", [])));
  m = await c.next();
  assert.equal(m.id, "c-8");
  assert.equal(m.error.code, "session_not_attached");

  c.send(request("c-9", server, call("$chord.service", "unsubscribe", ["sub-a"])));
  assert.deepEqual(await c.next(), { type: "response", id: "c-9", ok: true });
  assert.equal(c.pending(), 0);
  c.end();
  await c.closed;
}
