//! `cargo xtask conformance [--cases N] [--seed S]`: differential testing against the reference
//! package `@earendil-works/pi-protocol@0.85.1`.
//!
//! A structure-aware generator (`conformance/gen.rs`) builds `decode`, `encode` and
//! `decodeCbor` requests in the shape of `tests/vectors/vectors.jsonl`; the oracle
//! (`xtask/oracle/oracle.mjs`, installed with npm into `target/oracle/` or `$PI_ORACLE_DIR`)
//! answers each with the reference's verdict; `tests/common/checks.rs` (the same checks as the
//! test suite) compares it with this crate. Every disagreement is printed with its input and
//! appended to `tests/vectors/regressions.jsonl`, which `tests/regressions.rs` replays.
//!
//! The envelope code is a dependency only under the `conformance` feature, so `cargo xtask gen`
//! still builds when the generated code does not; without the feature this task re-runs
//! itself through cargo with it.

#[cfg(feature = "conformance")]
mod cbor;
#[cfg(feature = "conformance")]
#[path = "../../tests/common/mod.rs"]
mod common;
#[cfg(feature = "conformance")]
mod gen;
#[cfg(feature = "conformance")]
mod oracle;

/// Runs the task with the arguments after `conformance`.
#[cfg(not(feature = "conformance"))]
pub fn run(args: &[&str]) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = std::process::Command::new(cargo)
        .args(["run", "--quiet", "--package", "xtask", "--features", "conformance", "--", "conformance"])
        .args(args)
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("conformance failed ({status})"))
    }
}

/// Runs the task with the arguments after `conformance`.
#[cfg(feature = "conformance")]
pub fn run(args: &[&str]) -> Result<(), String> {
    imp::run(args)
}

#[cfg(feature = "conformance")]
mod imp {
    use super::common::checks::check_case;
    use super::gen::{capture_case, decode_case, decode_cbor_case, encode_case, Captures, Rng};
    use super::oracle;
    use serde_json::{json, Value};
    use std::collections::{BTreeMap, HashSet};
    use std::io::Write;
    use std::path::{Path, PathBuf};
    use std::time::Instant;

    const BATCH: u64 = 5_000;

    struct Settings {
        cases: u64,
        seed: u64,
    }

