// A real @earendil-works/pi-server 0.85.1 on a Unix socket: its testing host (`TestServerHost`,
// Sessions `session-1` and `session-2`, Session calls answered `{"ok": true}`) with a Chord
// `RemoteServiceProvider` put behind `createRemoteServiceEndpoint` in the host's server services,
// offering the demo services of issue 22 point 5:
//
//   pi.session-management  attach [sessionId] / detach []       (the stock testing host's)
//   demo.echo              echo(...args)  -> {"echo": args}
//   demo.slow              wait(ms)       -> {"waitedMs": ms}, unless cancelled first
//   demo.counter           state count {value, log} (initially {value: 0, log: ""});
//                          bump(n) adds n to value, appends "+n" to log, answers no result
//
// plus the `$chord.service` control calls (catalogue, subscribe, unsubscribe) Chord answers for
// them. The first stdout line is `listening on PATH` (PATH = DIR/<serverId>.sock); the server
// exits on SIGTERM or SIGINT after closing, which unlinks its socket. Errors the server hides
// from the wire (internal_error) are printed on stderr.
//
// With `--listen HOST:PORT` instead of `--dir`, the same server listens on TCP (through a
// small `ServerListener` of this script's: pi-server itself ships only the Unix one) and prints
// `listening on HOST:PORT` (port 0 picks a free port): the peer of `cargo xtask load`.
// `--services load` offers, instead of the demo services, the ones the load generator
// (examples/load) calls: `sessions` and `session` (with `echo(...args)` answering {echo: args}),
// both singletons, so the catalogue has the two entries it expects; and it answers each
// connection's calls in the order they came, as that generator checks (pi-server itself answers
// a call when its handler settles, which reorders pipelined calls of different depths).
//
// Usage: node real-server.mjs (--dir DIR | --listen HOST:PORT) [--server-id UUID]
//                             [--services demo|load] [--handshake-timeout-ms MS] [--quiet]
// --quiet: no stderr line for the errors the server hides (a peer gone mid-write, ...).
import net from "node:net";
import { DEFAULT_SERVER_ID, SERVER_ID_PATTERN, fail, load, parseArgs } from "./common.mjs";

const USAGE =
  "usage: real-server.mjs (--dir DIR | --listen HOST:PORT) [--server-id UUID] [--services demo|load] [--handshake-timeout-ms MS] [--quiet]\n" +
  "  serves the real pi-server testing host with the demo Chord services on DIR/<serverId>.sock (or TCP)";

const args = parseArgs(
  process.argv.slice(2),
  { dir: "value", listen: "value", "server-id": "value", services: "value", "handshake-timeout-ms": "value", quiet: "switch" },
  USAGE,
);
if (Boolean(args.dir) === Boolean(args.listen) || args._.length > 0) {
  process.stderr.write(USAGE + "\n");
  process.exit(2);
}
const profile = args.services ?? "demo";
if (profile !== "demo" && profile !== "load") fail(`--services ${profile}: expected demo or load`);
const serverId = args["server-id"] ?? DEFAULT_SERVER_ID;
if (!SERVER_ID_PATTERN.test(serverId)) fail(`--server-id ${serverId} is not a canonical lowercase UUIDv4`);

const { TestServerHost, createTestServer } = await load("@earendil-works/pi-server", "./testing");
const { createUnixServer, getUnixSocketPath } = await load("@earendil-works/pi-server", "./unix");
const { RemoteServiceProvider, createRemoteServiceEndpoint, defineService, replicatedState } = await load(
  "@earendil-works/chord",
);

// The services. A Chord method receives the call's arguments followed by the call's Context,
// so every method takes its Context last.
const provider = profile === "demo" ? demoServices() : loadServices();

function demoServices() {
  const echoService = defineService("demo.echo");
  const slowService = defineService("demo.slow");
  const counterService = defineService("demo.counter");
  const services = new RemoteServiceProvider([echoService, slowService, counterService]);
  services.provide(echoService, { echo });
  services.provide(slowService, {
    wait(ms, context) {
      return new Promise((resolve, reject) => {
        const signal = context.abortSignal;
        if (signal?.aborted) {
          reject(signal.reason);
          return;
        }
        const timer = setTimeout(() => {
          signal?.removeEventListener("abort", onAbort);
          resolve({ waitedMs: ms });
        }, ms);
        const onAbort = () => {
          clearTimeout(timer);
          reject(signal.reason);
        };
        signal?.addEventListener("abort", onAbort, { once: true });
      });
    },
  });
  // One counter for the whole server: every connection's subscription sees every bump.
  const count = replicatedState({ value: 0, log: "" });
  services.provide(counterService, {
    count,
    async bump(n, context) {
      count.state.value += n;
      count.state.log += `+${n}`;
      count.publish(context);
    },
  });
  return services;
}

