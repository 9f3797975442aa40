//! The project's size rule, checked by `cargo test` (no emulator needed): no file of non-test Rust
//! code above [`MAX_LINES`] lines, unless its module docs say why, with a line starting
//! `//! Length:`.
//!
//! Non-test code is what cargo builds into libraries and binaries: the `.rs` files under each
//! package's `src/` directory, except files named `tests.rs` and anything under a `tests/` or
//! `benches/` directory there. Integration tests (`tools/inboxctl/tests/`, this package's `it/`) and
//! benches (`functions/ingest/benches/`) live outside `src/` and are not counted. A file's lines
//! are counted up to its first `#[cfg(test)]`, so an inline test module at its end does not count.

use crate::root;
use std::path::{Path, PathBuf};

/// The most lines a file of non-test code may have.
const MAX_LINES: usize = 400;

// being split in the architecture step
const BEING_SPLIT: &[&str] = &[];

/// Directories never searched for packages.
fn skipped_dir(name: &str) -> bool {
    name.starts_with('.') || name == "target" || name == "node_modules"
}

/// The workspace's package directories: those under `root` whose `Cargo.toml` has a `[package]`.
fn packages(dir: &Path, found: &mut Vec<PathBuf>) {
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_default();
    if manifest.lines().any(|l| l.trim() == "[package]") {
        found.push(dir.to_path_buf());
    }
    for entry in std::fs::read_dir(dir).expect("read a workspace directory") {
        let entry = entry.expect("a directory entry");
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().expect("a file type").is_dir() && !skipped_dir(&name) {
            packages(&entry.path(), found);
        }
    }
}

/// The `.rs` files of non-test code under `dir` (a package's `src/`).
fn non_test_sources(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let entry = entry.expect("a directory entry");
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if entry.file_type().expect("a file type").is_dir() {
            if name != "tests" && name != "benches" {
                non_test_sources(&path, found);
            }
        } else if name.ends_with(".rs") && name != "tests.rs" {
            found.push(path);
        }
    }
}

/// The lines of `text` that count: those before the first `#[cfg(test)]`.
fn counted_lines(text: &str) -> usize {
    text.lines()
        .take_while(|l| !l.trim_start().starts_with("#[cfg(test)]"))
        .count()
}

/// Whether the module docs state why the file is long (`//! Length: <reason>`).
fn length_explained(text: &str) -> bool {
    text.lines().any(|l| {
        l.strip_prefix("//! Length:")
            .is_some_and(|reason| !reason.trim().is_empty())
    })
}

/// The files (path, text) above the limit without a stated reason, with their counted lines.
fn oversized<'a>(files: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<(&'a str, usize)> {
    files
        .into_iter()
        .map(|(path, text)| (path, counted_lines(text), text))
        .filter(|&(_, lines, text)| lines > MAX_LINES && !length_explained(text))
        .map(|(path, lines, _)| (path, lines))
        .collect()
}

#[test]
fn no_file_of_non_test_code_is_above_the_limit() {
    let root = root();
    let mut dirs = Vec::new();
    packages(&root, &mut dirs);
    assert!(
        dirs.iter().any(|d| d.ends_with("shared/core")),
        "found the workspace's packages under {}: {dirs:?}",
        root.display()
    );
    let mut paths = Vec::new();
    for dir in &dirs {
        non_test_sources(&dir.join("src"), &mut paths);
    }
    let files: Vec<(String, String)> = paths
        .iter()
        .map(|p| {
            let rel = p.strip_prefix(&root).unwrap_or(p);
            let rel = rel.components().map(|c| c.as_os_str().to_string_lossy());
            let text = std::fs::read_to_string(p).expect("read a source file");
            (rel.collect::<Vec<_>>().join("/"), text)
        })
        .filter(|(rel, _)| !BEING_SPLIT.contains(&rel.as_str()))
        .collect();
    assert!(
        files.iter().any(|(rel, _)| rel == "tests/src/lib.rs"),
        "this package's own lib is among the files checked"
    );
    let mut over = oversized(files.iter().map(|(p, t)| (p.as_str(), t.as_str())));
    over.sort();
    let list: Vec<String> = over.iter().map(|(p, n)| format!("  {p}: {n}")).collect();
    assert!(
        over.is_empty(),
        "{} file(s) of non-test code above {MAX_LINES} lines (counted up to the first \
         #[cfg(test)]): split them by responsibility, or state why in their module docs with a \
         `//! Length: …` line\n{}",
        over.len(),
        list.join("\n")
    );
}

#[test]
fn lines_count_up_to_the_first_test_module_and_a_stated_reason_exempts() {
    let long = "fn f() {}\n".repeat(MAX_LINES + 1);
    let with_tests = format!(
        "{}#[cfg(test)]\nmod tests {{}}\n",
        "fn f() {}\n".repeat(MAX_LINES)
    );
    let explained = format!("//! A table.\n//! Length: one generated table.\n{long}");
    let empty_reason = format!("//! Length:\n{long}");
    let found = oversized([
        ("long.rs", long.as_str()),
        ("with_tests.rs", with_tests.as_str()),
        ("explained.rs", explained.as_str()),
        ("empty_reason.rs", empty_reason.as_str()),
        ("short.rs", "fn f() {}\n"),
    ]);
    assert_eq!(
        found,
        vec![
            ("long.rs", MAX_LINES + 1),
            ("empty_reason.rs", MAX_LINES + 2)
        ]
    );
}

#[test]
fn only_non_test_sources_are_searched() {
    let dir = std::env::temp_dir().join(format!("code-size-{}", uuid::Uuid::new_v4().simple()));
    for file in [
        "src/lib.rs",
        "src/a/mod.rs",
        "src/a/tests.rs",
        "src/tests/helpers.rs",
        "src/benches/b.rs",
        "src/notes.md",
    ] {
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("create a directory");
        std::fs::write(&path, "").expect("write a file");
    }
    let mut found = Vec::new();
    non_test_sources(&dir.join("src"), &mut found);
    std::fs::remove_dir_all(&dir).expect("remove the scratch directory");
    found.sort();
    assert_eq!(
        found,
        vec![dir.join("src/a/mod.rs"), dir.join("src/lib.rs")]
    );
}
