//! Escaping for the page's HTML: every text a server, a tool or a person supplies goes through
//! [`esc`] before it becomes part of the markup (`render` and `diff` both write HTML).

/// Text as HTML text or a quoted attribute's value.
pub(super) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
