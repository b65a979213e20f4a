// Adds TypeBox's verdict ("reference") to each probe line {case, side, value}.
import { Check } from "typebox/value";
import fs from "node:fs";
import readline from "node:readline";
const schemas = {};
for (const arg of process.argv.slice(2)) {
  const [name, path] = arg.split("=");
  const doc = JSON.parse(fs.readFileSync(path, "utf8"));
  const side = (s) => doc[s + "Message"] ?? { ...doc, $ref: `#/$defs/${s === "client" ? "ClientMessage" : "ServerMessage"}` };
  schemas[name] = { client: side("client"), server: side("server") };
}
for await (const line of readline.createInterface({ input: process.stdin })) {
  const probe = JSON.parse(line);
  probe.reference = Check(schemas[probe.case][probe.side], probe.value);
  console.log(JSON.stringify(probe));
}
