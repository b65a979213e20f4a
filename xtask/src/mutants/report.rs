//! What `cargo xtask mutants` reads and reports: the equivalent mutants recorded in
//! `docs/TESTING.md`, the outcome files cargo-mutants writes, and one area's tally over its
//! tiers.

use std::path::Path;
use std::time::Duration;

/// The lines of `docs/TESTING.md` between these markers record the equivalent mutants, one a
/// line: ``- `<file>: <mutation>` — <reason>`` (the mutant's name without its line and column,
/// so that the record survives edits elsewhere in the file), or ``- `<file>:<column>:
/// <mutation>` — <reason>`` when the same mutation occurs more than once in a function and only
/// the one at that column is equivalent.
const BEGIN: &str = "<!-- equivalent mutants: begin -->";
const END: &str = "<!-- equivalent mutants: end -->";

/// One recorded equivalent mutant.
#[derive(Debug, PartialEq, Eq)]
struct Record {
    file: String,
    /// The column, when the record names one.
    column: Option<u32>,
    mutation: String,
}

/// The mutants recorded as equivalent.
#[derive(Debug)]
pub struct Equivalents {
    records: Vec<Record>,
}

impl Equivalents {
    /// Reads the record from `docs/TESTING.md`.
    ///
    /// # Errors
    /// When the file cannot be read, lacks the markers, or a line between them is not a record.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    fn parse(text: &str) -> Result<Self, String> {
        let start = text.find(BEGIN).ok_or_else(|| format!("no `{BEGIN}` line"))? + BEGIN.len();
        let len = text[start..].find(END).ok_or_else(|| format!("no `{END}` line"))?;
        let mut records = Vec::new();
        for line in text[start..start + len].lines().map(str::trim).filter(|l| !l.is_empty()) {
            let record = line
                .strip_prefix("- `")
                .and_then(|rest| rest.split_once("` — "))
                .filter(|(_, reason)| !reason.trim().is_empty())
                .and_then(|(name, _)| Record::parse(name))
                .ok_or_else(|| format!("not a record (- `<file>[:<column>]: <mutation>` — <reason>): {line}"))?;
            records.push(record);
        }
        Ok(Equivalents { records })
    }

    /// Whether a mutant, named as cargo-mutants names it (with line and column), is recorded.
    pub fn contains(&self, name: &str) -> bool {
        let Some((file, _line, column, mutation)) = split_name(name) else { return false };
        self.records
            .iter()
            .any(|r| r.file == file && r.mutation == mutation && r.column.is_none_or(|c| c.to_string() == column))
    }

    /// `--exclude-re` patterns that leave the recorded mutants out of a run.
    pub fn exclude_patterns(&self) -> impl Iterator<Item = String> + '_ {
        self.records.iter().map(|r| {
            let column = r.column.map_or_else(|| r"\d+".to_owned(), |c| c.to_string());
            format!(r"^{}:\d+:{column}: {}$", escape(&r.file), escape(&r.mutation))
        })
    }
}

impl Record {
    /// `<file>: <mutation>` or `<file>:<column>: <mutation>`.
    fn parse(name: &str) -> Option<Self> {
        let (head, mutation) = name.split_once(": ")?;
        let (file, column) = match head.rsplit_once(':') {
            Some((file, column)) => (file, Some(column.parse().ok()?)),
            None => (head, None),
        };
        if !file.ends_with(".rs") || mutation.trim().is_empty() {
            return None;
        }
        Some(Record { file: file.to_owned(), column, mutation: mutation.to_owned() })
    }
}

/// `file:line:col: mutation` split into its four parts (`None` when the positions are not
/// numbers).
fn split_name(name: &str) -> Option<(&str, &str, &str, &str)> {
    let (head, mutation) = name.split_once(": ")?;
    let mut parts = head.rsplitn(3, ':');
    let (column, line, file) = (parts.next()?, parts.next()?, parts.next()?);
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (numeric(line) && numeric(column)).then_some((file, line, column, mutation))
}

