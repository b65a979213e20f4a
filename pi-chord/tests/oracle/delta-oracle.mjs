// The differential oracle of pi-chord's Delta: answers one JSON request per input line with
// one JSON line, computed by the pinned @earendil-works/chord's own delta module.
//
//   node delta-oracle.mjs <oracle dir>      (the directory install.sh filled)
//
// Requests:
//   {"kind": "stream", "values": [v0, ...], "ops": [batch0, ...], "wire": [wire0, ...],
//    "resets": [bool, ...]}
//     ops are Rust's decoded batches (batch0 is [["r", v0]]), wire Rust's encoding of them.
//     Answers {"encoded": Chord's encoding of ops, "applied": {"values": [...]} or
//     {"error": name, "at": i}, "tracked": Chord's tracker ops for {v: value} assigned each
//     value in turn (a reset step rebases), "trackedWire": their encoding}.
//   {"kind": "verdict", "wire": [wire0, ...]}
//     A replica hydrated from wire0 (must decode to a base batch) then fed the rest, through
//     one decoder and applyImmutable, as Chord's consumer does. Answers {"values": [...]} or
//     {"error": name, "message": text, "at": i, "loneSurrogate": bool}.
import { createInterface } from "node:readline";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const dir = process.argv[2];
if (!dir) throw new Error("usage: delta-oracle.mjs <oracle dir>");
const delta = await import(pathToFileURL(join(dir, "node_modules/@earendil-works/chord/dist/delta/index.js")).href);

const copy = (value) => JSON.parse(JSON.stringify(value));

function hasLoneSurrogate(value) {
  if (typeof value === "string") return !value.isWellFormed();
  if (Array.isArray(value)) return value.some(hasLoneSurrogate);
  if (value !== null && typeof value === "object") {
    return Object.entries(value).some(([k, v]) => !k.isWellFormed() || hasLoneSurrogate(v));
  }
  return false;
}

function stream(request) {
  const encoder = delta.encoder();
  const encoded = request.ops.map((batch) => encoder.encode(batch));

  let applied;
  const decoder = delta.decoder();
  let replica;
  const values = [];
  try {
    for (const [at, wire] of request.wire.entries()) {
      try {
        replica = delta.apply(replica, decoder.decode(copy(wire)));
      } catch (error) {
        applied = { error: error.name, message: String(error.message).slice(0, 200), at };
        break;
      }
      values.push(copy(replica));
    }
  } finally {
    applied ??= { values };
  }

  const tracker = delta.track({ v: copy(request.values[0]) });
  const tracked = [tracker.flush()];
  for (let i = 1; i < request.values.length; i++) {
    tracker.state.v = copy(request.values[i]);
    if (request.resets[i]) tracker.rebase();
    tracked.push(tracker.flush());
  }
  const trackedEncoder = delta.encoder();
  const trackedWire = tracked.map((batch) => trackedEncoder.encode(batch));
  return { encoded, applied, tracked, trackedWire };
}

function verdict(request) {
  const decoder = delta.decoder();
  let replica;
  const values = [];
  for (const [at, wire] of request.wire.entries()) {
    try {
      const ops = decoder.decode(wire);
      if (at === 0 && !delta.isBase(ops)) return { error: "NotABase", at, loneSurrogate: false };
      replica = delta.applyImmutable(replica, ops);
    } catch (error) {
      return { error: error.name, message: String(error.message).slice(0, 200), at, loneSurrogate: false };
    }
    if (hasLoneSurrogate(replica)) return { error: "LoneSurrogate", at, loneSurrogate: true };
    values.push(replica);
  }
  return { values };
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (line.length === 0) continue;
  const request = JSON.parse(line);
  let answer;
  switch (request.kind) {
    case "stream":
      answer = stream(request);
      break;
    case "verdict":
      answer = verdict(request);
      break;
    default:
      answer = { error: `unknown request kind ${request.kind}` };
  }
  process.stdout.write(`${JSON.stringify(answer)}\n`);
}
