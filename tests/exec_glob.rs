//! Hook matchers: exact names and `*`/`?` globs, on the qualified or the bare name.

use capstore::exec::{glob_match, matcher_matches};

#[test]
fn glob_patterns() {
    let cases: &[(&str, &str, bool)] = &[
        ("*", "", true),
        ("*", "fs/read_file", true),
        ("fs/*", "fs/read_file", true),
        ("fs/*", "fs/", true),
        ("fs/*", "fsx/read", false),
        ("*_file", "read_file", true),
        ("*_file", "read_files", false),
        ("read_?ile", "read_file", true),
        ("read_?ile", "read_ile", false),
        ("r*d*e", "read_file", true),
        ("r*d*x", "read_file", false),
        ("?", "é", true),
        ("*/*", "a/b", true),
        ("*/*", "ab", false),
        ("get_weather", "get_weather", true),
        ("get_weather", "get_weather2", false),
        ("", "", true),
        ("", "x", false),
        ("a**b", "ab", true),
        ("*?", "", false),
        ("*?", "x", true),
    ];
    for &(pattern, text, expected) in cases {
        assert_eq!(
            glob_match(pattern, text),
            expected,
            "glob {pattern:?} on {text:?}"
        );
    }
}

#[test]
fn matchers_apply_to_qualified_or_bare_names() {
    let cases: &[(&str, &str, bool)] = &[
        // exact
        ("fs/read_file", "fs/read_file", true),
        ("read_file", "fs/read_file", true),
        ("read_file", "read_file", true),
        ("fs/read_file", "read_file", false),
        ("fs", "fs/read_file", false),
        ("web/read_file", "fs/read_file", false),
        // globs
        ("*", "fs/read_file", true),
        ("fs/*", "fs/read_file", true),
        ("*/read_file", "fs/read_file", true),
        ("*/read_file", "read_file", false),
        ("read_*", "fs/read_file", true),
        ("*_file", "fs/write_file", true),
        ("web/*", "fs/read_file", false),
        ("?s/*", "fs/read_file", true),
        ("shell/run?", "shell/run", false),
    ];
    for &(matcher, tool, expected) in cases {
        assert_eq!(
            matcher_matches(matcher, tool),
            expected,
            "matcher {matcher:?} on {tool:?}"
        );
    }
}

#[test]
fn adversarial_patterns_stay_fast() {
    let text = "a".repeat(20_000);
    let pattern = format!("{}b", "*a".repeat(50));
    let started = std::time::Instant::now();
    assert!(!glob_match(&pattern, &text));
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}