    fn parse(args: &[&str]) -> Result<Settings, String> {
        let mut settings = Settings { cases: 10_000, seed: 0 };
        let mut seeded = false;
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let mut value = |name: &str| -> Result<u64, String> {
                let text = it.next().ok_or(format!("{name} needs a value"))?;
                let parsed = match text.strip_prefix("0x") {
                    Some(h) => u64::from_str_radix(h, 16),
                    None => text.parse(),
                };
                parsed.map_err(|e| format!("{name} {text}: {e}"))
            };
            match *arg {
                "--cases" => settings.cases = value("--cases")?,
                "--seed" => {
                    settings.seed = value("--seed")?;
                    seeded = true;
                }
                other => {
                    return Err(format!(
                        "unknown argument {other}\nusage: cargo xtask conformance [--cases N] [--seed S]"
                    ))
                }
            }
        }
        if !seeded {
            settings.seed = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1);
        }
        Ok(settings)
    }

    fn root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
    }

    /// The request of case `index` of a run seeded with `seed` (each case has its own stream,
    /// so one case can be regenerated alone).
    fn case(seed: u64, index: u64, captures: &Captures) -> Value {
        let mut rng = Rng::new(seed ^ index.wrapping_mul(0xa076_1d64_78bd_642f));
        rng.next_u64();
        match rng.below(20) {
            0 | 1 => capture_case(&mut rng, captures).unwrap_or_else(|| decode_case(&mut rng)),
            2..=10 => decode_case(&mut rng),
            11..=15 => encode_case(&mut rng),
            _ => decode_cbor_case(&mut rng),
        }
    }

    fn input_of(request: &Value) -> String {
        match request["op"].as_str() {
            Some("decode") => {
                format!("side {} chunks {}", request["side"], request["chunks"])
            }
            Some("decodeCbor") => format!("hex {}", request["hex"]),
            _ => format!("message {}", request["message"]),
        }
    }

    pub fn run(args: &[&str]) -> Result<(), String> {
        let settings = parse(args)?;
        let root = root();
        let oracle_dir =
            std::env::var_os("PI_ORACLE_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target/oracle"));
        let script = oracle::install(&root.join("xtask/oracle"), &oracle_dir)?;
        println!(
            "conformance: {} cases, seed {:#x} (reproduce: cargo xtask conformance --cases {} --seed {:#x})",
            settings.cases, settings.seed, settings.cases, settings.seed
        );
        let captures = Captures::load(&root.join("tests/captures"));
        let started = Instant::now();
        let mut per_op: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
        let mut disagreements = Vec::new();
        let mut start = 0;
        while start < settings.cases {
            let end = (start + BATCH).min(settings.cases);
            let requests: Vec<Value> = (start..end).map(|i| case(settings.seed, i, &captures)).collect();
            let verdicts = oracle::ask(&script, &requests)?;
            for (offset, (request, verdict)) in requests.iter().zip(&verdicts).enumerate() {
                let index = start + offset as u64;
                let id = format!("regression-{:x}-{index}", settings.seed);
                let op = request["op"].as_str().unwrap_or("?").to_owned();
                let result =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check_case(&id, request, verdict)))
                        .unwrap_or_else(|_| Err(format!("{id}: PANIC in this crate")));
                let entry = per_op.entry(op).or_default();
                entry.0 += 1;
                entry.2 += u64::from(verdict["ok"] == true);
                match result {
                    Ok(()) => entry.1 += 1,
                    Err(why) => {
                        println!("DISAGREE {why}\n  input: {}", input_of(request));
                        disagreements.push((id, request.clone(), verdict.clone(), why));
                    }
                }
            }
            start = end;
        }
        let agreed: u64 = per_op.values().map(|(_, a, _)| a).sum();
        for (op, (total, agree, accepted)) in &per_op {
            println!(
                "  {op:<10} {agree}/{total} agree (the reference accepted {accepted}, rejected {})",
                total - accepted
            );
        }
        println!(
            "conformance: {agreed} of {} cases agree with the reference ({} disagreements) in {:.1}s",
            settings.cases,
            disagreements.len(),
            started.elapsed().as_secs_f64()
        );
        if disagreements.is_empty() {
            return Ok(());
        }
        let written = record(&root.join("tests/vectors/regressions.jsonl"), settings.seed, &disagreements)?;
        Err(format!("{} disagreements ({written} new cases in tests/vectors/regressions.jsonl)", disagreements.len()))
    }

    /// Appends each disagreement not yet recorded (same request) as a case with the reference's
    /// verdict.
    fn record(path: &Path, seed: u64, found: &[(String, Value, Value, String)]) -> Result<usize, String> {
        let existing = std::fs::read_to_string(path).unwrap_or_default();
        let mut known: HashSet<String> = existing
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .map(|case| case["request"].to_string())
            .collect();
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        let mut written = 0;
        for (id, request, verdict, why) in found {
            if !known.insert(request.to_string()) {
                continue;
            }
            let summary: String = why.lines().next().unwrap_or_default().chars().take(300).collect();
            let case = json!({
                "id": id,
                "category": format!("fuzz-{}", request["op"].as_str().unwrap_or("?")),
                "description": format!("found by cargo xtask conformance --seed {seed:#x}: {summary}"),
                "request": request,
                "expect": verdict,
            });
            writeln!(file, "{case}").map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            written += 1;
        }
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    /// The reference prints float64 values in shortest form; reading them back must give the
    /// same bits, or exact agreement reads as disagreement (found by a 20,000-case run: 39 false
    /// disagreements on magnitudes near 1e-200 before serde_json's `float_roundtrip` was on).
    #[test]
    fn shortest_floats_from_the_reference_read_back_exactly() {
        for text in
            ["-1.6785790678368142e-211", "2.496665790262287e-129", "1.5798677235155203e-257", "9.668425935724565e-281"]
        {
            let read: serde_json::Value = serde_json::from_str(text).unwrap();
            let exact: f64 = text.parse().unwrap();
            assert_eq!(read.as_f64().map(f64::to_bits), Some(exact.to_bits()), "{text}");
        }
    }
}
