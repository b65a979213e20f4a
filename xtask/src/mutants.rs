//! `cargo xtask mutants`: mutation testing of the workspace with `cargo-mutants`, one area at a
//! time, each mutant tested by the tests that exercise its crate (see `docs/TESTING.md`).
//!
//! An area is a set of source files and the tiers of tests that judge their mutants. Tier 1 is
//! the area's own, fast tests; every later tier runs exactly the mutants the tiers before it
//! missed (one `--re` per mutant), so a mutant counts as caught when any tier catches it, as if
//! all tiers ran together, at the cost of the cheap tier for most mutants.
//!
//! Mutants recorded as equivalent in `docs/TESTING.md` (section "Equivalent mutants") are left
//! out of the run and counted apart. The task fails when a mutant is missed that is not
//! recorded there, so that a change to a measured file keeps every mutant caught or explained;
//! `--report-only` (CI, see `docs/TESTING.md` for why) prints the same and succeeds.
//!
//! Options:
//! - `--area A` (`runtime`, `pattern`, `connection`, `derive`, `gen`; repeatable) or
//!   `--package P`: the areas to test (default: all five).
//! - `--file F` (repeatable): only these files (paths or globs from the workspace root); the
//!   areas follow from the files.
//! - `--changed [BASE]`: only the files that `git diff --name-only BASE...HEAD` names (default
//!   `main`); with `--lines`, only the mutants on the lines that diff touches.
//! - `--re REGEX` (repeatable): only the mutants whose name (as `--list` prints it) matches.
//! - `--shard K/N`: only the K-th of N round-robin shards of the selected mutants (K from 0), a
//!   sample spread over every file, for an area too large to test in the time at hand.
//! - `--max-seconds N`: stop the run after N seconds (cargo-mutants is interrupted and what it
//!   tested is judged); the task says how many mutants went untested.
//! - `--iterate`: tier 1 skips the mutants the last run's tier 1 caught or found unviable (for
//!   re-running what it missed after adding tests).
//! - `--report-only`: print the missed mutants but succeed.
//! - `--gate AREA,...`: with `--report-only`, an unexplained miss in one of these areas still
//!   fails, with exit status 3 ([`GATE_FAILED`]), so that CI can tell it from a run that failed.
//! - `--list`: print the mutants each area would test, and run nothing.
//!
//! Builds go to `target/mutants/` (or `$CARGO_TARGET_DIR`), outside the workspace's own
//! `target/debug`, so that a mutated build never replaces an artifact of the working tree.
//! Results go to `target/mutants-out/<area>/tier<N>/mutants.out/`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

mod progress;
mod report;

use progress::{Figure, Progress};
use report::{Equivalents, Outcome, Tally};

const USAGE: &str =
    "usage: cargo xtask mutants [--area A]... [--package P]... [--file F]... [--changed [BASE]] [--lines]
                          [--re REGEX]... [--shard K/N] [--max-seconds N] [--iterate] [--report-only] [--list]
                          [--gate AREA,...]
       cargo xtask mutants --next [--area A]... [--budget-minutes N] | --shard AREA/K";

/// The exit status of a `--report-only --gate` run that found an unexplained miss in a gated
/// area (every other failure exits with 1).
pub const GATE_FAILED: u8 = 3;

/// The cargo-mutants release the task is written against (CI installs it).
pub const CARGO_MUTANTS_VERSION: &str = "27.1.0";

/// How a tier runs its tests.
#[derive(Clone, Copy)]
enum Tool {
    /// `cargo nextest run`: stops at the first failing test, which keeps caught mutants cheap
    /// (`cargo test` when cargo-nextest is not installed).
    Nextest,
    /// `cargo test`: for doctests, which nextest does not run.
    Cargo,
}

/// One set of tests that judges an area's mutants.
struct Tier {
    /// What the tier runs, for the report.
    label: &'static str,
    tool: Tool,
    /// The packages whose tests run (`--test-package`).
    packages: &'static [&'static str],
    /// Cargo arguments for the build and the test run: features and test targets.
    cargo_args: &'static [&'static str],
    /// Cargo arguments for the test run only (`--doc`: cargo refuses it with the build's
    /// `--no-run`, so the build compiles every test target of the package).
    test_args: &'static [&'static str],
    /// Whether the tier's tests are `#[ignore]`d in a plain run and must be asked for.
    ignored: bool,
}

/// A measured area: the files whose mutants are tested and the tiers that test them.
struct Area {
    name: &'static str,
    /// The package the files belong to (`--package`).
    package: &'static str,
    /// The area's files, as cargo-mutants globs from the workspace root.
    files: &'static [&'static str],
    /// The prefix every file of the area starts with (to place `--file` and `--changed` paths).
    prefix: &'static str,
    /// Share of the viable mutants that must be caught (`docs/TESTING.md`).
    target: f64,
    tiers: &'static [Tier],
}

