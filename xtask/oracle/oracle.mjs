// Oracle for `cargo xtask conformance`: asks the published reference package
// (@earendil-works/pi-protocol, version pinned in package.json) for its verdict on each request.
//
// Protocol: newline-delimited JSON. Each stdin line is one request in the shape of the
// `request` field of tests/vectors/vectors.jsonl; each stdout line is the verdict in the shape
// of its `expect` field, in the same order:
//   decode     -> {ok:true, messages, canonical} | {ok:false, stage, chunk, decodedBefore, error}
//   encode     -> {ok:true, frame} | {ok:false, error}
//   decodeCbor -> {ok:true, canonical} | {ok:false, error}
// `canonical` is the reference encoder's bytes for a value after sorting every object's keys by
// UTF-16 code unit (what Array.prototype.sort does with strings), so both sides can be compared
// byte for byte whatever key order the wire carried.
import { createInterface } from "node:readline";
import * as reference from "@earendil-works/pi-protocol";

const UNBOUNDED = { maxByteLength: 2 ** 32 - 1, maxContainerLength: 2 ** 32 - 1, maxDepth: 512 };

const bytesOf = (text) => Uint8Array.from(Buffer.from(text, "hex"));
const hexOf = (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");

function errorText(thrown) {
  const name = thrown && typeof thrown === "object" && "name" in thrown ? thrown.name : "Error";
  const message = thrown && typeof thrown === "object" && "message" in thrown ? thrown.message : String(thrown);
  return `${name}: ${String(message).slice(0, 300)}`;
}

// Rebuilds `value` with sorted keys. Own properties are defined explicitly so that keys such as
// "__proto__" stay ordinary data properties.
function sorted(value) {
  if (Array.isArray(value)) return value.map(sorted);
  if (value instanceof Uint8Array || value === null || typeof value !== "object") return value;
  const result = {};
  for (const key of Object.keys(value).sort()) {
    Object.defineProperty(result, key, { value: sorted(value[key]), enumerable: true, writable: true, configurable: true });
  }
  return result;
}

const canonical = (value) => hexOf(reference.encodeCbor(sorted(value), UNBOUNDED));

function frameOptions(request) {
  return "maxFrameLength" in request ? { maxFrameLength: request.maxFrameLength } : undefined;
}

function decode(request) {
  let decoder;
  try {
    const Decoder = request.side === "client" ? reference.ClientMessageDecoder : reference.ServerMessageDecoder;
    decoder = new Decoder(frameOptions(request));
  } catch (thrown) {
    return { ok: false, stage: "options", chunk: 0, decodedBefore: 0, error: errorText(thrown) };
  }
  const chunks = request.chunks ?? [];
  const messages = [];
  for (let index = 0; index < chunks.length; index += 1) {
    let delivered;
    try {
      delivered = decoder.push(bytesOf(chunks[index]));
    } catch (thrown) {
      return { ok: false, stage: "push", chunk: index, decodedBefore: messages.length, error: errorText(thrown) };
    }
    for (const message of delivered) messages.push(message);
  }
  if (request.end !== false) {
    try {
      decoder.end();
    } catch (thrown) {
      return { ok: false, stage: "end", chunk: chunks.length, decodedBefore: messages.length, error: errorText(thrown) };
    }
  }
  return { ok: true, messages, canonical: messages.map(canonical) };
}

function encode(request) {
  const encoder = request.side === "client" ? reference.encodeClientMessage : reference.encodeServerMessage;
  try {
    return { ok: true, frame: hexOf(encoder(request.message, frameOptions(request))) };
  } catch (thrown) {
    return { ok: false, error: errorText(thrown) };
  }
}

function decodeCbor(request) {
  const limits = {};
  for (const name of ["maxByteLength", "maxContainerLength", "maxDepth"]) {
    if (name in request) limits[name] = request[name];
  }
  try {
    return { ok: true, canonical: canonical(reference.decodeCbor(bytesOf(request.hex), limits)) };
  } catch (thrown) {
    return { ok: false, error: errorText(thrown) };
  }
}

const operations = { decode, encode, decodeCbor };

function answer(line) {
  let request;
  try {
    request = JSON.parse(line);
  } catch (thrown) {
    return { ok: false, error: `oracle: unreadable request: ${errorText(thrown)}` };
  }
  const operation = operations[request.op];
  if (!operation) return { ok: false, error: `oracle: unknown op ${JSON.stringify(request.op)}` };
  return operation(request);
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (line.trim() === "") continue;
  process.stdout.write(`${JSON.stringify(answer(line))}\n`);
}