function loadServices() {
  const sessionsService = defineService("sessions");
  const sessionService = defineService("session");
  const services = new RemoteServiceProvider([sessionsService, sessionService]);
  services.provide(sessionsService, { echo });
  services.provide(sessionService, { echo });
  return services;
}

async function echo(...argsAndContext) {
  return { echo: argsAndContext.slice(0, -1) };
}

// The stock testing host, with its server services replaced by one that keeps the stock
// `pi.session-management` and hands every other server call (the demo services and the
// `$chord.service` controls) to one Chord endpoint per connection.
const stock = new TestServerHost();
await stock.seed("session-1");
await stock.seed("session-2");

const host = {
  serverServices: {
    async attachClient(presentation, context) {
      const management = await stock.serverServices.attachClient(presentation, context);
      const endpoint = createRemoteServiceEndpoint(provider);
      const invoke = (call, publish, callContext) =>
        call.serviceId === "pi.session-management"
          ? management.invokeService(call, publish, callContext)
          : endpoint.invoke(call, publish, callContext);
      // pi-server answers each call when its handler settles, so pipelined calls whose handlers
      // take different numbers of promise steps (a catalogue, an echo) are answered out of
      // order. The load generator checks answers in order, so the load profile settles this
      // connection's calls in the order they came (one promise chain per connection).
      let tail = Promise.resolve();
      const inOrder = (call, publish, callContext) => {
        const result = invoke(call, publish, callContext);
        const ordered = tail.then(() => result);
        tail = ordered.catch(() => {});
        return ordered;
      };
      return {
        invokeService: profile === "load" ? inOrder : invoke,
        release(releaseContext) {
          endpoint.dispose();
          return management.release(releaseContext);
        },
      };
    },
  },
  resolveSession: (sessionId, context) => stock.resolveSession(sessionId, context),
  openSession: (metadata, context) => stock.openSession(metadata, context),
};

const onError = (error) => {
  if (!args.quiet) process.stderr.write(`real-server: hidden error: ${error?.message ?? error}\n`);
};
const handshakeTimeoutMs =
  args["handshake-timeout-ms"] === undefined ? undefined : Number(args["handshake-timeout-ms"]);
let server;
let where;
if (args.dir) {
  where = getUnixSocketPath(serverId, args.dir);
  server = createUnixServer(host, { serverId, path: where, onError, handshakeTimeoutMs });
  await server.start();
} else {
  const listener = tcpListener(args.listen);
  server = createTestServer({ host, serverId, listeners: [listener], onError, handshakeTimeoutMs }).server;
  await server.start();
  where = listener.address();
}
process.stdout.write(`listening on ${where}\n`);

/**
 * A pi-server `ServerListener` on TCP: every accepted socket becomes a `ByteConnection` (send
 * resolves once the bytes are handed to the socket; close writes the last chunk and ends).
 */
function tcpListener(listenAt) {
  const colon = listenAt.lastIndexOf(":");
  const [hostname, port] = [listenAt.slice(0, colon), Number(listenAt.slice(colon + 1))];
  const sockets = new Set();
  let listening;
  return {
    address() {
      const bound = listening.address();
      return `${bound.address}:${bound.port}`;
    },
    start(accept) {
      listening = net.createServer((socket) => {
        socket.setNoDelay(true);
        sockets.add(socket);
        let closed = false;
        const connection = {
          get closed() {
            return closed;
          },
          send(chunk) {
            if (closed) return Promise.reject(new Error("TCP connection is closed"));
            return new Promise((resolve, reject) => socket.write(chunk, (error) => (error ? reject(error) : resolve())));
          },
          close(finalChunk) {
            if (closed) return undefined;
            closed = true;
            return new Promise((resolve) => {
              socket.once("close", resolve);
              if (finalChunk) socket.end(finalChunk);
              else socket.end();
              setTimeout(() => socket.destroy(), 5_000).unref();
            });
          },
        };
        const handler = accept(connection);
        socket.on("data", (chunk) => handler.onData(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength)));
        socket.on("error", (error) => {
          handler.onError(error);
          socket.destroy();
        });
        socket.once("close", () => {
          closed = true;
          sockets.delete(socket);
          handler.onClose();
        });
      });
      return new Promise((resolve, reject) => {
        listening.once("error", reject);
        listening.listen(port, hostname, () => {
          listening.off("error", reject);
          resolve();
        });
      });
    },
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => listening.close(() => resolve()));
    },
  };
}

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  try {
    await server.close();
    provider.dispose();
    process.exit(0);
  } catch (error) {
    process.stderr.write(`real-server: shutdown failed: ${error?.stack ?? error}\n`);
    process.exit(1);
  }
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
