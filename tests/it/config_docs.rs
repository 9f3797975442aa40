//! The README's configuration tables are what the variables' documentation in code renders (no
//! emulator needed).

use integration_tests::config_docs::{readme_path, render, sections, variables, REGENERATE};

#[test]
fn the_readme_configuration_sections_are_generated_from_the_code() {
    let readme = std::fs::read_to_string(readme_path()).unwrap();
    let expected = render(&readme).unwrap_or_else(|e| panic!("README.md: {e}"));
    let kinds: Vec<&str> = sections(&readme)
        .iter()
        .map(|s| s.split("-->").next().unwrap_or_default())
        .collect();
    for kind in [
        "table",
        "read-by process",
        "read-by reaper",
        "read-by reconcile",
    ] {
        assert!(
            kinds.iter().any(|k| k.trim_end().ends_with(kind)),
            "README.md has no `<!-- config:begin {kind} -->` section: {kinds:?}"
        );
    }
    if readme != expected {
        let stale: Vec<String> = sections(&expected)
            .into_iter()
            .filter(|s| !readme.contains(s))
            .map(str::to_owned)
            .collect();
        panic!(
            "README.md's configuration sections are stale. Run `make config-docs` \
             (`{REGENERATE}`); expected:\n\n{}",
            stale.join("\n\n")
        );
    }
}

#[test]
fn every_variable_is_documented_once() {
    let vars = variables();
    let mut names: Vec<&str> = vars.iter().map(|v| v.name).collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(names.len(), before, "a variable is documented twice");
    for v in &vars {
        assert!(
            !v.meaning.is_empty() && !v.meaning.contains('\n'),
            "{}: one line of meaning",
            v.name
        );
    }
}