/// The facade's integration tests that drive the codecs, and so the runtime, the pattern engine
/// and the derived code of the generated types (not the connection layer's own tests, nor the
/// ones that start processes or read the docs).
const FACADE_CODEC_TESTS: &[&str] = &[
    "--all-features",
    "--test=conformance",
    "--test=captures",
    "--test=properties",
    "--test=vectored",
    "--test=regressions",
    "--test=resource_bounds",
    "--test=hostile_skip",
    "--test=key_set_dispatch",
    "--test=options",
    "--test=capture_transports",
    "--test=connection_capture",
];

/// The facade's codec tests as a tier (of the runtime, the pattern engine and the derive).
const FACADE_CODEC_TIER: Tier = Tier {
    label: "pi-protocol codec tests",
    tool: Tool::Nextest,
    packages: &["pi-protocol"],
    cargo_args: FACADE_CODEC_TESTS,
    test_args: &[],
    ignored: false,
};

/// The schema-suite's tests, generated types checked against the `jsonschema` crate, as a tier
/// (of the derive and of the generator).
const SCHEMA_SUITE_TIER: Tier = Tier {
    label: "schema-suite",
    tool: Tool::Nextest,
    packages: &["pi-protocol-schema-suite"],
    cargo_args: &["--tests"],
    test_args: &[],
    ignored: false,
};

const AREAS: &[Area] = &[
    Area {
        name: "runtime",
        package: "pi-protocol-runtime",
        files: &["pi-protocol-runtime/src/**"],
        prefix: "pi-protocol-runtime/src/",
        target: 0.95,
        tiers: &[
            Tier {
                label: "pi-protocol-runtime unit and integration tests",
                tool: Tool::Nextest,
                packages: &["pi-protocol-runtime"],
                cargo_args: &["--lib", "--tests"],
                test_args: &[],
                ignored: false,
            },
            FACADE_CODEC_TIER,
            Tier {
                label: "pi-protocol-runtime doctests",
                tool: Tool::Cargo,
                packages: &["pi-protocol-runtime"],
                cargo_args: &[],
                test_args: &["--doc"],
                ignored: false,
            },
        ],
    },
    Area {
        name: "pattern",
        package: "pi-protocol-pattern",
        files: &["pi-protocol-pattern/src/**"],
        prefix: "pi-protocol-pattern/src/",
        target: 0.95,
        tiers: &[
            Tier {
                label: "pi-protocol-pattern unit tests",
                tool: Tool::Nextest,
                packages: &["pi-protocol-pattern"],
                cargo_args: &["--lib", "--tests"],
                test_args: &[],
                ignored: false,
            },
            // The derived `ServerId` check runs the engine's `word_matches`.
            FACADE_CODEC_TIER,
            Tier {
                label: "pi-protocol-pattern doctests",
                tool: Tool::Cargo,
                packages: &["pi-protocol-pattern"],
                cargo_args: &[],
                test_args: &["--doc"],
                ignored: false,
            },
        ],
    },
    Area {
        name: "connection",
        package: "pi-protocol",
        files: &["src/connection/**"],
        prefix: "src/connection/",
        target: 0.95,
        tiers: &[
            Tier {
                label: "pi-protocol connection and router tests",
                tool: Tool::Nextest,
                packages: &["pi-protocol"],
                cargo_args: &[
                    "--all-features",
                    "--lib",
                    "--test=connection",
                    "--test=connection_buffers",
                    "--test=connection_capture",
                    "--test=connection_fuzz_inputs",
                    "--test=router",
                    "--test=options",
                ],
                test_args: &[],
                ignored: false,
            },
            Tier {
                label: "pi-protocol transport tests and the router example",
                tool: Tool::Nextest,
                packages: &["pi-protocol"],
                cargo_args: &[
                    "--all-features",
                    "--test=io_transports",
                    "--test=driver",
                    "--test=capture_transports",
                    "--test=router_example",
                ],
                test_args: &[],
                ignored: false,
            },
            Tier {
                label: "pi-protocol doctests",
                tool: Tool::Cargo,
                packages: &["pi-protocol"],
                cargo_args: &["--all-features"],
                test_args: &["--doc"],
                ignored: false,
            },
        ],
    },
    Area {
        name: "derive",
        package: "pi-protocol-derive",
        files: &["pi-protocol-derive/src/**"],
        prefix: "pi-protocol-derive/src/",
        target: 0.90,
        tiers: &[
            Tier {
                label: "pi-protocol-derive behaviour tests",
                tool: Tool::Nextest,
                packages: &["pi-protocol-derive"],
                cargo_args: &["--test=behaviour", "--test=checks", "--test=unions", "--test=json_view", "--test=v8"],
                test_args: &[],
                ignored: false,
            },
            SCHEMA_SUITE_TIER,
            FACADE_CODEC_TIER,
            Tier {
                label: "pi-protocol-derive compile-fail (trybuild) tests",
                tool: Tool::Nextest,
                packages: &["pi-protocol-derive"],
                cargo_args: &["--test=derive_ui"],
                test_args: &[],
                ignored: true,
            },
        ],
    },
    Area {
        name: "gen",
        package: "pi-protocol-gen",
        files: &["pi-protocol-gen/src/**"],
        prefix: "pi-protocol-gen/src/",
        target: 0.90,
        tiers: &[
            Tier {
                label: "pi-protocol-gen unit and integration tests",
                tool: Tool::Nextest,
                packages: &["pi-protocol-gen"],
                cargo_args: &["--lib", "--tests"],
                test_args: &[],
                ignored: false,
            },
            SCHEMA_SUITE_TIER,
        ],
    },
];

