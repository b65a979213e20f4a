//! `cargo xtask gen`: one `generate_*(check)` function per generated artifact.
//!
//! Without `check` each function rewrites its file when the content changed. With `check` it
//! only compares, and a stale file is an error that names the file and the command to run.

use std::fs;
use std::path::{Path, PathBuf};

/// The command that regenerates every artifact (named in stale-file errors).
const COMMAND: &str = "cargo xtask gen";

/// Runs every generator of the project.
///
/// # Errors
/// A message for the first generator that failed, or (with `check`) the first stale file.
pub fn generate(check: bool) -> Result<(), String> {
    generate_v8(check)
}

/// `src/generated/v8.rs` from `schema/pi-protocol.v8.json`.
fn generate_v8(check: bool) -> Result<(), String> {
    const SCHEMA: &str = "schema/pi-protocol.v8.json";
    const OUTPUT: &str = "src/generated/v8.rs";
    let root = project_root();
    let schema = fs::read_to_string(root.join(SCHEMA)).map_err(|e| format!("cannot read {SCHEMA}: {e}"))?;
    let code = pi_protocol_gen::generate(&schema, SCHEMA).map_err(|e| format!("{SCHEMA}: {e}"))?;
    // Formatted as `cargo fmt` would, so the checked-in file passes `cargo fmt --check`.
    let code =
        pi_protocol_gen::rustfmt(&code, Some(&root.join("rustfmt.toml"))).map_err(|e| format!("{OUTPUT}: {e}"))?;
    ensure_file_contents(&root, OUTPUT, &code, check)
}

/// The workspace root: the parent of this crate's directory.
pub fn project_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().unwrap_or(manifest_dir).to_path_buf()
}

/// Makes `root/relative` hold exactly `contents`, or (with `check`) fails if it does not.
fn ensure_file_contents(root: &Path, relative: &str, contents: &str, check: bool) -> Result<(), String> {
    let path = root.join(relative);
    match fs::read_to_string(&path) {
        Ok(old) if old == contents => return Ok(()),
        Ok(_) | Err(_) if check => {
            return Err(format!("{relative} is stale: it differs from what its schema generates; run `{COMMAND}`"))
        }
        _ => {}
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    fs::write(&path, contents).map_err(|e| format!("cannot write {relative}: {e}"))?;
    eprintln!("updated {relative}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_fails_on_stale_files_and_write_fixes_them() {
        let dir = std::env::temp_dir().join(format!("xtask-codegen-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let missing = ensure_file_contents(&dir, "gen/out.rs", "new\n", true).unwrap_err();
        assert_eq!(missing, "gen/out.rs is stale: it differs from what its schema generates; run `cargo xtask gen`");
        ensure_file_contents(&dir, "gen/out.rs", "old\n", false).unwrap();
        assert_eq!(fs::read_to_string(dir.join("gen/out.rs")).unwrap(), "old\n");
        let stale = ensure_file_contents(&dir, "gen/out.rs", "new\n", true).unwrap_err();
        assert!(stale.contains("gen/out.rs is stale") && stale.contains("`cargo xtask gen`"), "{stale}");
        assert_eq!(fs::read_to_string(dir.join("gen/out.rs")).unwrap(), "old\n", "check must not write");
        ensure_file_contents(&dir, "gen/out.rs", "new\n", false).unwrap();
        ensure_file_contents(&dir, "gen/out.rs", "new\n", true).unwrap();
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_checked_in_v8_module_is_up_to_date() {
        generate_v8(true).unwrap();
    }
}
