//! Tool names: what the store accepts, and how names become provider-safe on export (the
//! policy is stated in the [`crate::tools`] docs).

use std::collections::{BTreeMap, HashMap};

use crate::fnv::fnv1a_32;
use crate::store::RecordError;

/// The longest name (or source, in bytes) the store accepts.
pub const MAX_NAME_LEN: usize = 256;

/// The longest name providers accept.
pub const MAX_EXPORT_LEN: usize = 64;

/// Export names that a request's own tools take, so no catalog tool is exported under them:
/// capstore's discovery tool ([`SEARCH_TOOLS`](crate::context::SEARCH_TOOLS)), the gateway's
/// `call_tool` and Anthropic's hosted tool searches ([`ToolSearch`](crate::provider::ToolSearch)).
/// A catalog tool whose name would be one of these takes a hash suffix instead, as in a clash
/// ([`export_names`]), so the model's call by one of these names always means the request's
/// own tool. (Written out here, below the modules that own those tools; `tests/provider_defer.rs`
/// checks that the list names them all.)
///
/// ```
/// use capstore::tools::{export_names, NameParts, RESERVED_EXPORT_NAMES};
/// assert!(RESERVED_EXPORT_NAMES.contains(&"search_tools"));
/// let shed = NameParts { qualified: "x/search_tools", name: "search_tools", source: Some("x") };
/// let exported = &export_names([shed])["x/search_tools"];
/// assert!(exported.starts_with("search_tools_") && exported.len() == 21);
/// ```
pub const RESERVED_EXPORT_NAMES: [&str; 4] = [
    "search_tools",
    "call_tool",
    "tool_search_tool_bm25",
    "tool_search_tool_regex",
];

/// Checks a source, a skill's name or a hook's id (or a tool's name when the tool has no
/// source) against the store's naming rules: not empty, at most [`MAX_NAME_LEN`] bytes, no
/// control characters, no `/`, no leading or trailing white space.
///
/// ```
/// use capstore::tools::check_name;
/// assert!(check_name("name", "getPM2.5Level").is_ok());
/// assert!(check_name("name", "").is_err());
/// assert!(check_name("name", "a/b").is_err());
/// ```
pub fn check_name(field: &'static str, value: &str) -> Result<(), RecordError> {
    let reason = common_name_rule(value).or_else(|| {
        value
            .contains('/')
            .then_some("must not contain `/`, which separates source and name")
    });
    refuse(field, value, reason)
}

/// Checks a tool's name. A tool with a source may have `/` in its name, as MCP's tool-name
/// rules allow (`user-profile/update`, SEP-986): its qualified name `source/name` splits at the
/// *first* `/`, and the source has none ([`check_name`]), so the key stays unambiguous. A tool
/// without a source is its own key, so its name follows [`check_name`] and has no `/`.
///
/// ```
/// use capstore::tools::check_tool_name;
/// assert!(check_tool_name("user-profile/update", true).is_ok());
/// assert!(check_tool_name("admin.tools.list", true).is_ok());
/// assert!(check_tool_name("user-profile/update", false).is_err());
/// assert!(check_tool_name("", true).is_err());
/// ```
pub fn check_tool_name(value: &str, has_source: bool) -> Result<(), RecordError> {
    if has_source {
        refuse("name", value, common_name_rule(value))
    } else {
        check_name("name", value)
    }
}

/// The tool's own name in a qualified name: what follows the first `/` (the source has
/// none), or the whole key for a tool without a source.
///
/// ```
/// use capstore::tools::bare_name;
/// assert_eq!(bare_name("crm/user-profile/update"), "user-profile/update");
/// assert_eq!(bare_name("search"), "search");
/// ```
pub fn bare_name(qualified: &str) -> &str {
    qualified
        .split_once('/')
        .map_or(qualified, |(_, name)| name)
}

/// The rules every stored name follows, `/` aside.
fn common_name_rule(value: &str) -> Option<&'static str> {
    if value.is_empty() {
        Some("must not be empty")
    } else if value.len() > MAX_NAME_LEN {
        Some("is longer than 256 bytes")
    } else if value.chars().any(char::is_control) {
        Some("must not contain control characters")
    } else if value.trim() != value {
        Some("must not start or end with white space")
    } else {
        None
    }
}

/// `Err` naming the field, the value (cut to 80 characters) and the broken rule, if any.
pub(crate) fn refuse(
    field: &'static str,
    value: &str,
    reason: Option<&'static str>,
) -> Result<(), RecordError> {
    match reason {
        Some(reason) => Err(RecordError::InvalidName {
            field,
            value: value.chars().take(80).collect(),
            reason,
        }),
        None => Ok(()),
    }
}

/// Whether providers accept `name` as it is (`^[a-zA-Z0-9_-]{1,64}$`).
///
/// ```
/// use capstore::tools::is_provider_safe;
/// assert!(is_provider_safe("get_weather"));
/// assert!(!is_provider_safe("getPM2.5Level"));
/// ```
pub fn is_provider_safe(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_EXPORT_LEN && name.bytes().all(is_safe_byte)
}