#[derive(Clone)]
struct Settings {
    areas: Vec<&'static str>,
    files: Vec<String>,
    changed: Option<String>,
    lines: bool,
    regexes: Vec<String>,
    shard: Option<String>,
    max_seconds: Option<u64>,
    iterate: bool,
    report_only: bool,
    list: bool,
    /// `--next`: run the next unmeasured or stale shard of the progress file.
    next: bool,
    /// `--shard AREA/K`: run shard K of the progress file's AREA.
    progress_shard: Option<(&'static str, usize)>,
    /// `--gate`: with `--report-only`, the areas whose unexplained misses still fail.
    gate: Vec<&'static str>,
}

fn parse(args: &[&str]) -> Result<Settings, String> {
    let mut settings = Settings {
        areas: Vec::new(),
        files: Vec::new(),
        changed: None,
        lines: false,
        regexes: Vec::new(),
        shard: None,
        max_seconds: None,
        iterate: false,
        report_only: false,
        list: false,
        next: false,
        progress_shard: None,
        gate: Vec::new(),
    };
    let mut i = 0;
    while i < args.len() {
        let value = |i: usize| args.get(i + 1).copied().ok_or_else(|| format!("{} needs a value\n{USAGE}", args[i]));
        match args[i] {
            "--area" => {
                let name = value(i)?;
                let area = AREAS.iter().find(|a| a.name == name).ok_or_else(|| unknown("area", name))?;
                settings.areas.push(area.name);
                i += 1;
            }
            "--package" | "-p" => {
                let name = value(i)?;
                let area = AREAS.iter().find(|a| a.package == name).ok_or_else(|| unknown("package", name))?;
                settings.areas.push(area.name);
                i += 1;
            }
            "--file" | "-f" => {
                settings.files.push(value(i)?.trim_start_matches("./").to_owned());
                i += 1;
            }
            "--changed" => match args.get(i + 1).filter(|next| !next.starts_with("--")) {
                Some(base) => {
                    settings.changed = Some((*base).to_owned());
                    i += 1;
                }
                None => settings.changed = Some("main".to_owned()),
            },
            "--lines" => settings.lines = true,
            "--max-seconds" => {
                settings.max_seconds = Some(value(i)?.parse().map_err(|e| format!("--max-seconds: {e}"))?);
                i += 1;
            }
            "--re" => {
                settings.regexes.push(value(i)?.to_owned());
                i += 1;
            }
            "--shard" if value(i)?.split_once('/').is_some_and(|(a, _)| AREAS.iter().any(|x| x.name == a)) => {
                let (name, k) = value(i)?.split_once('/').expect("checked");
                let area = AREAS.iter().find(|a| a.name == name).expect("checked");
                let k = k.parse().map_err(|e| format!("--shard {name}/K: {e}"))?;
                settings.progress_shard = Some((area.name, k));
                i += 1;
            }
            "--next" => settings.next = true,
            "--budget-minutes" => {
                let minutes: u64 = value(i)?.parse().map_err(|e| format!("--budget-minutes: {e}"))?;
                settings.max_seconds = Some(minutes * 60);
                i += 1;
            }
            "--gate" => {
                for name in value(i)?.split(',') {
                    let area = AREAS.iter().find(|a| a.name == name).ok_or_else(|| unknown("area", name))?;
                    settings.gate.push(area.name);
                }
                i += 1;
            }
            "--shard" => {
                let shard = value(i)?;
                let valid = shard
                    .split_once('/')
                    .and_then(|(k, n)| Some((k.parse::<u32>().ok()?, n.parse::<u32>().ok()?)))
                    .is_some_and(|(k, n)| k < n);
                if !valid {
                    return Err(format!("--shard takes K/N with K < N (K from 0), not {shard}"));
                }
                settings.shard = Some(shard.to_owned());
                i += 1;
            }
            "--iterate" => settings.iterate = true,
            "--report-only" => settings.report_only = true,
            "--list" => settings.list = true,
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
        i += 1;
    }
    if settings.lines && settings.changed.is_none() {
        return Err(format!("--lines needs --changed\n{USAGE}"));
    }
    Ok(settings)
}

fn unknown(what: &str, name: &str) -> String {
    let names: Vec<&str> = AREAS.iter().map(|a| if what == "area" { a.name } else { a.package }).collect();
    format!("no {what} {name} is measured (measured: {})", names.join(", "))
}

/// One area's run as planned: its files (`None`: all of them).
struct Plan {
    area: &'static Area,
    files: Option<Vec<String>>,
}

/// The areas to run and their files, from `--area`, `--package`, `--file` and `--changed`.
fn plan(settings: &Settings, root: &Path) -> Result<Vec<Plan>, String> {
    let mut files = settings.files.clone();
    if let Some(base) = &settings.changed {
        let changed = git(root, &["diff", "--name-only", "--diff-filter=d", &format!("{base}...HEAD")])?;
        let rust: Vec<String> = changed.lines().filter(|f| f.ends_with(".rs")).map(str::to_owned).collect();
        files.extend(rust.into_iter().filter(|f| AREAS.iter().any(|a| f.starts_with(a.prefix))));
        if files.is_empty() {
            return Ok(Vec::new());
        }
    }
    let mut plans: Vec<Plan> = Vec::new();
    if files.is_empty() {
        let chosen = |a: &&Area| settings.areas.is_empty() || settings.areas.contains(&a.name);
        return Ok(AREAS.iter().filter(chosen).map(|area| Plan { area, files: None }).collect());
    }
    for file in files {
        let area = AREAS
            .iter()
            .find(|a| file.starts_with(a.prefix))
            .ok_or_else(|| format!("{file} is in no measured area (areas: {})", prefixes()))?;
        if !settings.areas.is_empty() && !settings.areas.contains(&area.name) {
            continue;
        }
        match plans.iter_mut().find(|p| p.area.name == area.name) {
            Some(p) => p.files.get_or_insert_with(Vec::new).push(file),
            None => plans.push(Plan { area, files: Some(vec![file]) }),
        }
    }
    Ok(plans)
}

fn prefixes() -> String {
    AREAS.iter().map(|a| a.prefix).collect::<Vec<_>>().join(", ")
}

/// Runs the task with the arguments after `mutants`.
///
/// # Errors
/// A message naming bad arguments, a missing `cargo mutants`, a baseline that failed, or (unless
/// `--report-only`) the mutants that survived without being recorded as equivalent.
pub fn run(args: &[&str]) -> Result<(), String> {
    let settings = parse(args)?;
    let root = crate::codegen::project_root();
    check_installed()?;
    if settings.next || settings.progress_shard.is_some() {
        return run_progress(&settings, &root);
    }
    let plans = plan(&settings, &root)?;
    if plans.is_empty() {
        println!("mutants: no file of a measured area changed ({}); nothing to test", prefixes());
        return Ok(());
    }
    let equivalents = Equivalents::load(&root.join("docs/TESTING.md"))?;
    let diff = match (&settings.changed, settings.lines) {
        (Some(base), true) => Some(write_diff(&root, base)?),
        _ => None,
    };
    let nextest = nextest_installed();
    if !nextest {
        println!(
            "mutants: cargo-nextest is not installed; the tiers run under `cargo test` (slower per caught mutant)"
        );
    }
    let deadline = settings.max_seconds.map(|s| Instant::now() + Duration::from_secs(s));
    let mut failures = Vec::new();
    for plan in &plans {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            println!("mutants: time budget reached before the {} area; its mutants are untested", plan.area.name);
            continue;
        }
        let runner = Runner {
            root: &root,
            plan,
            settings: &settings,
            equivalents: &equivalents,
            diff: diff.as_deref(),
            deadline,
            nextest,
        };
        if settings.list {
            runner.list()?;
            continue;
        }
        let tally = runner.run()?;
        println!("{}", tally.summary(plan.area.name, plan.area.target));
        if let Some(shard) = &settings.shard {
            println!("  (round-robin shard {shard} of the selected mutants only)");
        }
        let gated = settings.gate.contains(&plan.area.name);
        failures.extend(tally.unexplained().map(|m| (gated, format!("missed: {m}"))));
    }
    if failures.is_empty() {
        return Ok(());
    }
    let gated: Vec<&String> = failures.iter().filter(|(gated, _)| *gated).map(|(_, m)| m).collect();
    let failures: Vec<String> = failures.iter().map(|(_, m)| m.clone()).collect();
    let message = format!(
        "{} mutants survived and are not recorded as equivalent in docs/TESTING.md:\n{}",
        failures.len(),
        failures.join("\n")
    );
    if settings.report_only && gated.is_empty() {
        println!("mutants (report only, see docs/TESTING.md): {message}");
        Ok(())
    } else if settings.report_only {
        println!("mutants (report only, see docs/TESTING.md): {message}");
        eprintln!(
            "error: {} of them in a gated area ({}): kill each with a test or record it as equivalent in docs/TESTING.md:\n{}",
            gated.len(),
            settings.gate.join(", "),
            gated.iter().map(|m| m.as_str()).collect::<Vec<_>>().join("\n")
        );
        // Its own status, so that CI tells a gated miss (a failure of the change) from a run
        // that could not be made (reported, not failing).
        std::process::exit(GATE_FAILED.into())
    } else {
        Err(message)
    }
}

/// One area's run.
struct Runner<'a> {
    root: &'a Path,
    plan: &'a Plan,
    settings: &'a Settings,
    equivalents: &'a Equivalents,
    diff: Option<&'a Path>,
    deadline: Option<Instant>,
    /// Whether `cargo nextest` is there for the tiers that prefer it.
    nextest: bool,
}

