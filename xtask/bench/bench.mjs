// Times the published TypeScript pi-protocol package (the reference, 0.85.1) on the frames of
// the Rust benchmarks, so both sides measure the same bytes. Run by `cargo xtask bench-reference`.
//
// Usage: node bench.mjs FRAMES_DIR [--json OUT] [--seconds S]
//   FRAMES_DIR holds manifest.json and <workload>.bin (written by the bench_driver example).
// For each workload it times:
//   decode: a fresh ClientMessageDecoder/ServerMessageDecoder, the stream pushed in one call
//           (or one byte per call for chunk = 1), then end();
//   encode: encodeClientMessage/encodeServerMessage of every decoded message.
// and checks that re-encoding the decoded messages gives the stream back byte for byte, which
// is also a check that the Rust encoder that wrote the frames matches the reference.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  ClientMessageDecoder,
  ServerMessageDecoder,
  encodeClientMessage,
  encodeServerMessage,
} from "@earendil-works/pi-protocol";

const args = process.argv.slice(2);
const dir = args[0];
if (!dir) {
  console.error("usage: node bench.mjs FRAMES_DIR [--json OUT] [--seconds S]");
  process.exit(2);
}
const option = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const jsonOut = option("--json");
const seconds = Number(option("--seconds") ?? 2);

const manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8"));
let sink = 0;

function decodeAll(workload, stream) {
  const decoder = workload.side === "client" ? new ClientMessageDecoder() : new ServerMessageDecoder();
  const messages = [];
  if (workload.chunk) {
    for (let i = 0; i < stream.byteLength; i += workload.chunk) {
      for (const m of decoder.push(stream.subarray(i, i + workload.chunk))) messages.push(m);
    }
  } else {
    for (const m of decoder.push(stream)) messages.push(m);
  }
  decoder.end();
  return messages;
}

function encodeAll(workload, messages) {
  const encode = workload.side === "client" ? encodeClientMessage : encodeServerMessage;
  return messages.map((m) => encode(m));
}

// Mean nanoseconds per call of fn: a short warm-up, then batches until `seconds` have passed
// (at least 3 calls).
function time(fn) {
  const warmUntil = process.hrtime.bigint() + BigInt(Math.round(seconds * 0.25 * 1e9));
  do {
    sink ^= fn();
  } while (process.hrtime.bigint() < warmUntil);
  let calls = 0;
  const start = process.hrtime.bigint();
  const stop = start + BigInt(Math.round(seconds * 1e9));
  let now = start;
  while (now < stop || calls < 3) {
    sink ^= fn();
    calls++;
    now = process.hrtime.bigint();
  }
  return Number(now - start) / calls;
}

const fmt = (x) => (x >= 1e6 ? `${(x / 1e6).toFixed(2)}M` : x >= 1e4 ? `${(x / 1e3).toFixed(0)}k` : x.toFixed(x >= 100 ? 0 : 2));
const results = [];
console.log(`TypeScript @earendil-works/pi-protocol 0.85.1 on node ${process.version}`);
console.log("workload        op      time/iter       MB/s      msg/s  byte-exact");
for (const workload of manifest) {
  const stream = new Uint8Array(readFileSync(join(dir, workload.file)));
  const messages = decodeAll(workload, stream);
  if (messages.length !== workload.messages) {
    throw new Error(`${workload.name}: decoded ${messages.length} messages, expected ${workload.messages}`);
  }
  const frames = encodeAll(workload, messages);
  const joined = Buffer.concat(frames.map((f) => Buffer.from(f.buffer, f.byteOffset, f.byteLength)));
  const exact = Buffer.compare(joined, Buffer.from(stream)) === 0;
  const result = { name: workload.name, bytes: workload.bytes, messages: workload.messages, byte_exact: exact };
  result.decode_ns = time(() => decodeAll(workload, stream).length);
  if (!workload.chunk) result.encode_ns = time(() => encodeAll(workload, messages).length);
  for (const op of ["decode", "encode"]) {
    const ns = result[`${op}_ns`];
    if (ns === undefined) continue;
    const perSecond = 1e9 / ns;
    const line = [
      workload.name.padEnd(15),
      op.padEnd(6),
      `${(ns / 1e3).toFixed(2)} µs`.padStart(12),
      fmt((workload.bytes * perSecond) / 1e6).padStart(10),
      fmt(workload.messages * perSecond).padStart(10),
      exact ? "yes" : "NO",
    ];
    console.log(line.join(" "));
  }
  results.push(result);
}
if (jsonOut) writeFileSync(jsonOut, JSON.stringify({ node: process.version, package: "0.85.1", results }, null, 2) + "\n");
if (sink === 0.5) console.log(sink); // keeps the timed results observable
if (results.some((r) => !r.byte_exact)) {
  console.error("some workload did not re-encode byte for byte");
  process.exit(1);
}
