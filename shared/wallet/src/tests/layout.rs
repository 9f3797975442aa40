//! The `# Layout` of `lib.rs`, checked: it names every module, and each slice's code imports only
//! from the rows below it (test code is free to reach anywhere).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Each top-level module's row in the `# Layout` (higher rows build on lower ones). Modules of
/// one row are one slice, except row 3 ([`crate::email`] and [`crate::payments`] side by side,
/// neither importing the other).
const ROWS: [(&str, u8); 12] = [
    ("money", 0),
    ("tenant", 0),
    ("parse", 0),
    ("balance", 1),
    ("autopay", 2),
    ("email", 3),
    ("payments", 3),
    ("config", 4),
    ("handler", 4),
    ("ledger", 4),
    ("reconcile", 4),
    ("lib", 4),
];

/// The imports that still run up (or across row 3): `(file, the module it reaches)`. Issue 30
/// removes them one by one; a new one fails the test, and so does one removed but still listed.
const RUN_UP: [(&str, &str); 2] = [
    ("balance/events.rs", "autopay"),
    ("balance/views.rs", "autopay"),
];

/// The domain files: records and pure rules, which know neither DynamoDB nor the item layout
/// (none may name `aws_sdk_dynamodb` or `crate::balance::items` in its code).
const DOMAIN: [&str; 4] = [
    "balance/model.rs",
    "balance/model/shards.rs",
    "balance/rules.rs",
    "balance/notices.rs",
];

fn row(module: &str) -> Option<u8> {
    ROWS.iter().find(|(m, _)| *m == module).map(|(_, r)| *r)
}

/// The crate's non-test source files, relative to `src/`.
fn sources(dir: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        panic!("read {}", dir.display())
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "tests" && name != "fakes" {
                sources(&path, &rel.join(&name), out);
            }
        } else if name.ends_with(".rs") && name != "tests.rs" && name != "fakes.rs" {
            out.push(rel.join(name));
        }
    }
}

/// A file's code without its comments and its inline test module.
fn code(source: &str) -> String {
    let body = source
        .find("#[cfg(test)]\nmod tests {")
        .map_or(source, |at| &source[..at]);
    body.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules a file's code names as `crate::{module}` (in a path or a `use` list).
fn reached(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        let names: Vec<&str> = match rest.strip_prefix('{') {
            Some(list) => list
                .split('}')
                .next()
                .unwrap_or("")
                .split(',')
                .filter_map(|p| p.trim().split("::").next())
                .collect(),
            None => vec![rest
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
                .unwrap_or("")],
        };
        out.extend(
            names
                .into_iter()
                .filter(|n| row(n).is_some())
                .map(String::from),
        );
    }
    out
}

#[test]
fn layout_names_every_module() {
    let source = include_str!("../lib.rs");
    let docs: String = source.lines().filter(|l| l.starts_with("//!")).collect();
    let modules: Vec<&str> = source
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod ")?.strip_suffix(';'))
        .collect();
    assert!(modules.len() >= 10, "{modules:?}");
    for m in modules {
        assert!(
            docs.contains(&format!("[`{m}`]")),
            "the Layout docs do not name `{m}`"
        );
        assert!(row(m).is_some(), "`{m}` has no row in the Layout");
    }
}

#[test]
fn layout_imports_point_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, Path::new(""), &mut files);
    assert!(files.len() > 40, "{files:?}");
    let mut up = BTreeSet::new();
    for file in &files {
        let rel = file.to_string_lossy().replace('\\', "/");
        let top = rel.split('/').next().unwrap_or("");
        let top = top.strip_suffix(".rs").unwrap_or(top);
        let Some(from) = row(top) else {
            panic!("`{rel}` is in no row of the Layout")
        };
        let Ok(text) = std::fs::read_to_string(src.join(file)) else {
            panic!("read {rel}")
        };
        for module in reached(&code(&text)) {
            let to = row(&module).unwrap_or(0);
            let same_slice = module == top || (from == to && from != 3);
            if !same_slice && to >= from {
                up.insert((rel.clone(), module));
            }
        }
    }
    let known: BTreeSet<(String, String)> = RUN_UP
        .iter()
        .map(|(f, m)| (f.to_string(), m.to_string()))
        .collect();
    let new: Vec<_> = up.difference(&known).collect();
    let gone: Vec<_> = known.difference(&up).collect();
    assert!(
        new.is_empty(),
        "imports that run up the Layout (import from a lower row instead): {new:?}"
    );
    assert!(
        gone.is_empty(),
        "no longer run up: remove them from RUN_UP: {gone:?}"
    );
}

#[test]
fn domain_files_know_no_storage() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut leaks = BTreeSet::new();
    for file in DOMAIN {
        let Ok(text) = std::fs::read_to_string(src.join(file)) else {
            panic!("read {file}")
        };
        let code = code(&text);
        for what in ["aws_sdk_dynamodb", "crate::balance::items"] {
            if code.contains(what) {
                leaks.insert((file.to_string(), what.to_string()));
            }
        }
    }
    assert!(
        leaks.is_empty(),
        "domain files that know storage (move that part to the items layer): {leaks:?}"
    );
}