impl Runner<'_> {
    /// Where tier `tier` (from 1) writes its `mutants.out/`.
    fn output(&self, tier: usize) -> PathBuf {
        self.root.join("target/mutants-out").join(self.plan.area.name).join(format!("tier{tier}"))
    }

    /// The arguments that choose the mutants: package, files, diff, equivalents left out.
    fn selection(&self) -> Vec<String> {
        let area = self.plan.area;
        let mut args = vec![format!("--package={}", area.package)];
        let files: Vec<String> = match &self.plan.files {
            Some(files) => files.clone(),
            None => area.files.iter().map(|f| (*f).to_owned()).collect(),
        };
        args.extend(files.iter().map(|f| format!("--file={f}")));
        if let Some(diff) = self.diff {
            args.push(format!("--in-diff={}", diff.display()));
        }
        args
    }

    /// The arguments that narrow tier 1 (and `--list`) to what was asked: `--re`, `--shard`.
    fn narrowing(&self) -> Vec<String> {
        let mut args: Vec<String> = self.settings.regexes.iter().map(|re| format!("--re={re}")).collect();
        if let Some(shard) = &self.settings.shard {
            args.push(format!("--shard={shard}"));
            args.push("--sharding=round-robin".to_owned());
        }
        args
    }

    fn cargo_mutants(&self) -> Command {
        let mut command = Command::new(cargo());
        command
            .current_dir(self.root)
            .arg("mutants")
            .args(self.selection())
            .args(self.equivalents.exclude_patterns().map(|re| format!("--exclude-re={re}")))
            .args(["--profile=mutants", "--colors=never", "--no-times"]);
        let target =
            std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| self.root.join("target/mutants"), PathBuf::from);
        // Incremental builds, whatever the caller's environment says: cargo-mutants mutates one
        // copy of the tree in place, one mutant after another, so each build recompiles only
        // what the mutated function touches (a runtime mutant's build takes about 2 s instead of
        // 20-40 s, docs/TESTING.md). Each run makes a new copy at a new path, whose incremental
        // state no later run can reuse: the last run's is removed first, so it does not pile up.
        let _ = std::fs::remove_dir_all(target.join("mutants/incremental"));
        command.env("CARGO_TARGET_DIR", &target).env("CARGO_INCREMENTAL", "1");
        command
    }

    /// The mutants tier 1 would test, one a line (`cargo mutants --list`).
    fn listed(&self) -> Result<String, String> {
        let out = self
            .cargo_mutants()
            .args(self.narrowing())
            .arg("--list")
            .output()
            .map_err(|e| format!("cannot run cargo mutants: {e}"))?;
        if !out.status.success() {
            return Err(format!("cargo mutants --list failed: {}", String::from_utf8_lossy(&out.stderr)));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn list(&self) -> Result<(), String> {
        let listed = self.listed()?;
        print!("{listed}");
        let equivalent = self.equivalent_count()?;
        println!(
            "{}: {} mutants to test, {equivalent} recorded as equivalent",
            self.plan.area.name,
            listed.lines().count()
        );
        Ok(())
    }

    /// How many mutants tier 1 would test.
    fn count(&self) -> Result<usize, String> {
        Ok(self.listed()?.lines().count())
    }

    /// How many of the area's mutants (as chosen by files and diff) the equivalents list leaves
    /// out.
    fn equivalent_count(&self) -> Result<usize, String> {
        let out = Command::new(cargo())
            .current_dir(self.root)
            .args(["mutants", "--list"])
            .args(self.selection())
            .output()
            .map_err(|e| format!("cannot run cargo mutants: {e}"))?;
        let listed = String::from_utf8_lossy(&out.stdout);
        Ok(listed.lines().filter(|name| self.equivalents.contains(name)).count())
    }

    /// Runs the tiers in turn, each on exactly what the ones before missed, and adds up the
    /// outcomes.
    fn run(&self) -> Result<Tally, String> {
        let area = self.plan.area;
        let iterate = self.settings.iterate;
        let mut tally = Tally::new(self.equivalent_count()?);
        for (index, tier) in area.tiers.iter().enumerate() {
            let first = index == 0;
            if !first && tally.missed.is_empty() {
                break;
            }
            if self.deadline.is_some_and(|d| Instant::now() >= d) {
                tally.not_retried = tally.missed.len();
                tally.interrupted = true;
                break;
            }
            let output = self.output(index + 1);
            let out_dir = output.join("mutants.out");
            if first && iterate && out_dir.exists() {
                tally.previously_caught = Outcome::read(&out_dir)?.caught_or_unviable();
            } else {
                for dir in [out_dir.clone(), output.join("mutants.out.old")] {
                    if dir.exists() {
                        std::fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                    }
                }
            }
            std::fs::create_dir_all(&output).map_err(|e| format!("{}: {e}", output.display()))?;
            let started = Instant::now();
            let mut command = self.cargo_mutants();
            command
                .arg(format!("--output={}", output.display()))
                .arg(format!("--test-package={}", tier.packages.join(",")))
                .args(match tier.tool {
                    // Stop at the first failing test without waiting for the slow ones that run.
                    Tool::Nextest if self.nextest => {
                        ["--test-tool=nextest", "--cargo-test-arg=--max-fail=1:immediate"].as_slice()
                    }
                    Tool::Nextest | Tool::Cargo => ["--test-tool=cargo"].as_slice(),
                })
                .arg("--jobs=1")
                .args(tier.cargo_args.iter().map(|a| format!("--cargo-arg={a}")))
                .args(tier.test_args.iter().map(|a| format!("--cargo-test-arg={a}")));
            if tier.ignored {
                command.args(match tier.tool {
                    Tool::Nextest if self.nextest => ["--cargo-test-arg=--run-ignored=only"].as_slice(),
                    Tool::Nextest | Tool::Cargo => ["--cargo-test-arg=--", "--cargo-test-arg=--ignored"].as_slice(),
                });
            }
            if tier.packages.iter().all(|p| *p == area.package) {
                command.args(["--timeout-multiplier=3", "--minimum-test-timeout=60", "--build-timeout-multiplier=3"]);
            } else {
                // cargo-mutants 27.1.0 runs its baseline on the mutated package's tests whatever
                // `--test-package` says, so a tier of another package's tests would fail there:
                // the task runs that baseline itself and passes timeouts derived from it.
                let Some(took) = self.baseline(tier)? else {
                    tally.not_retried = tally.missed.len();
                    tally.interrupted = true;
                    break;
                };
                let timeout = (took.as_secs_f64() * 3.0).max(60.0).ceil();
                command.args(["--baseline=skip", &format!("--timeout={timeout}"), "--build-timeout=900"]);
            }
            if first {
                command.args(self.narrowing());
                if iterate {
                    command.arg("--iterate");
                }
            } else {
                // Exactly the mutants still missed; a timeout already counts as caught.
                command.args(tally.missed.iter().map(|name| format!("--re=^{}$", report::escape(name))));
            }
            println!("== mutants: {} (tier {}: {})", area.name, index + 1, tier.label);
            let status = self.run_bounded(&mut command)?;
            let outcome = Outcome::read(&out_dir)?;
            if let Some(status) = status {
                // 0: all caught; 2: some missed; 3: some timed out (cargo-mutants' exit codes).
                if !matches!(status.code(), Some(0 | 2 | 3)) {
                    return Err(format!(
                        "cargo mutants failed ({status}) in {}; see {}",
                        area.name,
                        out_dir.join("debug.log").display()
                    ));
                }
            }
            tally.add_tier(tier.label, &outcome, first, started.elapsed());
            if status.is_none() {
                tally.interrupted = true;
                break;
            }
        }
        // cargo-mutants 27.1.0 applies neither `--re` nor `--exclude-re` to its "delete field"
        // mutants, so a recorded one may have run: it is equivalent, not missed.
        tally.missed.retain(|name| !self.equivalents.contains(name));
        Ok(tally)
    }

    /// Runs `tier`'s tests on the unmutated working tree with the `mutants` profile: `None`
    /// when the time budget ran out first, otherwise how long they took.
    ///
    /// # Errors
    /// When the tests fail without any mutation (no mutant could be judged by them).
    fn baseline(&self, tier: &Tier) -> Result<Option<Duration>, String> {
        let mut command = Command::new(cargo());
        command.current_dir(self.root);
        match tier.tool {
            Tool::Nextest if self.nextest => command.args(["nextest", "run", "--cargo-profile=mutants"]),
            Tool::Nextest | Tool::Cargo => command.args(["test", "--profile=mutants"]),
        };
        command.args(tier.packages.iter().map(|p| format!("--package={p}"))).args(tier.cargo_args).args(tier.test_args);
        if tier.ignored {
            command.args(match tier.tool {
                Tool::Nextest if self.nextest => ["--run-ignored=only"].as_slice(),
                Tool::Nextest | Tool::Cargo => ["--", "--ignored"].as_slice(),
            });
        }
        // A target directory of its own: in cargo-mutants' one, the test binaries that cargo
        // finds fresh were built in cargo-mutants' copy of the tree, since deleted, and read
        // their data files from there (`env!("CARGO_MANIFEST_DIR")`).
        let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| self.root.join("target"), PathBuf::from);
        command.env("CARGO_TARGET_DIR", target.join("mutants-baseline"));
        println!("== mutants: baseline of {} (unmutated)", tier.label);
        let started = Instant::now();
        match self.run_bounded(&mut command)? {
            None => Ok(None),
            Some(status) if status.success() => Ok(Some(started.elapsed())),
            Some(status) => Err(format!("the unmutated tests of {} failed ({status})", tier.label)),
        }
    }

    /// Runs the command; past the deadline, interrupts it (cargo-mutants then stops its tests
    /// and keeps what it found so far) and returns `None`.
    fn run_bounded(&self, command: &mut Command) -> Result<Option<ExitStatus>, String> {
        let mut child = command.stdin(Stdio::null()).spawn().map_err(|e| format!("cannot run cargo mutants: {e}"))?;
        loop {
            if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                return Ok(Some(status));
            }
            if self.deadline.is_some_and(|d| Instant::now() >= d) {
                println!("mutants: time budget reached, interrupting cargo mutants");
                let _ = Command::new("kill").args(["-INT", &child.id().to_string()]).status();
                let _ = child.wait();
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

/// Seconds a mutant is assumed to take when `--next` decides whether a shard fits the budget.
const ESTIMATED_SECONDS_PER_MUTANT: u64 = 10;

/// `--next` and `--shard AREA/K`: runs shards of the progress file (`docs/mutants-progress.json`)
/// and records their figures there. `--next` runs the first shard that is unmeasured or stale
/// (its files changed since it was measured), then, with a budget, the next ones while the budget
/// allows (an estimate of 10 s a mutant); a shard cut short by the budget is not recorded.
fn run_progress(settings: &Settings, root: &Path) -> Result<(), String> {
    let mut progress = Progress::load(root)?;
    let equivalents = Equivalents::load(&root.join("docs/TESTING.md"))?;
    let nextest = nextest_installed();
    let deadline = settings.max_seconds.map(|s| Instant::now() + Duration::from_secs(s));
    let chosen: Vec<&'static Area> = match settings.progress_shard {
        Some((name, _)) => AREAS.iter().filter(|a| a.name == name).collect(),
        None => AREAS.iter().filter(|a| settings.areas.is_empty() || settings.areas.contains(&a.name)).collect(),
    };
    for area in &chosen {
        let new = progress.cover(area.name, &files_with_mutants(root, area)?);
        if !new.is_empty() {
            println!("mutants: {}: a new shard for files no shard covered: {}", area.name, new.join(", "));
            progress.save(root)?;
        }
    }
    let mut failures = Vec::new();
    let mut done: Vec<(&str, usize)> = Vec::new();
    loop {
        let pick = match settings.progress_shard {
            Some((name, k)) if done.is_empty() => {
                if k >= progress.shards(name).len() {
                    return Err(format!(
                        "{name} has {} shards (0 to {})",
                        progress.shards(name).len(),
                        progress.shards(name).len().saturating_sub(1)
                    ));
                }
                Some((AREAS.iter().find(|a| a.name == name).expect("an area"), k))
            }
            Some(_) => None,
            None => next_shard(root, &progress, &chosen, &done)?,
        };
        let Some((area, index)) = pick else {
            if done.is_empty() {
                println!(
                    "mutants: every shard of {} is measured at its files' current contents",
                    chosen.iter().map(|a| a.name).collect::<Vec<_>>().join(", ")
                );
            }
            break;
        };
        if !done.is_empty() && settings.max_seconds.is_none() {
            break;
        }
        let shard = &progress.shards(area.name)[index];
        let hash = progress::hash(root, &shard.files)?;
        let mut shard_settings = settings.clone();
        shard_settings.files.clone_from(&shard.files);
        shard_settings.shard.clone_from(&shard.part);
        shard_settings.regexes.clear();
        shard_settings.changed = None;
        shard_settings.lines = false;
        shard_settings.iterate = false;
        let plan = Plan { area, files: Some(shard.files.clone()) };
        let runner = Runner {
            root,
            plan: &plan,
            settings: &shard_settings,
            equivalents: &equivalents,
            diff: None,
            deadline,
            nextest,
        };
        if let Some(d) = deadline {
            let mutants = runner.count()? as u64;
            let left = d.saturating_duration_since(Instant::now()).as_secs();
            if !done.is_empty() && mutants * ESTIMATED_SECONDS_PER_MUTANT > left {
                println!(
                    "mutants: the next shard, {}/{index} ({mutants} mutants), needs more than the {left} s left",
                    area.name
                );
                break;
            }
        }
        let part = shard.part.as_deref().map_or_else(String::new, |p| format!(", part {p}"));
        println!("== mutants: shard {}/{index}: {}{part}", area.name, shard.files.join(", "));
        if let Some(before) = progress.describe(area.name, index) {
            println!("   recorded before: {before}");
        }
        let started = Instant::now();
        let tally = runner.run()?;
        println!("{}", tally.summary(area.name, area.target));
        done.push((area.name, index));
        if tally.interrupted {
            println!("mutants: shard {}/{index} was cut short by the budget: not recorded", area.name);
            break;
        }
        let figure = Figure {
            caught: tally.caught(),
            timeout: tally.timeout.len(),
            missed: tally.missed.clone(),
            unviable: tally.unviable,
            equivalent: tally.equivalent,
            seconds: started.elapsed().as_secs(),
            tiers: tally.tiers.iter().map(|(label, caught, took)| (label.clone(), *caught, took.as_secs())).collect(),
        };
        progress.record(area.name, index, &progress::head(root)?, &hash, &figure);
        progress.save(root)?;
        println!("mutants: recorded shard {}/{index} in {}", area.name, progress::PATH);
        failures.extend(tally.unexplained().map(|m| format!("missed: {m}")));
    }
    if failures.is_empty() || settings.report_only {
        return Ok(());
    }
    Err(format!(
        "{} mutants survived and are not recorded as equivalent in docs/TESTING.md:\n{}",
        failures.len(),
        failures.join("\n")
    ))
}

/// The first shard of `areas` that is unmeasured or stale and not in `done`.
fn next_shard(
    root: &Path,
    progress: &Progress,
    areas: &[&'static Area],
    done: &[(&str, usize)],
) -> Result<Option<(&'static Area, usize)>, String> {
    for area in areas {
        for (index, shard) in progress.shards(area.name).iter().enumerate() {
            if done.contains(&(area.name, index)) {
                continue;
            }
            let current = progress::hash(root, &shard.files)?;
            if shard.measured_hash.as_deref() != Some(current.as_str()) {
                return Ok(Some((area, index)));
            }
        }
    }
    Ok(None)
}

/// The files of `area` that have mutants, as `cargo mutants --list` names them.
fn files_with_mutants(root: &Path, area: &Area) -> Result<Vec<String>, String> {
    let out = Command::new(cargo())
        .current_dir(root)
        .args(["mutants", "--list", &format!("--package={}", area.package)])
        .args(area.files.iter().map(|f| format!("--file={f}")))
        .output()
        .map_err(|e| format!("cannot run cargo mutants: {e}"))?;
    if !out.status.success() {
        return Err(format!("cargo mutants --list failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let mut files: Vec<String> = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if let Some((file, _)) = line.split_once(':') {
            if !files.iter().any(|f| f == file) {
                files.push(file.to_owned());
            }
        }
    }
    Ok(files)
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
}

fn nextest_installed() -> bool {
    Command::new(cargo()).args(["nextest", "--version"]).output().is_ok_and(|out| out.status.success())
}

fn check_installed() -> Result<(), String> {
    let out = Command::new(cargo()).args(["mutants", "--version"]).output();
    match out {
        Ok(out) if out.status.success() => Ok(()),
        _ => Err(format!(
            "`cargo mutants` is not installed: run `cargo install cargo-mutants --version {CARGO_MUTANTS_VERSION} --locked`"
        )),
    }
}

/// Writes `git diff BASE...HEAD` where cargo-mutants' `--in-diff` reads it.
fn write_diff(root: &Path, base: &str) -> Result<PathBuf, String> {
    let diff = git(root, &["diff", &format!("{base}...HEAD")])?;
    let dir = root.join("target/mutants-out");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join("changed.diff");
    std::fs::write(&path, diff).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

fn git(root: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git").current_dir(root).args(args).output().map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(format!("git {} failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr)));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
