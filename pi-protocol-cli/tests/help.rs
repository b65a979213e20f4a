//! Every `--help` of the command: printed on stdout with exit status 0, naming every subcommand
//! and flag.

use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pi-protocol")).args(args).output().expect("the binary runs")
}

/// The help printed by `args`, checked to be on stdout with exit status 0.
fn help(args: &[&str]) -> String {
    let out = run(args);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Usage: pi-protocol"), "{args:?}: {text}");
    text
}

const SUBCOMMANDS: [&str; 9] =
    ["decode", "encode", "inspect", "stats", "schema", "discover", "call", "catalogue", "subscribe"];

#[test]
fn the_top_level_help_lists_every_subcommand_without_markup() {
    for args in [&["--help"][..], &["-h"], &["help"]] {
        let text = help(args);
        let commands: Vec<&str> = text
            .lines()
            .skip_while(|l| *l != "Commands:")
            .skip(1)
            .take_while(|l| !l.is_empty())
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        assert_eq!(
            commands,
            ["decode", "encode", "inspect", "stats", "schema", "discover", "call", "catalogue", "subscribe", "help"],
            "{args:?}: {text}"
        );
        assert!(!text.contains('`'), "{args:?}: {text}");
    }
}

#[test]
fn every_subcommand_help_goes_to_stdout() {
    for command in SUBCOMMANDS {
        help(&[command, "--help"]);
        help(&[command, "-h"]);
        help(&["help", command]);
    }
    let diff = help(&["schema", "diff", "--help"]);
    for flag in ["<OLD>", "<NEW>", "--format", "--require", "backward", "forward", "both"] {
        assert!(diff.contains(flag), "schema diff --help lacks {flag}:\n{diff}");
    }
    help(&["help", "schema", "diff"]);
}

#[test]
fn stream_commands_explain_every_flag() {
    for command in ["decode", "encode", "inspect", "stats"] {
        let text = help(&[command, "--help"]);
        for flag in ["--side", "--schema", "--max-frame-length", "[FILE]"] {
            assert!(text.contains(flag), "{command} --help lacks {flag}:\n{text}");
        }
    }
    let inspect = help(&["inspect", "--help"]);
    assert!(inspect.contains("--no-diag") && inspect.contains("--max-diag-chars"), "{inspect}");
    assert!(help(&["stats", "--help"]).contains("--json"));
    assert!(help(&["decode", "--help"]).contains("--chunk-size"));
}

#[test]
fn bad_arguments_go_to_stderr_with_status_2() {
    for args in [&[][..], &["decode"], &["schema"], &["schema", "diff", "only-one"]] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty() && !out.stderr.is_empty(), "{args:?}");
    }
}
