// A recording proxy between Unix-socket peers: listens on DIR/<serverId>.sock, connects every
// client it accepts to UPSTREAM, passes the bytes through unchanged both ways, and prints every
// message it sees as one JSON line `{"conn", "from": "client"|"server", "message"}`, decoded
// with @earendil-works/pi-protocol's own decoders (a frame they refuse is printed as
// `{"conn", "from", "decodeError"}` and the bytes still pass). To see what a real program sends
// and receives on the wire, e.g. the real pi-client through its discovery of DIR.
//
// Usage: node tap.mjs --dir DIR --upstream SOCKET [--server-id UUID]
// The serverId defaults to UPSTREAM's file name (<serverId>.sock). The first stdout line is
// `listening on PATH`; it runs until SIGTERM or SIGINT.
import { mkdirSync, rmSync } from "node:fs";
import net from "node:net";
import { basename, join } from "node:path";
import { load, log, parseArgs, usageError } from "./common.mjs";

const USAGE = "usage: tap.mjs --dir DIR --upstream SOCKET [--server-id UUID]";
const args = parseArgs(process.argv.slice(2), { dir: "value", upstream: "value", "server-id": "value" }, USAGE);
if (!args.dir || !args.upstream || args._.length > 0) usageError("--dir and --upstream are needed", USAGE);
const serverId = args["server-id"] ?? basename(args.upstream).replace(/\.sock$/, "");

const { ClientMessageDecoder, ServerMessageDecoder } = await load("@earendil-works/pi-protocol");

/** Decodes one direction's bytes as they pass and prints each message. */
function recorder(conn, from, Decoder) {
  const decoder = new Decoder();
  let broken = false;
  return (chunk) => {
    if (broken) return;
    try {
      for (const message of decoder.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))) {
        log({ conn, from, message });
      }
    } catch (error) {
      broken = true;
      log({ conn, from, decodeError: String(error?.message ?? error) });
    }
  };
}

mkdirSync(args.dir, { recursive: true, mode: 0o700 });
const path = join(args.dir, `${serverId}.sock`);
rmSync(path, { force: true });
let connections = 0;
const server = net.createServer((client) => {
  const conn = ++connections;
  const upstream = net.createConnection(args.upstream);
  const fromClient = recorder(conn, "client", ClientMessageDecoder);
  const fromServer = recorder(conn, "server", ServerMessageDecoder);
  client.on("data", (chunk) => {
    fromClient(chunk);
    upstream.write(chunk);
  });
  upstream.on("data", (chunk) => {
    fromServer(chunk);
    client.write(chunk);
  });
  client.on("end", () => upstream.end());
  upstream.on("end", () => client.end());
  client.on("close", () => {
    log({ conn, from: "client", closed: true });
    upstream.destroy();
  });
  upstream.on("close", () => {
    log({ conn, from: "server", closed: true });
    client.destroy();
  });
  client.on("error", () => {});
  upstream.on("error", () => {});
});
server.listen(path, () => process.stdout.write(`listening on ${path}\n`));
const stop = () => server.close(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
