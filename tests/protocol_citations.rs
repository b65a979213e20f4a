//! Every citation of the protocol document resolves.
//!
//! Doc comments, error messages and docs cite the written protocol as "docs/PROTOCOL.md section
//! 4" or "docs/PROTOCOL.md sections 1-3, 5 and 7". This test reads the numbered headings of
//! `docs/PROTOCOL.md` (`## 4. Envelopes`) and fails, naming the file and the citation, when a
//! citation anywhere in the repository names a section that does not exist, or when Rust code
//! or a pinned compiler message names the document without the `docs/` folder it lives in.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The document's file name, built so that this file's own source holds no citation of it.
const NAME: &str = concat!("PROTOCOL", ".md");

/// Folders that hold no citations of ours (build output, dependencies, recorded data).
const SKIPPED_DIRS: &[&str] = &["target", ".git", "node_modules", "corpus", "artifacts", "vectors", "captures"];

/// Extensions of the files that may cite the document.
const TEXT_EXTENSIONS: &[&str] = &["rs", "md", "stderr", "json", "toml", "mjs", "sh", "py"];

/// Extensions of files in which every mention must be the repository path `docs/…`.
const PATH_REQUIRED: &[&str] = &["rs", "stderr"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The section numbers of `document`: every heading `## N. Title`.
fn sections(document: &str) -> BTreeSet<u32> {
    document
        .lines()
        .filter_map(|line| line.strip_prefix("## "))
        .filter_map(|rest| rest.split_once('.'))
        .filter_map(|(number, _)| number.parse().ok())
        .collect()
}

/// `text` with line breaks, indentation and leading comment markers (`//!`, `///`, `//`, `*`,
/// `#`) folded into single spaces, so that a citation wrapped over two comment lines reads as
/// one.
fn flatten(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let line = line.trim_start();
        let line = ["//!", "///", "//", "* ", "# "].iter().find_map(|marker| line.strip_prefix(marker)).unwrap_or(line);
        out.push_str(line.trim());
        out.push(' ');
    }
    out
}

/// Reads a decimal number at the start of `text`: the number and the rest.
fn number(text: &str) -> Option<(u32, &str)> {
    let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let value = text[..digits].parse().ok()?;
    Some((value, &text[digits..]))
}

/// The sections cited right after one mention of the document (`after` is the text that
/// follows the file name): `section 4`, `sections 1 and 7`, `sections 1-3, 5 and 6`. Empty when
/// no section number follows.
fn cited_sections(after: &str) -> Vec<u32> {
    let rest = after.trim_start_matches('`').trim_start();
    let Some(rest) = rest.strip_prefix("sections ").or_else(|| rest.strip_prefix("section ")) else {
        return Vec::new();
    };
    let mut cited = Vec::new();
    let mut rest = rest;
    while let Some((first, tail)) = number(rest) {
        let (last, tail) = match tail.strip_prefix('-').or_else(|| tail.strip_prefix('–')).and_then(number) {
            Some((last, tail)) => (last, tail),
            None => (first, tail),
        };
        cited.extend(first..=last.max(first));
        let Some(next) = [", and ", ", ", " and "].iter().find_map(|sep| tail.strip_prefix(sep)) else { break };
        if number(next).is_none() {
            break;
        }
        rest = next;
    }
    cited
}

/// One problem found in one file.
fn problems_in(path: &Path, text: &str, known: &BTreeSet<u32>, citations: &mut usize) -> Vec<String> {
    let relative = path.strip_prefix(root()).unwrap_or(path).display().to_string();
    let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let flat = flatten(text);
    let mut problems = Vec::new();
    for (at, _) in flat.match_indices(NAME) {
        let mut start = at.saturating_sub(30);
        while !flat.is_char_boundary(start) {
            start -= 1;
        }
        let context: String = flat[start..].chars().take(90).collect();
        if PATH_REQUIRED.contains(&extension) && !flat[..at].ends_with("docs/") {
            problems.push(format!("{relative}: cite it as docs/{NAME}: \"{context}\""));
        }
        let cited = cited_sections(&flat[at + NAME.len()..]);
        *citations += cited.len();
        for section in cited.into_iter().filter(|s| !known.contains(s)) {
            problems.push(format!("{relative}: section {section} does not exist in docs/{NAME}: \"{context}\""));
        }
    }
    problems
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.unwrap().path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if !SKIPPED_DIRS.contains(&name) {
                walk(&path, files);
            }
        } else if path.extension().and_then(|e| e.to_str()).is_some_and(|e| TEXT_EXTENSIONS.contains(&e)) {
            files.push(path);
        }
    }
}