fn is_safe_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// Replaces every character providers reject with `_`; an empty result becomes `tool`. Does not
/// shorten (see [`export_names`] for that).
///
/// ```
/// use capstore::tools::sanitize;
/// assert_eq!(sanitize("getPM2.5Level"), "getPM2_5Level");
/// assert_eq!(sanitize("PDF&URLTool"), "PDF_URLTool");
/// ```
pub fn sanitize(name: &str) -> String {
    let out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii() && is_safe_byte(c as u8) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() {
        "tool".to_string()
    } else {
        out
    }
}

fn with_hash(base: &str, qualified: &str) -> String {
    // A stable hash, so export names do not change between runs or platforms.
    let suffix = format!("_{:08x}", fnv1a_32(qualified.as_bytes()));
    let keep = MAX_EXPORT_LEN - suffix.len();
    let mut out: String = base.chars().take(keep).collect();
    out.push_str(&suffix);
    out
}

/// One tool's identity for naming: its qualified key, name and source.
#[derive(Debug, Clone, Copy)]
pub struct NameParts<'a> {
    /// The qualified name (primary key).
    pub qualified: &'a str,
    /// The tool's own name.
    pub name: &'a str,
    /// The source, if any.
    pub source: Option<&'a str>,
}

/// Maps each tool's qualified name to a distinct, provider-safe export name, by the naming
/// policy in the [`crate::tools`] docs.
///
/// ```
/// use capstore::tools::{export_names, NameParts};
/// let tools = [
///     NameParts { qualified: "github/search", name: "search", source: Some("github") },
///     NameParts { qualified: "web/search", name: "search", source: Some("web") },
///     NameParts { qualified: "getPM2.5Level", name: "getPM2.5Level", source: None },
/// ];
/// let names = export_names(tools);
/// assert_eq!(names["github/search"], "github__search");
/// assert_eq!(names["web/search"], "web__search");
/// assert_eq!(names["getPM2.5Level"], "getPM2_5Level");
/// ```
pub fn export_names<'a>(
    tools: impl IntoIterator<Item = NameParts<'a>>,
) -> BTreeMap<String, String> {
    let tools: Vec<NameParts<'a>> = tools.into_iter().collect();
    let first: Vec<String> = tools.iter().map(|t| sanitize(t.name)).collect();
    let first_counts = name_counts(first.iter().map(String::as_str));
    let second: Vec<String> = tools
        .iter()
        .zip(&first)
        .map(|(t, plain)| match t.source {
            Some(source) if !source.is_empty() && first_counts[plain.as_str()] > 1 => {
                sanitize(&format!("{source}__{}", t.name))
            }
            _ => plain.clone(),
        })
        .collect();
    let second_counts = name_counts(second.iter().map(String::as_str));
    tools
        .iter()
        .zip(&second)
        .map(|(t, candidate)| {
            let unique = second_counts[candidate.as_str()] == 1
                && !RESERVED_EXPORT_NAMES.contains(&candidate.as_str());
            let name = if unique && candidate.len() <= MAX_EXPORT_LEN {
                candidate.clone()
            } else {
                with_hash(candidate, t.qualified)
            };
            (t.qualified.to_string(), name)
        })
        .collect()
}

/// Counts how many times each name occurs, for callers that need clash statistics.
///
/// ```
/// use capstore::tools::name_counts;
/// let counts = name_counts(["a", "b", "a"]);
/// assert_eq!(counts["a"], 2);
/// ```
pub fn name_counts<'a>(names: impl IntoIterator<Item = &'a str>) -> HashMap<&'a str, usize> {
    let mut counts = HashMap::new();
    for name in names {
        *counts.entry(name).or_insert(0) += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_are_shortened_with_a_stable_hash() {
        let long = "a".repeat(100);
        let names = export_names([NameParts {
            qualified: &long,
            name: &long,
            source: None,
        }]);
        let exported = &names[&long];
        assert_eq!(exported.len(), 64);
        assert!(is_provider_safe(exported));
        assert!(exported.ends_with(&format!("_{:08x}", fnv1a_32(long.as_bytes()))));
    }

    #[test]
    fn clashes_without_sources_are_told_apart_by_hash() {
        let names = export_names([
            NameParts {
                qualified: "a.b",
                name: "a.b",
                source: None,
            },
            NameParts {
                qualified: "a_b",
                name: "a_b",
                source: None,
            },
        ]);
        assert_ne!(names["a.b"], names["a_b"]);
        assert!(names.values().all(|n| is_provider_safe(n)));
    }

    #[test]
    fn export_names_do_not_depend_on_order() {
        let a = NameParts {
            qualified: "x/s",
            name: "s",
            source: Some("x"),
        };
        let b = NameParts {
            qualified: "y/s",
            name: "s",
            source: Some("y"),
        };
        assert_eq!(export_names([a, b]), export_names([b, a]));
    }
}
