// Times @earendil-works/chord's Delta on pi-chord's bench workloads (written by
// benches/delta.rs), for the side-by-side table of `cargo bench -p pi-chord --bench delta`.
//
//   node delta-bench.mjs <oracle dir> <workload file>
//
// Prints {"<workload>": {"decode_apply": ns, "decode_apply_immutable": ns, "diff_assign": ns,
// "diff_mutate": ns, "publish_assign": ns}} in nanoseconds per batch, the median of whole-stream
// runs, each on fresh copies of its inputs (made outside the timed region).
import { readFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [dir, file] = process.argv.slice(2);
const delta = await import(pathToFileURL(join(dir, "node_modules/@earendil-works/chord/dist/delta/index.js")).href);
const workloads = JSON.parse(readFileSync(file, "utf8"));
const RUNS = 25;

// One step of a workload on a plain value, or through a tracker's proxy.
function step(state, edit) {
  if ("append" in edit) {
    state.output += edit.append;
    if (edit.push !== null) state.messages.push(edit.push);
  } else if ("insert" in edit) {
    state.items.splice(edit.insert[0], 0, edit.insert[1]);
  } else {
    state.items.splice(edit.remove, 1);
  }
}

function median(times) {
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

// Runs `prepare` (untimed) then `run` (timed) RUNS times after one warm-up; ns per batch.
function time(steps, prepare, run) {
  run(prepare());
  const times = [];
  for (let i = 0; i < RUNS; i++) {
    const input = prepare();
    const start = process.hrtime.bigint();
    run(input);
    times.push(Number(process.hrtime.bigint() - start) / steps);
  }
  return median(times);
}

const out = {};
for (const w of workloads) {
  const steps = w.edits.length;
  const wireText = JSON.stringify(w.wire);
  const values = [w.initial];
  for (const edit of w.edits) {
    const next = structuredClone(values[values.length - 1]);
    step(next, structuredClone(edit));
    values.push(next);
  }
  if (!isDeepStrictEqual(values[values.length - 1], w.last)) throw new Error(`${w.name}: replayed edits differ from Rust's`);

  // The replica is hydrated from the snapshot before the clock starts, as in Rust.
  const hydrate = (applyFn) => () => {
    const wire = JSON.parse(wireText);
    const decoder = delta.decoder();
    return { wire, decoder, replica: applyFn(undefined, decoder.decode(wire[0])) };
  };
  const replay = (applyFn) => (state) => {
    let replica = state.replica;
    for (let i = 1; i < state.wire.length; i++) replica = applyFn(replica, state.decoder.decode(state.wire[i]));
    return replica;
  };
  const check = replay(delta.apply)(hydrate(delta.apply)());
  if (!isDeepStrictEqual(check, w.last)) throw new Error(`${w.name}: Chord's replica differs from Rust's value`);

  const decode_apply = time(steps, hydrate(delta.apply), replay(delta.apply));
  const decode_apply_immutable = time(steps, hydrate(delta.applyImmutable), replay(delta.applyImmutable));

  // Deriving ops from successive values: each value assigned to the tracked state, key by
  // key, as a fresh copy (made untimed, so fresh in the cache as in Rust); the clock runs
  // around each assignment and flush only.
  const assign = (encode) => () => {
    const tracker = delta.track(structuredClone(values[0]));
    tracker.flush();
    const encoder = delta.encoder();
    encoder.encode([["r", null]]);
    let total = 0n;
    for (let i = 1; i < values.length; i++) {
      const next = structuredClone(values[i]);
      const start = process.hrtime.bigint();
      for (const key of Object.keys(next)) tracker.state[key] = next[key];
      const ops = tracker.flush();
      if (encode) encoder.encode(ops);
      total += process.hrtime.bigint() - start;
    }
    return Number(total) / steps;
  };
  const timeSteps = (run) => {
    run();
    const times = [];
    for (let i = 0; i < RUNS; i++) times.push(run());
    return median(times);
  };
  const diff_assign = timeSteps(assign(false));
  const publish_assign = timeSteps(assign(true));

  // Deriving ops from the edits made through the tracker's proxy (no comparison needed).
  const diff_mutate = time(
    steps,
    () => {
      const tracker = delta.track(structuredClone(values[0]));
      tracker.flush();
      return { tracker, edits: structuredClone(w.edits) };
    },
    ({ tracker, edits }) => {
      for (const edit of edits) {
        step(tracker.state, edit);
        tracker.flush();
      }
    },
  );
  out[w.name] = { decode_apply, decode_apply_immutable, diff_assign, diff_mutate, publish_assign };
}
process.stdout.write(`${JSON.stringify(out)}\n`);