/// Escapes the characters the `regex` crate gives a meaning to.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if r"\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The outcome files of one cargo-mutants run (`mutants.out/*.txt`), one mutant name a line.
pub struct Outcome {
    pub caught: Vec<String>,
    pub missed: Vec<String>,
    pub timeout: Vec<String>,
    pub unviable: Vec<String>,
    pub previously_caught: Vec<String>,
    /// How many mutants the run set out to test (`mutants.json`).
    pub planned: usize,
}

impl Outcome {
    /// Reads the outcome files of `dir` (a missing file reads as empty).
    ///
    /// # Errors
    /// When `mutants.json` is there but is not a JSON array.
    pub fn read(dir: &Path) -> Result<Self, String> {
        let lines = |name: &str| -> Vec<String> {
            std::fs::read_to_string(dir.join(name))
                .map(|text| text.lines().filter(|l| !l.is_empty()).map(str::to_owned).collect())
                .unwrap_or_default()
        };
        let planned = match std::fs::read_to_string(dir.join("mutants.json")) {
            Ok(text) => serde_json::from_str::<serde_json::Value>(&text)
                .map_err(|e| format!("{}: {e}", dir.join("mutants.json").display()))?
                .as_array()
                .map_or(0, Vec::len),
            Err(_) => 0,
        };
        Ok(Outcome {
            caught: lines("caught.txt"),
            missed: lines("missed.txt"),
            timeout: lines("timeout.txt"),
            unviable: lines("unviable.txt"),
            previously_caught: lines("previously_caught.txt"),
            planned,
        })
    }

    /// Every mutant this output directory counts as dealt with (what `--iterate` skips).
    pub fn caught_or_unviable(&self) -> usize {
        self.caught.len() + self.unviable.len() + self.previously_caught.len()
    }

    fn tested(&self) -> usize {
        self.caught.len() + self.missed.len() + self.timeout.len() + self.unviable.len()
    }
}

/// One area's outcome over its tiers.
pub struct Tally {
    /// Mutants left out of the run because `docs/TESTING.md` records them as equivalent.
    pub equivalent: usize,
    /// With `--iterate`: mutants an earlier run caught (or found unviable), not run again.
    pub previously_caught: usize,
    /// Mutants tier 1 could not build: neither caught nor missed, out of the score.
    pub unviable: usize,
    /// Per tier: its label, the mutants it caught, and how long it took.
    pub tiers: Vec<(String, usize, Duration)>,
    /// Mutants whose tests did not finish in time: caught (the tests hang).
    pub timeout: Vec<String>,
    /// The mutants no tier has caught so far.
    pub missed: Vec<String>,
    /// Mutants tier 1 set out to test but did not reach because the time budget ran out.
    pub untested: usize,
    /// Missed mutants that a later tier did not get to try because the time budget ran out
    /// (still counted as missed).
    pub not_retried: usize,
    pub interrupted: bool,
}

impl Tally {
    pub fn new(equivalent: usize) -> Self {
        Tally {
            equivalent,
            previously_caught: 0,
            unviable: 0,
            tiers: Vec::new(),
            timeout: Vec::new(),
            missed: Vec::new(),
            untested: 0,
            not_retried: 0,
            interrupted: false,
        }
    }

