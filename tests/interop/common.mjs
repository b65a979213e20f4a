// Shared helpers of the interop scripts: a message-level view of one TCP connection, and logging.
import net from "node:net";

export const SERVER_ID = "3b241101-e2bb-4255-8caf-4136c566a962";
export const OTHER_SERVER_ID = "9f0e8d7c-6b5a-4c3d-9e2f-1a0b9c8d7e6f";
export const NOBODY_SERVER_ID = "c56a4180-65aa-42ec-a945-5fd21dec0538";

/** Prints one JSON object a line on stdout. */
export function log(entry) {
  process.stdout.write(JSON.stringify(entry) + "\n");
}

/**
 * Wraps a socket: `send(message)` encodes and writes, `next()` resolves to the next decoded message
 * (rejecting when the stream ends first), `closed` resolves when the peer closed.
 */
export function wrap(socket, conn, Decoder, encode) {
  const decoder = new Decoder();
  const queue = [];
  const raw = [];
  let wake = null;
  let ended = false;
  let failure = null;
  let onClosed;
  const closed = new Promise((resolve) => (onClosed = resolve));
  const poke = () => {
    const w = wake;
    wake = null;
    if (w) w();
  };
  socket.on("data", (chunk) => {
    raw.push(Buffer.from(chunk));
    try {
      for (const message of decoder.push(new Uint8Array(chunk))) {
        log({ conn, received: message });
        queue.push(message);
      }
    } catch (error) {
      failure = error;
      log({ conn, decodeError: String(error) });
      socket.destroy();
    }
    poke();
  });
  const finish = () => {
    if (!ended) {
      ended = true;
      log({ conn, receivedBytes: Buffer.concat(raw).toString("hex") });
      try {
        decoder.end();
      } catch (error) {
        failure = failure ?? error;
      }
      onClosed();
      poke();
    }
  };
  socket.on("end", finish);
  socket.on("close", finish);
  socket.on("error", (error) => {
    failure = failure ?? error;
    finish();
  });
  return {
    send(message) {
      log({ conn, sent: message });
      socket.write(encode(message));
    },
    async next() {
      while (queue.length === 0) {
        if (failure) throw failure;
        if (ended) throw new Error(`connection ${conn} ended while a message was awaited`);
        await new Promise((resolve) => (wake = resolve));
      }
      return queue.shift();
    },
    pending: () => queue.length,
    closed,
    end: () => socket.end(),
  };
}

/** Parses `--flag value` pairs. */
export function flags(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i += 2) out[argv[i].replace(/^--/, "")] = argv[i + 1];
  return out;
}

export function connect(address) {
  const at = address.lastIndexOf(":");
  const socket = net.connect({ host: address.slice(0, at), port: Number(address.slice(at + 1)) });
  return new Promise((resolve, reject) => {
    socket.once("connect", () => resolve(socket));
    socket.once("error", reject);
  });
}
