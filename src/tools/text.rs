//! Which text of a tool is searched, field by field.

use serde_json::Value;

use crate::store::TextFields;

use super::record::Tool;

/// How deep [`walk_schema`] follows nested schemas: deep enough for real tools, bounded so that
/// a pathological schema costs little.
const MAX_SCHEMA_DEPTH: usize = 16;

/// Fills a tool's text document: `name`, `description`, `tags`, `params` (parameter names),
/// `param_docs` (parameter descriptions) and `skills` (names of the skills that bundle it).
///
/// ```
/// use capstore::bm25::Tokenizer;
/// use capstore::store::TextFields;
/// use capstore::{Tool, tools::tool_text};
/// use serde_json::json;
///
/// let tool = Tool::new("get_weather", "Current weather").with_input_schema(json!({
///     "type": "object",
///     "properties": { "city": { "type": "string", "description": "City name" } }
/// }));
/// let tokenizer = Tokenizer::default();
/// let mut fields = TextFields::new(&tokenizer);
/// tool_text(&tool, &mut fields);
/// assert_eq!(fields.tokens("name"), Some(&["get".to_string(), "weather".into()][..]));
/// assert_eq!(fields.tokens("params"), Some(&["city".to_string()][..]));
/// assert_eq!(fields.tokens("param_docs"), Some(&["city".to_string(), "name".into()][..]));
/// ```
pub fn tool_text(tool: &Tool, fields: &mut TextFields<'_>) {
    fields.add("name", &tool.name);
    fields.add("description", &tool.description);
    for tag in &tool.tags {
        fields.add("tags", tag);
    }
    walk_schema(&tool.input_schema, &mut |name, description| {
        fields.add("params", name);
        if let Some(description) = description {
            fields.add("param_docs", description);
        }
    });
    for skill in &tool.skills {
        fields.add("skills", skill);
    }
}

/// Calls `visit(name, description)` for every property of a JSON Schema, nested ones included
/// (through `properties`, `items`, `additionalProperties`, `anyOf`, `oneOf`, `allOf`), in
/// document order, to a bounded depth.
///
/// ```
/// use capstore::tools::walk_schema;
/// use serde_json::json;
/// let schema = json!({"type": "object", "properties": {
///     "to": {"type": "string", "description": "Recipient"},
///     "attachments": {"type": "array", "items": {"type": "object", "properties": {
///         "path": {"type": "string"}}}}}});
/// let mut seen = Vec::new();
/// walk_schema(&schema, &mut |name, _| seen.push(name.to_string()));
/// seen.sort();
/// assert_eq!(seen, ["attachments", "path", "to"]);
/// ```
pub fn walk_schema(schema: &Value, visit: &mut dyn FnMut(&str, Option<&str>)) {
    walk(schema, visit, 0);
}

fn walk(schema: &Value, visit: &mut dyn FnMut(&str, Option<&str>), depth: usize) {
    if depth >= MAX_SCHEMA_DEPTH {
        return;
    }
    let Some(object) = schema.as_object() else {
        return;
    };
    if let Some(Value::Object(properties)) = object.get("properties") {
        for (name, property) in properties {
            let description = property.get("description").and_then(Value::as_str);
            visit(name, description);
            walk(property, visit, depth + 1);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(nested) = object.get(key) {
            walk(nested, visit, depth + 1);
        }
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(options)) = object.get(key) {
            for option in options {
                walk(option, visit, depth + 1);
            }
        }
    }
}
