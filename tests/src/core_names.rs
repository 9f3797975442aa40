//! The core names no application: no file of `shared/core` (code, tests, docs or manifest)
//! mentions the wallet, so the core stays a library any application builds on, and what an
//! application needs from it (a reserved source name, a function id in the configuration page)
//! is passed in by whoever composes the two.

use crate::root;
use std::path::Path;

/// The core's files, relative to the workspace, whose text names `word` (case-insensitively).
fn naming(dir: &Path, word: &str, found: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        panic!("read {}", dir.display())
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            naming(&path, word, found);
        } else if let Ok(text) = std::fs::read_to_string(&path) {
            if text.to_lowercase().contains(word) {
                found.push(
                    path.strip_prefix(root())
                        .unwrap_or(&path)
                        .display()
                        .to_string(),
                );
            }
        }
    }
}

#[test]
fn the_core_names_no_application() {
    let core = root().join("shared/core");
    let mut found = Vec::new();
    naming(&core, "wallet", &mut found);
    assert!(
        found.is_empty(),
        "files of shared/core name the wallet: {found:?}"
    );
    // The check reads the core's sources at all: a word every source file of it has is found.
    let mut every = Vec::new();
    naming(&core.join("src"), "use ", &mut every);
    assert!(every.len() > 50, "{}", every.len());
}
