//! From text to a [`Catalog`], with JSON-pointer paths in every error.

use serde_json::Value;
use serde_path_to_error::Segment;

use super::Catalog;
use super::error::{CatalogError, CatalogErrorKind, push_token};

/// Parses the document's shape (no cross-entry checks: see `check`).
pub(super) fn parse(text: &str) -> Result<Catalog, CatalogError> {
    // Tracking the path costs a third of the parse: parse without it, and again with it only
    // to report an error (the same error, found at the same place).
    match serde_json::from_str(text) {
        Ok(catalog) => Ok(catalog),
        Err(_) => parse_tracked(text),
    }
}

/// [`parse`], tracking where in the document the parser is, for the error's path.
fn parse_tracked(text: &str) -> Result<Catalog, CatalogError> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let catalog: Catalog = serde_path_to_error::deserialize(&mut deserializer)
        .map_err(|error| shape_error(text, &error))?;
    // Trailing characters after the document are a syntax error, as in `serde_json::from_str`.
    deserializer
        .end()
        .map_err(|error| syntax_error(&error, String::new()))?;
    Ok(catalog)
}

fn shape_error(text: &str, error: &serde_path_to_error::Error<serde_json::Error>) -> CatalogError {
    let tokens: Vec<String> = error
        .path()
        .iter()
        .filter_map(|segment| match segment {
            Segment::Seq { index } => Some(index.to_string()),
            Segment::Map { key } => Some(key.clone()),
            Segment::Enum { variant } => Some(variant.clone()),
            Segment::Unknown => None,
        })
        .collect();
    let mut path = String::new();
    for token in &tokens {
        push_token(&mut path, token);
    }
    let inner = error.inner();
    if inner.is_syntax() || inner.is_eof() || inner.is_io() {
        return syntax_error(inner, path);
    }
    // The text is well-formed here, so it parses as a plain value: look up the name of the
    // skill or tool the error is in, to say which entry is wrong.
    let name = serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|value| entry_name(&value, &tokens));
    CatalogError::at(
        path,
        name.as_deref(),
        CatalogErrorKind::Format {
            message: message_without_position(inner),
        },
    )
}

fn syntax_error(error: &serde_json::Error, path: String) -> CatalogError {
    CatalogError::at(
        path,
        None,
        CatalogErrorKind::Syntax {
            line: error.line(),
            column: error.column(),
            message: message_without_position(error),
        },
    )
}

/// serde_json appends " at line L column C" to its messages; the error carries those apart.
fn message_without_position(error: &serde_json::Error) -> String {
    let message = error.to_string();
    let suffix = format!(" at line {} column {}", error.line(), error.column());
    match message.strip_suffix(&suffix) {
        Some(stripped) => stripped.to_string(),
        None => message,
    }
}

/// The name of the innermost skill or tool on the path `tokens`: a skill's `name`, a tool's
/// qualified name.
fn entry_name(root: &Value, tokens: &[String]) -> Option<String> {
    let mut found = None;
    let mut value = root;
    let mut parent_key: Option<&str> = None;
    for token in tokens {
        let next = match value {
            Value::Object(map) => map.get(token),
            Value::Array(items) => token.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        };
        let Some(next) = next else { break };
        if matches!(value, Value::Array(_)) {
            match parent_key {
                Some("skills") => found = name_of(next, false).or(found),
                Some("tools") => found = name_of(next, true).or(found),
                _ => {}
            }
        }
        parent_key = match value {
            Value::Object(_) => Some(token.as_str()),
            _ => None,
        };
        value = next;
    }
    found
}

fn name_of(entry: &Value, qualified: bool) -> Option<String> {
    let name = entry.get("name")?.as_str()?;
    match entry.get("source").and_then(Value::as_str) {
        Some(source) if qualified && !source.is_empty() => Some(format!("{source}/{name}")),
        _ => Some(name.to_string()),
    }
}
