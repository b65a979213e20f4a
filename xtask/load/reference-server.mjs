// The server of `cargo xtask load` on the published TypeScript package: the same services and
// answers as the Rust example server (examples/server.rs), written the way a user of that
// package would: its decoder and encoder, and the connection rules by hand (handshake, fencing
// of other servers and stale routes, cancellation of held calls, attachment routes).
//
// Usage: node reference-server.mjs [--listen HOST:PORT]
// Prints `listening on HOST:PORT`, then nothing; serves until it is stopped.
//
// Each chunk's answers are encoded into one buffer and written with one call; reading pauses
// while the socket's write buffer is full.
import net from "node:net";
import { ClientMessageDecoder, encodeServerMessage, isSupportedProtocolVersion } from "@earendil-works/pi-protocol";

const SERVER_ID = "3b241101-e2bb-4255-8caf-4136c566a962";
const CATALOGUE = [
  { serviceId: "demo.echo", mode: "singleton" },
  { serviceId: "demo.slow", mode: "singleton" },
  { serviceId: "demo.counter", mode: "singleton" },
];

const argv = process.argv.slice(2);
const listenAt = argv[0] === "--listen" ? argv[1] : "127.0.0.1:0";
const [host, port] = [listenAt.slice(0, listenAt.lastIndexOf(":")), Number(listenAt.slice(listenAt.lastIndexOf(":") + 1))];

let connections = 0;

function serve(socket) {
  const conn = ++connections;
  socket.setNoDelay(true);
  const decoder = new ClientMessageDecoder();
  const held = new Map(); // request id -> timer of a `wait` call
  let ready = false;
  let closed = false;
  let route = null;
  let attachments = 0;
  let pending = [];

  const queue = (message) => pending.push(encodeServerMessage(message));
  const answer = (id, result) =>
    queue(result === undefined ? { type: "response", id, ok: true } : { type: "response", id, ok: true, result });
  const refuse = (id, code, message) => queue({ type: "response", id, ok: false, error: { code, message } });
  const flush = () => {
    if (pending.length === 0 || closed) return;
    const bytes = pending.length === 1 ? pending[0] : Buffer.concat(pending);
    pending = [];
    if (!socket.write(bytes)) socket.pause();
  };
  socket.on("drain", () => socket.resume());

  const isCurrentRoute = (target) =>
    route !== null && target.sessionId === route.sessionId && target.attachmentId === route.attachmentId;

  function request(message) {
    const { id, target } = message;
    if (target.serverId !== SERVER_ID) return refuse(id, "wrong_server", "The target names another server");
    if (target.sessionId !== undefined && !isCurrentRoute(target)) {
      return refuse(id, "stale_attachment", "The attachment is no longer current");
    }
    const call = message.call ?? {};
    const args = Array.isArray(call.args) ? call.args : [];
    switch (`${call.serviceId}/${call.member}`) {
      case "$chord.service/catalogue":
        return answer(id, CATALOGUE);
      case "$chord.service/subscribe": {
        const subscriptionId = args[0];
        if (typeof subscriptionId !== "string" || subscriptionId === "") {
          return refuse(id, "bad_arguments", "subscribe needs a subscription id");
        }
        answer(id, { subscriptionId, sequence: 0, sessions: ["s-1", "s-2"] });
        for (let sequence = 1; sequence <= 3; sequence++) {
          queue({ type: "service_update", subscriptionId, update: { type: "state", member: "directory", sequence } });
        }
        return;
      }
      case "$chord.service/unsubscribe":
        return answer(id, null);
      case "sessions/attach": {
        if (args[0] !== "s-1" && args[0] !== "s-2") return refuse(id, "not_found", "No session with that id");
        attachments += 1;
        route = { serverId: SERVER_ID, sessionId: args[0], attachmentId: `att-${conn}-${attachments}` };
        queue({ type: "attachment", attachment: route });
        return answer(id, null);
      }
      case "sessions/detach":
        route = null;
        queue({ type: "attachment", attachment: null });
        return answer(id, undefined);
      case "session/echo":
        return answer(id, { echo: call.args ?? null });
      case "session/wait": {
        const ms = Math.min(typeof args[0] === "number" ? args[0] : 5000, 60000);
        held.set(
          id,
          setTimeout(() => {
            held.delete(id);
            answer(id, { waitedMs: ms });
            flush();
          }, ms),
        );
        return;
      }
      default:
        return refuse(id, "unknown_member", "No such service member");
    }
  }

  function close() {
    if (closed) return;
    flush();
    closed = true;
    for (const timer of held.values()) clearTimeout(timer);
    held.clear();
    socket.end();
  }

  socket.on("data", (chunk) => {
    if (closed) return;
    let messages;
    try {
      messages = decoder.push(chunk);
    } catch {
      return close();
    }
    for (const message of messages) {
      if (!ready) {
        if (message.type !== "hello") return close();
        if (!isSupportedProtocolVersion(message.version)) {
          queue({ type: "hello_error", error: { code: "unsupported_version", message: "This server speaks protocol version 8" } });
          return close();
        }
        ready = true;
        queue({ type: "hello", version: 8, serverId: SERVER_ID });
      } else if (message.type === "request") {
        request(message);
      } else if (message.type === "cancel") {
        const timer = held.get(message.id);
        if (timer !== undefined) {
          clearTimeout(timer);
          held.delete(message.id);
          refuse(message.id, "cancelled", "Request was cancelled by the client");
        }
      } else {
        return close();
      }
    }
    flush();
  });
  socket.on("end", () => {
    try {
      decoder.end();
    } catch {
      // A frame cut short: the connection closes all the same.
    }
    close();
  });
  socket.on("error", () => {
    closed = true;
    for (const timer of held.values()) clearTimeout(timer);
    held.clear();
  });
}

const listener = net.createServer(serve);
listener.listen({ host, port, backlog: 4096 }, () => {
  const address = listener.address();
  process.stdout.write(`listening on ${address.address}:${address.port}\n`);
});