    /// Adds a tier's outcome. Tier 1 (`first`) tested every selected mutant: its unviable ones
    /// count, its missed ones are the survivors, and what it did not reach is untested. A later
    /// tier tested only the survivors: those it caught (or timed out on) leave them, the rest
    /// (missed, not reached, or unviable under its own test targets) stay missed.
    pub fn add_tier(&mut self, label: &str, outcome: &Outcome, first: bool, took: Duration) {
        if first {
            self.tiers.push((label.to_owned(), outcome.caught.len(), took));
            self.timeout.extend(outcome.timeout.iter().cloned());
            self.unviable = outcome.unviable.len();
            self.missed.clone_from(&outcome.missed);
            self.untested = outcome.planned.saturating_sub(outcome.tested());
        } else {
            // Only the survivors count: cargo-mutants 27.1.0 runs its "delete field" mutants
            // whatever `--re` says, and tier 1 judged those already.
            let survivor = |name: &&String| self.missed.contains(name);
            let caught = outcome.caught.iter().filter(survivor).count();
            let timeout: Vec<String> = outcome.timeout.iter().filter(survivor).cloned().collect();
            let reported = |name: &String| {
                [&outcome.caught, &outcome.missed, &outcome.timeout, &outcome.unviable].iter().any(|l| l.contains(name))
            };
            self.not_retried = self.missed.iter().filter(|name| !reported(name)).count();
            self.tiers.push((label.to_owned(), caught, took));
            self.missed.retain(|name| !outcome.caught.contains(name) && !timeout.contains(name));
            self.timeout.extend(timeout);
        }
    }

    /// The mutants the tiers caught (timeouts apart).
    pub fn caught(&self) -> usize {
        self.tiers.iter().map(|(_, caught, _)| caught).sum()
    }

    /// Missed mutants that are not recorded as equivalent (equivalents are left out of the
    /// run, so every missed mutant is unexplained).
    pub fn unexplained(&self) -> impl Iterator<Item = &String> {
        self.missed.iter()
    }

