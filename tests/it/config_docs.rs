//! The configuration page's tables (`docs/configuration.md`) are what the variables' documentation in code renders (no
//! emulator needed).

use integration_tests::config_docs::{page_path, render, sections, variables, REGENERATE};

#[test]
fn the_configuration_page_sections_are_generated_from_the_code() {
    let page = std::fs::read_to_string(page_path()).unwrap();
    let expected = render(&page).unwrap_or_else(|e| panic!("docs/configuration.md: {e}"));
    let kinds: Vec<&str> = sections(&page)
        .iter()
        .map(|s| s.split("-->").next().unwrap_or_default())
        .collect();
    for kind in [
        "table",
        "read-by ingest",
        "read-by process",
        "read-by reaper",
        "read-by deliver",
        "read-by reconcile",
        "read-by inboxctl",
    ] {
        assert!(
            kinds.iter().any(|k| k.trim_end().ends_with(kind)),
            "docs/configuration.md has no `<!-- config:begin {kind} -->` section: {kinds:?}"
        );
    }
    if page != expected {
        let stale: Vec<String> = sections(&expected)
            .into_iter()
            .filter(|s| !page.contains(s))
            .map(str::to_owned)
            .collect();
        panic!(
            "docs/configuration.md's sections are stale. Run `make config-docs` \
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
