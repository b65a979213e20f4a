//! Replays `tests/vectors/regressions.jsonl`: every disagreement with the reference that
//! `cargo xtask conformance` ever found, with the reference's verdict, through the same checks
//! the differential run uses (`tests/common/checks.rs`).
//!
//! A case whose `deliberate` field explains a difference this project keeps on purpose
//! (docs/PROTOCOL.md section 7) carries this project's verdict in `ours`, and is checked against it.

mod common;

use common::checks::check_case;
use common::{repo_file, vectors};
use serde_json::{json, Value};

fn regressions() -> Vec<Value> {
    let text = String::from_utf8(repo_file("tests/vectors/regressions.jsonl")).expect("UTF-8");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l}: {e}")))
        .collect()
}

#[test]
fn every_regression_case_agrees() {
    let cases = regressions();
    let mut ids = std::collections::HashSet::new();
    let mut failures = Vec::new();
    for case in &cases {
        let id = case["id"].as_str().expect("id");
        assert!(ids.insert(id.to_owned()), "duplicate id {id}");
        let expect = match case.get("deliberate") {
            Some(reason) => {
                assert!(reason.as_str().is_some_and(|r| !r.is_empty()), "{id}: a deliberate difference needs a reason");
                case.get("ours").unwrap_or_else(|| panic!("{id}: a deliberate difference needs `ours`"))
            }
            None => &case["expect"],
        };
        if let Err(e) = check_case(id, &case["request"], expect) {
            failures.push(e);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} regression cases fail:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// The checks are not vacuous: a verdict turned around, or a byte changed, is a disagreement.
#[test]
fn the_checks_catch_a_wrong_verdict() {
    let mut caught = 0;
    for case in vectors().iter().take(200) {
        let id = case["id"].as_str().unwrap();
        let request = &case["request"];
        let expect = &case["expect"];
        check_case(id, request, expect).unwrap();
        let mut wrong = expect.clone();
        if expect["ok"] == true {
            match request["op"].as_str() {
                Some("encode") => {
                    let frame = expect["frame"].as_str().unwrap();
                    let flipped = if frame.ends_with('0') { "1" } else { "0" };
                    wrong["frame"] = json!(format!("{}{flipped}", &frame[..frame.len() - 1]));
                }
                _ => wrong = json!({"ok": false, "stage": "push", "chunk": 0, "decodedBefore": 0, "error": "x"}),
            }
        } else {
            wrong = json!({"ok": true, "messages": [], "canonical": ["f6"], "frame": "00"});
            if request["op"] == "decodeCbor" {
                wrong["canonical"] = json!("f6f6");
            }
        }
        assert!(check_case(id, request, &wrong).is_err(), "{id}: a wrong verdict went unnoticed: {wrong}");
        caught += 1;
    }
    assert_eq!(caught, 200);
}
