// Shared helpers of the realpeer scripts: finding the pinned real packages, reading flags,
// printing one JSON object a line, and failing with a clear message.
//
// The packages live outside the source tree (tests/realpeer/install.sh puts them under
// <repo>/target/realpeer-node), so the scripts import them by absolute file URL. The folder is
// REALPEER_NODE_MODULES when set (for example /work/node/node_modules), else the one install.sh
// fills.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

/** The node_modules folder the scripts load the real packages from. */
export const NODE_MODULES =
  process.env.REALPEER_NODE_MODULES ?? resolve(here, "../../target/realpeer-node/node_modules");

/**
 * Imports `subpath` ("." or "./testing", ...) of the installed package `name`, through the
 * `import` condition of its package.json `exports` map (the same file node itself would load).
 */
export async function load(name, subpath = ".") {
  const root = join(NODE_MODULES, name);
  const manifestPath = join(root, "package.json");
  if (!existsSync(manifestPath)) {
    fail(`${name} is not installed under ${NODE_MODULES} (run tests/realpeer/install.sh, or set REALPEER_NODE_MODULES)`);
  }
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
  const entry = manifest.exports?.[subpath];
  const file = typeof entry === "string" ? entry : entry?.import;
  if (typeof file !== "string") fail(`${name} exports no ${subpath}`);
  return import(pathToFileURL(join(root, file)).href);
}

/**
 * Reads `--flag value` pairs and bare `--switch`es from argv into an object; positional
 * arguments go to `_`. `known` maps each flag to "value" or "switch"; anything else is a usage
 * error (status 2) that prints `usage`.
 */
export function parseArgs(argv, known, usage) {
  const parsed = { _: [] };
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index];
    if (arg === "--help" || arg === "-h") {
      process.stdout.write(usage + "\n");
      process.exit(0);
    }
    if (!arg.startsWith("--")) {
      parsed._.push(arg);
      continue;
    }
    const name = arg.slice(2);
    const kind = known[name];
    if (kind === "switch") parsed[name] = true;
    else if (kind === "value" && index + 1 < argv.length) parsed[name] = argv[++index];
    else usageError(kind === undefined ? `unknown flag ${arg}` : `${arg} needs a value`, usage);
  }
  return parsed;
}

/** Prints `message` and `usage` on stderr and exits with status 2. */
export function usageError(message, usage) {
  process.stderr.write(`${message}\n${usage}\n`);
  process.exit(2);
}

/** Prints one JSON object a line on stdout. */
export function log(entry) {
  process.stdout.write(JSON.stringify(entry) + "\n");
}

/** Prints `message` on stderr, prefixed with the script's name, and exits with status 1. */
export function fail(message) {
  const script = process.argv[1] ? process.argv[1].split("/").pop() : "realpeer";
  process.stderr.write(`${script}: ${message}\n`);
  process.exit(1);
}

/** JSON equality for plain data (key order matters only in arrays). */
export function sameJson(left, right) {
  return canonical(left) === canonical(right);
}

/** A JSON text of `value` with object keys sorted, for comparing and printing plain data. */
export function canonical(value) {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value) {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === "object" && !(value instanceof Uint8Array)) {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, sortKeys(value[key])]),
    );
  }
  return value;
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms) {
  return new Promise((done) => setTimeout(done, ms));
}

/**
 * Resolves to `promise`'s value, or rejects with `Error(what + " timed out")` after `ms`.
 */
export function within(ms, what, promise) {
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** The UUIDv4 shape a serverId must have (canonical lowercase). */
export const SERVER_ID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The serverId the scripts use when none is given (the same default as examples/server). */
export const DEFAULT_SERVER_ID = "3b241101-e2bb-4255-8caf-4136c566a962";