#[test]
fn every_citation_names_an_existing_section() {
    let document = std::fs::read_to_string(root().join("docs").join(NAME)).expect("docs/ holds the protocol document");
    let known = sections(&document);
    let numbered: Vec<u32> = (1..=known.len() as u32).collect();
    assert_eq!(known.iter().copied().collect::<Vec<_>>(), numbered, "sections are numbered 1, 2, 3, ... without gaps");

    let mut files = Vec::new();
    walk(&root(), &mut files);
    let mut citations = 0;
    let mut problems = Vec::new();
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else { continue };
        problems.extend(problems_in(file, &text, &known, &mut citations));
    }
    assert!(problems.is_empty(), "{} bad citation(s):\n{}", problems.len(), problems.join("\n"));
    // The code cites the document about fifty times; far fewer means the scan went blind.
    assert!(citations >= 40, "only {citations} section citations found in {} files", files.len());
}

#[test]
fn the_document_has_the_sections_the_code_was_written_against() {
    let document = std::fs::read_to_string(root().join("docs").join(NAME)).unwrap();
    let known = sections(&document);
    for section in 1..=8 {
        assert!(known.contains(&section), "section {section} is missing");
    }
    assert!(document.contains("## 1. Framing"), "section 1 is framing");
    assert!(document.contains("## 4. Envelopes"), "section 4 is the envelopes");
    assert!(document.contains("## 8. Connection rules"), "section 8 is the connection rules");
}

#[test]
fn citation_forms_are_read_as_written() {
    assert_eq!(cited_sections(" section 4, targets"), [4]);
    assert_eq!(cited_sections(" sections 1 and 7)"), [1, 7]);
    assert_eq!(cited_sections(" sections 1, 4 and 7)."), [1, 4, 7]);
    assert_eq!(cited_sections(" sections 1-3, 5 and 6)"), [1, 2, 3, 5, 6]);
    assert_eq!(cited_sections("` section 2"), [2]);
    assert_eq!(cited_sections(": the reference"), Vec::<u32>::new());
    assert_eq!(cited_sections(" section N"), Vec::<u32>::new());
    let wrapped = flatten("//! an integer (docs/PROTOCOL.md sections\n//! 2-4: integers)");
    assert_eq!(cited_sections(&wrapped[wrapped.find(".md").unwrap() + 3..]), [2, 3, 4]);
}

#[test]
fn a_missing_section_and_a_bare_file_name_are_reported() {
    let known: BTreeSet<u32> = (1..=7).collect();
    let mut citations = 0;
    let path = root().join("src/example.rs");
    let problems = problems_in(&path, &format!("/// (docs/{NAME} sections 2 and 9)\n"), &known, &mut citations);
    assert_eq!(citations, 2);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].starts_with("src/example.rs: section 9 does not exist"), "{}", problems[0]);

    let problems = problems_in(&path, &format!("/// ({NAME} section 2)\n"), &known, &mut citations);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("cite it as docs/"), "{}", problems[0]);

    // Markdown may name the file without the folder (a link's text, say), but not a missing section.
    let readme = root().join("README.md");
    assert!(problems_in(&readme, &format!("see [{NAME}](docs/{NAME})\n"), &known, &mut citations).is_empty());
    assert_eq!(problems_in(&readme, &format!("docs/{NAME} section 12\n"), &known, &mut citations).len(), 1);
}
