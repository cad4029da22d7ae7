//! Which tools a hook's matcher applies to: exact names and `*`/`?` glob patterns.

/// Whether `text` matches the glob `pattern`: `*` matches any run of characters (`/`
/// included, and none at all), `?` exactly one character, anything else itself. There is no
/// escaping; a pattern without `*` or `?` matches only itself.
///
/// Runs in O(pattern × text) at worst and in linear time for the usual patterns (one `*`,
/// prefixes, suffixes), with no allocation: on a mismatch it resumes from the last `*` only.
///
/// ```
/// use capstore::exec::glob_match;
/// assert!(glob_match("shell/*", "shell/run"));
/// assert!(glob_match("read_?ile", "read_file"));
/// assert!(!glob_match("read_*", "write_file"));
/// ```
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let (mut p, mut t) = (pattern, text);
    // After a `*`: the rest of the pattern, and where in the text to try it next.
    let mut resume: Option<(&str, &str)> = None;
    loop {
        let mut pattern_chars = p.chars();
        match pattern_chars.next() {
            Some('*') => {
                p = pattern_chars.as_str();
                resume = Some((p, t));
                continue;
            }
            Some(wanted) => {
                let mut text_chars = t.chars();
                if let Some(got) = text_chars.next()
                    && (wanted == '?' || wanted == got)
                {
                    p = pattern_chars.as_str();
                    t = text_chars.as_str();
                    continue;
                }
            }
            None if t.is_empty() => return true,
            None => {}
        }
        // Mismatch: let the last `*` swallow one more character, or fail if there is none.
        let Some((after_star, from)) = resume else {
            return false;
        };
        let mut skip = from.chars();
        if skip.next().is_none() {
            return false;
        }
        t = skip.as_str();
        p = after_star;
        resume = Some((after_star, t));
    }
}

/// Whether a hook's `matcher` applies to the tool with qualified name `tool`: it equals, or as
/// a glob matches, either the qualified name (`source/name`) or the bare name after the last
/// `/`.
///
/// ```
/// use capstore::exec::matcher_matches;
/// assert!(matcher_matches("read_file", "fs/read_file"));      // bare name
/// assert!(matcher_matches("fs/read_file", "fs/read_file"));   // qualified name
/// assert!(matcher_matches("fs/*", "fs/read_file"));           // glob on the qualified name
/// assert!(matcher_matches("read_*", "fs/read_file"));         // glob on the bare name
/// assert!(!matcher_matches("web/*", "fs/read_file"));
/// ```
pub fn matcher_matches(matcher: &str, tool: &str) -> bool {
    if glob_match(matcher, tool) {
        return true;
    }
    let bare = crate::tools::bare_name(tool);
    bare.len() != tool.len() && glob_match(matcher, bare)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_table() {
        let cases = [
            ("", "", true),
            ("", "a", false),
            ("*", "", true),
            ("*", "anything/at all", true),
            ("**", "x", true),
            ("?", "", false),
            ("?", "é", true),
            ("??", "é", false),
            ("a*b*c", "aXbYc", true),
            ("a*b*c", "abc", true),
            ("a*b*c", "acb", false),
            ("*a", "bbba", true),
            ("*a", "bbab", false),
            ("a*", "a", true),
            ("*ab*ab*", "xabyyab", true),
            ("*ab*ab*", "xab", false),
            ("exact", "exact", true),
            ("exact", "exactly", false),
        ];
        for (pattern, text, expected) in cases {
            assert_eq!(
                glob_match(pattern, text),
                expected,
                "{pattern:?} vs {text:?}"
            );
        }
    }

    #[test]
    fn many_stars_on_a_long_miss_stay_fast() {
        let text = "a".repeat(10_000);
        assert!(!glob_match("*a*a*a*a*b", &text));
    }
}