    /// The report: counts, the score caught / (caught + missed) against the target (timeouts
    /// count as caught; unviable and equivalent mutants are out of it), time per tier.
    pub fn summary(&self, area: &str, target: f64) -> String {
        let caught = self.caught() + self.timeout.len();
        let judged = caught + self.missed.len();
        let mut out = format!(
            "{area}: {judged} mutants judged: {caught} caught ({} by timeout), {} missed; {} unviable, {} equivalent (left out)",
            self.timeout.len(),
            self.missed.len(),
            self.unviable,
            self.equivalent
        );
        if self.previously_caught > 0 {
            out.push_str(&format!("; {} caught or unviable in the previous run", self.previously_caught));
        }
        if judged > 0 {
            let score = caught as f64 / judged as f64;
            let verdict = if score >= target { "meets" } else { "below" };
            out.push_str(&format!(
                "\n  score caught/(caught+missed) {:.1}% ({verdict} the {:.0}% target)",
                score * 100.0,
                target * 100.0
            ));
        }
        for (label, caught, took) in &self.tiers {
            out.push_str(&format!("\n  {label}: caught {caught} in {:.0} s", took.as_secs_f64()));
        }
        for name in &self.timeout {
            out.push_str(&format!("\n  timeout: {name}"));
        }
        for name in &self.missed {
            out.push_str(&format!("\n  missed: {name}"));
        }
        if self.interrupted {
            out.push_str(&format!(
                "\n  time budget reached: {} mutants untested, {} missed ones not retried by the later tiers",
                self.untested, self.not_retried
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "intro\n<!-- equivalent mutants: begin -->\n\
        - `a/src/x.rs: replace < with <= in f` — the bound is never reached\n\
        \n\
        - `a/src/y.rs: replace g -> bool with true` — only a cache hint\n\
        - `a/src/y.rs:21: replace || with && in h` — the first test is implied by the next\n\
        <!-- equivalent mutants: end -->\nafter\n";

    #[test]
    fn records_are_read_and_matched_without_line_and_with_their_column_if_any() {
        let eq = Equivalents::parse(DOC).unwrap();
        assert_eq!(eq.records.len(), 3);
        assert_eq!(
            eq.records[2],
            Record { file: "a/src/y.rs".into(), column: Some(21), mutation: "replace || with && in h".into() }
        );
        assert!(eq.contains("a/src/x.rs:12:7: replace < with <= in f"));
        assert!(eq.contains("a/src/x.rs:99:1: replace < with <= in f"));
        assert!(!eq.contains("a/src/x.rs:12:7: replace < with > in f"));
        assert!(!eq.contains("a/src/z.rs:1:1: replace < with <= in f"));
        assert!(eq.contains("a/src/y.rs:46:21: replace || with && in h"));
        assert!(!eq.contains("a/src/y.rs:46:37: replace || with && in h"));
        assert!(!eq.contains("a/src/y.rs:x:21: replace || with && in h"));
    }

    #[test]
    fn exclude_patterns_escape_the_mutation_and_allow_any_line() {
        let eq = Equivalents::parse(DOC).unwrap();
        let patterns: Vec<String> = eq.exclude_patterns().collect();
        assert_eq!(patterns[0], r"^a/src/x\.rs:\d+:\d+: replace < with <= in f$");
        assert_eq!(patterns[1], r"^a/src/y\.rs:\d+:\d+: replace g \-> bool with true$");
        assert_eq!(patterns[2], r"^a/src/y\.rs:\d+:21: replace \|\| with \&\& in h$");
    }

    #[test]
    fn malformed_records_and_missing_markers_are_errors() {
        let bad = DOC.replace(" — the bound", " the bound");
        assert!(Equivalents::parse(&bad).unwrap_err().contains("not a record"));
        let bad = DOC.replace("y.rs:21:", "y.rs:x:");
        assert!(Equivalents::parse(&bad).unwrap_err().contains("not a record"));
        assert!(Equivalents::parse("no markers").unwrap_err().contains("begin"));
    }

    fn outcome(caught: &[&str], missed: &[&str], timeout: &[&str], unviable: usize, planned: usize) -> Outcome {
        let names = |list: &[&str]| list.iter().map(|n| (*n).to_owned()).collect();
        Outcome {
            caught: names(caught),
            missed: names(missed),
            timeout: names(timeout),
            unviable: vec!["u".to_owned(); unviable],
            previously_caught: Vec::new(),
            planned,
        }
    }

    #[test]
    fn the_summary_scores_timeouts_as_caught_and_leaves_out_unviable_and_equivalent() {
        let mut tally = Tally::new(1);
        let first = outcome(&["a", "b", "c", "d", "e", "f", "g"], &["m", "n"], &["t"], 3, 13);
        tally.add_tier("tier one", &first, true, Duration::from_secs(5));
        // The second tier catches n, misses m, and catches a, which tier one caught already
        // (cargo-mutants runs its "delete field" mutants whatever `--re` says): a counts once.
        tally.add_tier("tier two", &outcome(&["n", "a"], &["m"], &[], 0, 3), false, Duration::from_secs(2));
        let summary = tally.summary("runtime", 0.95);
        assert!(
            summary.starts_with(
                "runtime: 10 mutants judged: 9 caught (1 by timeout), 1 missed; 3 unviable, 1 equivalent (left out)"
            ),
            "{summary}"
        );
        assert!(summary.contains("score caught/(caught+missed) 90.0% (below the 95% target)"), "{summary}");
        assert!(summary.contains("tier one: caught 7 in 5 s"), "{summary}");
        assert!(summary.contains("tier two: caught 1 in 2 s"), "{summary}");
        assert_eq!(tally.unexplained().collect::<Vec<_>>(), ["m"]);
        assert_eq!((tally.untested, tally.not_retried), (0, 0));
    }

    #[test]
    fn an_interrupted_later_tier_keeps_the_survivors_it_did_not_reach_as_missed() {
        let mut tally = Tally::new(0);
        tally.add_tier("one", &outcome(&["a"], &["m", "n", "o"], &[], 0, 6), true, Duration::ZERO);
        assert_eq!(tally.untested, 2);
        // Tier two times out on m and is interrupted before n and o.
        tally.add_tier("two", &outcome(&[], &[], &["m"], 0, 3), false, Duration::ZERO);
        assert_eq!(tally.unexplained().collect::<Vec<_>>(), ["n", "o"]);
        assert_eq!(tally.not_retried, 2);
        assert!(tally.summary("x", 0.9).starts_with("x: 4 mutants judged: 2 caught (1 by timeout), 2 missed"));
    }
}
