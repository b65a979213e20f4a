// Oracle of pi-chord's tests/oracle_wire.rs: the verdict of @earendil-works/chord (pinned in
// package.json) on each value the test sends.
//
// Protocol: newline-delimited JSON. Each stdin line is {"kind", "value"}, kind one of `call`,
// `catalogue`, `snapshot`, `update`; each stdout line is the verdict, in order:
//   {"ok": true} or {"ok": false}, and for an accepted `call` also "control": what
//   decodeServiceControlCall makes of it (null when it is not a control call).
import { createInterface } from "node:readline";
import {
  decodeServiceControlCall,
  parseServiceCall,
  parseServiceCatalogue,
  parseWireServiceProviderUpdate,
  parseWireServiceSubscriptionSnapshot,
} from "@earendil-works/chord";

const parsers = {
  call: parseServiceCall,
  catalogue: parseServiceCatalogue,
  snapshot: parseWireServiceSubscriptionSnapshot,
  update: parseWireServiceProviderUpdate,
};

function verdict(line) {
  const { kind, value } = JSON.parse(line);
  const parse = parsers[kind];
  if (parse === undefined) throw new Error(`unknown kind ${kind}`);
  try {
    parse(value);
  } catch {
    return { ok: false };
  }
  if (kind !== "call") return { ok: true };
  return { ok: true, control: decodeServiceControlCall(value) ?? null };
}

const out = [];
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (line.length === 0) continue;
  out.push(JSON.stringify(verdict(line)));
  if (out.length >= 512) process.stdout.write(out.splice(0).join("\n") + "\n");
}
if (out.length > 0) process.stdout.write(out.join("\n") + "\n");
