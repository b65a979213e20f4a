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
// Usage: node real-server.mjs --dir DIR [--server-id UUID] [--handshake-timeout-ms MS]
import { DEFAULT_SERVER_ID, SERVER_ID_PATTERN, fail, load, parseArgs } from "./common.mjs";

const USAGE =
  "usage: real-server.mjs --dir DIR [--server-id UUID] [--handshake-timeout-ms MS]\n" +
  "  serves the real pi-server testing host with the demo Chord services on DIR/<serverId>.sock";

const args = parseArgs(
  process.argv.slice(2),
  { dir: "value", "server-id": "value", "handshake-timeout-ms": "value" },
  USAGE,
);
if (!args.dir || args._.length > 0) {
  process.stderr.write(USAGE + "\n");
  process.exit(2);
}
const serverId = args["server-id"] ?? DEFAULT_SERVER_ID;
if (!SERVER_ID_PATTERN.test(serverId)) fail(`--server-id ${serverId} is not a canonical lowercase UUIDv4`);

const { TestServerHost } = await load("@earendil-works/pi-server", "./testing");
const { createUnixServer, getUnixSocketPath } = await load("@earendil-works/pi-server", "./unix");
const { RemoteServiceProvider, createRemoteServiceEndpoint, defineService, replicatedState } = await load(
  "@earendil-works/chord",
);

// The demo services. A Chord method receives the call's arguments followed by the call's
// Context, so every method takes its Context last.
const echoService = defineService("demo.echo");
const slowService = defineService("demo.slow");
const counterService = defineService("demo.counter");

const provider = new RemoteServiceProvider([echoService, slowService, counterService]);

provider.provide(echoService, {
  async echo(...argsAndContext) {
    return { echo: argsAndContext.slice(0, -1) };
  },
});

provider.provide(slowService, {
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
provider.provide(counterService, {
  count,
  async bump(n, context) {
    count.state.value += n;
    count.state.log += `+${n}`;
    count.publish(context);
  },
});

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
      return {
        invokeService(call, publish, callContext) {
          if (call.serviceId === "pi.session-management") {
            return management.invokeService(call, publish, callContext);
          }
          return endpoint.invoke(call, publish, callContext);
        },
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

const path = getUnixSocketPath(serverId, args.dir);
const options = {
  serverId,
  path,
  onError: (error) => process.stderr.write(`real-server: hidden error: ${error?.message ?? error}\n`),
};
if (args["handshake-timeout-ms"] !== undefined) options.handshakeTimeoutMs = Number(args["handshake-timeout-ms"]);
const server = createUnixServer(host, options);
await server.start();
process.stdout.write(`listening on ${path}\n`);

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
