// A small server on the published TypeScript package, for the Rust example client.
// Usage: node node-server.mjs --connections N
// Prints `listening on HOST:PORT`, then logs every message sent and received as JSON lines; exits
// after N connections have closed. It offers the same services as the Rust example server:
// catalogue, subscribe (three service_updates follow), unsubscribe, attach/detach (routes
// published with attachment messages), session echo and wait (held until cancelled).
import net from "node:net";
import { ClientMessageDecoder, encodeServerMessage, isSupportedProtocolVersion } from "@earendil-works/pi-protocol";
import { SERVER_ID, flags, log, wrap } from "./common.mjs";

const limit = Number(flags(process.argv.slice(2)).connections ?? 1);
let accepted = 0;
let finished = 0;

const sameRoute = (a, b) =>
  a !== null && b.sessionId !== undefined && a.serverId === b.serverId && a.sessionId === b.sessionId && a.attachmentId === b.attachmentId;

async function serve(socket, conn) {
  const c = wrap(socket, conn, ClientMessageDecoder, encodeServerMessage);
  const fail = (id, code, message) => c.send({ type: "response", id, ok: false, error: { code, message } });
  let route = null;
  let attachments = 0;
  const waiting = new Map();
  try {
    const hello = await c.next();
    if (hello.type !== "hello") throw new Error("first message must be hello");
    if (!isSupportedProtocolVersion(hello.version)) {
      c.send({ type: "hello_error", error: { code: "unsupported_version", message: "This server speaks protocol version 8" } });
      c.end();
      return;
    }
    c.send({ type: "hello", version: 8, serverId: SERVER_ID });
    for (;;) {
      const m = await c.next();
      if (m.type === "cancel") {
        const timer = waiting.get(m.id);
        if (timer !== undefined) {
          clearTimeout(timer);
          waiting.delete(m.id);
          fail(m.id, "cancelled", "Request was cancelled by the client");
        }
        continue;
      }
      if (m.type !== "request") throw new Error(`unexpected ${m.type}`);
      if (m.target.serverId !== SERVER_ID) {
        fail(m.id, "wrong_server", "The target names another server");
        continue;
      }
      if (m.target.sessionId !== undefined && !sameRoute(route, m.target)) {
        fail(m.id, "stale_attachment", "The attachment is no longer current");
        continue;
      }
      const { serviceId, member, args = [] } = m.call ?? {};
      const ok = (result) => c.send(result === undefined ? { type: "response", id: m.id, ok: true } : { type: "response", id: m.id, ok: true, result });
      const key = `${serviceId}.${member}`;
      if (key === "$chord.service.catalogue") {
        ok([{ serviceId: "sessions", mode: "singleton" }, { serviceId: "session", mode: "keyed" }]);
      } else if (key === "$chord.service.subscribe") {
        ok({ subscriptionId: args[0], sequence: 0 });
        for (let sequence = 1; sequence <= 3; sequence++) {
          c.send({ type: "service_update", subscriptionId: args[0], update: { type: "state", sequence } });
        }
      } else if (key === "$chord.service.unsubscribe") {
        ok(null);
      } else if (key === "sessions.attach") {
        attachments += 1;
        route = { serverId: SERVER_ID, sessionId: String(args[0]), attachmentId: `node-att-${attachments}` };
        c.send({ type: "attachment", attachment: route });
        ok(null);
      } else if (key === "sessions.detach") {
        route = null;
        c.send({ type: "attachment", attachment: null });
        ok(undefined);
      } else if (key === "session.echo") {
        ok({ echo: args });
      } else if (key === "session.wait") {
        const id = m.id;
        waiting.set(id, setTimeout(() => {
          waiting.delete(id);
          c.send({ type: "response", id, ok: true, result: { waitedMs: args[0] } });
        }, Math.min(Number(args[0]) || 5000, 60000)));
      } else {
        fail(m.id, "unknown_member", "No such service member");
      }
    }
  } catch (error) {
    if (!String(error).includes("ended while a message was awaited")) log({ conn, error: String(error) });
  } finally {
    for (const timer of waiting.values()) clearTimeout(timer);
    socket.end();
    await c.closed; // the peer's close: every byte it sent has been read and logged
  }
}

const listener = net.createServer((socket) => {
  accepted += 1;
  const conn = accepted;
  if (accepted >= limit) listener.close();
  serve(socket, conn).finally(() => {
    finished += 1;
    if (finished >= limit) process.exit(0);
  });
});
listener.listen(0, "127.0.0.1", () => {
  const { address, port } = listener.address();
  process.stdout.write(`listening on ${address}:${port}\n`);
});
