//! The project's size rule, checked by `cargo test` (no emulator needed): no file above
//! [`MAX_LINES`] lines of non-test Rust code, unless its module docs say why, with a line starting
//! `//! Length:`.
//!
//! Non-test code is what cargo builds into libraries and binaries: the `.rs` files under each
//! package's `src/` directory, except files named `tests.rs` and anything under a `tests/` or
//! `benches/` directory there. Integration tests (`tools/inboxctl/tests/`, this package's `it/`) and
//! benches (`functions/ingest/benches/`) live outside `src/` and are not counted. Every line of a
//! file counts except those of its `#[cfg(test)]` items (from their first attribute, doc comments
//! included, through their end), wherever they stand: a `mod tests;` declared at the top no longer
//! exempts the code below it. The file is parsed with `syn` (lines from `proc-macro2`'s
//! `span-locations`), so a `#[cfg(test)]` inside a string or a comment is not taken for one.

use crate::root;
use proc_macro2::TokenStream;
use quote::ToTokens;
use std::path::{Path, PathBuf};
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::visit::Visit;
use syn::{Attribute, Meta, Token};

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

/// Whether a `cfg` predicate holds only in test builds: `test`, or an `all(…)` requiring it
/// (`any(test, feature = "x")` is built without tests too, so it counts).
fn requires_test(predicate: &Meta) -> bool {
    match predicate {
        Meta::Path(path) => path.is_ident("test"),
        Meta::List(list) if list.path.is_ident("all") => list
            .parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
            .is_ok_and(|all| all.iter().any(requires_test)),
        _ => false,
    }
}

/// Whether the outer attributes leading `tokens` (a syntax node printed back, its spans kept)
/// make it test-only.
fn test_only(tokens: TokenStream) -> bool {
    let leading = |input: ParseStream| {
        let attrs = input.call(Attribute::parse_outer)?;
        input.parse::<TokenStream>()?;
        Ok(attrs)
    };
    leading.parse2(tokens).is_ok_and(|attrs| {
        attrs.iter().any(|attr| {
            attr.path().is_ident("cfg")
                && attr.parse_args::<Meta>().is_ok_and(|p| requires_test(&p))
        })
    })
}

/// Collects the line ranges (1-based, inclusive) of the test-only nodes that carry attributes:
/// items at any depth, associated and foreign items, fields, variants, match arms and `let`s.
#[derive(Default)]
struct TestLines {
    ranges: Vec<(usize, usize)>,
}

impl TestLines {
    /// Records `node`'s lines and returns true when it is test-only (its inside then needs no
    /// visit).
    fn record(&mut self, node: &impl ToTokens) -> bool {
        let tokens = node.to_token_stream();
        if !test_only(tokens.clone()) {
            return false;
        }
        let mut spans = tokens.into_iter().map(|token| token.span());
        if let Some(first) = spans.next() {
            let last = spans.last().unwrap_or(first);
            self.ranges.push((first.start().line, last.end().line));
        }
        true
    }
}

/// Visits each node kind that may carry `#[cfg(test)]`; a test-only node is recorded whole and
/// not entered, any other is entered.
macro_rules! visit_test_only {
    ($($method:ident($ty:ty)),* $(,)?) => {
        impl<'ast> Visit<'ast> for TestLines {
            $(fn $method(&mut self, node: &'ast $ty) {
                if !self.record(node) {
                    syn::visit::$method(self, node);
                }
            })*
        }
    };
}

visit_test_only!(
    visit_item(syn::Item),
    visit_impl_item(syn::ImplItem),
    visit_trait_item(syn::TraitItem),
    visit_foreign_item(syn::ForeignItem),
    visit_field(syn::Field),
    visit_variant(syn::Variant),
    visit_arm(syn::Arm),
    visit_local(syn::Local),
);

/// The lines of `text` that count: all but those of its `#[cfg(test)]` items, wherever they
/// stand. Fails when `text` is not Rust that `syn` parses.
fn counted_lines(text: &str) -> syn::Result<usize> {
    let file = syn::parse_file(text)?;
    let mut test = TestLines::default();
    test.visit_file(&file);
    let lines = text.lines().count();
    let mut counted = vec![true; lines];
    for (start, end) in test.ranges {
        for line in counted.iter_mut().take(end).skip(start.saturating_sub(1)) {
            *line = false;
        }
    }
    Ok(counted.into_iter().filter(|&c| c).count())
}

/// Whether the module docs state why the file is long (`//! Length: <reason>`).
fn length_explained(text: &str) -> bool {
    text.lines().any(|l| {
        l.strip_prefix("//! Length:")
            .is_some_and(|reason| !reason.trim().is_empty())
    })
}

/// The files (path, text) above the limit without a stated reason, with their counted lines.
/// Fails on the first file `syn` cannot parse, naming it.
fn oversized<'a>(
    files: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<Vec<(&'a str, usize)>, String> {
    let mut over = Vec::new();
    for (path, text) in files {
        let lines = counted_lines(text).map_err(|e| format!("{path}: {e}"))?;
        if lines > MAX_LINES && !length_explained(text) {
            over.push((path, lines));
        }
    }
    Ok(over)
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
    let mut over = oversized(files.iter().map(|(p, t)| (p.as_str(), t.as_str())))
        .expect("every source file parses");
    over.sort();
    let list: Vec<String> = over.iter().map(|(p, n)| format!("  {p}: {n}")).collect();
    assert!(
        over.is_empty(),
        "{} file(s) above {MAX_LINES} lines of non-test code (every line but those of \
         #[cfg(test)] items): split them by responsibility, or state why in their module docs with a \
         `//! Length: …` line\n{}",
        over.len(),
        list.join("\n")
    );
}

#[test]
fn a_test_module_declared_first_no_longer_exempts_the_code_after_it() {
    let long = "fn f() {}\n".repeat(MAX_LINES + 1);
    let tests_first = format!("#[cfg(test)]\nmod tests;\n{long}");
    let with_tests = format!(
        "{}#[cfg(test)]\nmod tests {{}}\n",
        "fn f() {}\n".repeat(MAX_LINES)
    );
    let explained = format!("//! A table.\n//! Length: one generated table.\n{long}");
    let empty_reason = format!("//! Length:\n{long}");
    let found = oversized([
        ("long.rs", long.as_str()),
        ("tests_first.rs", tests_first.as_str()),
        ("with_tests.rs", with_tests.as_str()),
        ("explained.rs", explained.as_str()),
        ("empty_reason.rs", empty_reason.as_str()),
        ("short.rs", "fn f() {}\n"),
    ]);
    assert_eq!(
        found,
        Ok(vec![
            ("long.rs", MAX_LINES + 1),
            ("tests_first.rs", MAX_LINES + 1),
            ("empty_reason.rs", MAX_LINES + 2)
        ])
    );
    assert!(oversized([("broken.rs", "fn f( {")]).is_err_and(|e| e.starts_with("broken.rs: ")));
}

#[test]
fn a_test_module_declared_at_the_top_is_its_two_lines() {
    let text = "//! Docs.\n#[cfg(test)]\nmod tests;\n\nfn a() {}\nfn b() {}\n";
    assert_eq!(counted_lines(text).unwrap(), 4);
}

#[test]
fn an_inline_test_module_in_the_middle_is_skipped_and_the_code_after_it_counts() {
    let text = "\
fn a() {}
#[cfg(test)]
mod tests {
    #[test]
    fn t() {}
}
// after the tests
fn b() {}
";
    assert_eq!(counted_lines(text).unwrap(), 3);
}

#[test]
fn a_test_only_function_is_skipped_with_its_doc_comment_at_any_depth() {
    let text = r#"
/// Only tests build it.
#[cfg(test)]
fn helper() -> u8 {
    1
}
struct A {
    #[cfg(test)]
    seen: u8,
    kept: u8,
}
impl A {
    #[cfg(all(test, unix))]
    fn probe(&self) {}
    fn b(&self) {}
}
"#;
    // The blank first line, `struct A {`, `kept`, `}`, `impl A {`, `fn b`, `}`.
    assert_eq!(counted_lines(text).unwrap(), 7);
}

#[test]
fn code_built_outside_tests_counts_even_if_it_names_test() {
    let text = r##"#[cfg(any(test, feature = "samples"))]
fn sample() {}
#[cfg(not(test))]
fn real() {}
const S: &str = r#"
#[cfg(test)]
mod tests {}
"#;
"##;
    assert_eq!(counted_lines(text).unwrap(), 8);
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
