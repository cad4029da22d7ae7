//! Tool definitions from any of capstore's provider shapes, to the one an adapter sends.

use serde_json::{Value, json};

/// Name, description and JSON Schema of a definition in any of the OpenAI chat, OpenAI
/// responses or Anthropic shapes.
fn parts(tool: &Value) -> (&Value, &Value, &Value) {
    let inner = tool.get("function").unwrap_or(tool);
    let schema = inner
        .get("parameters")
        .or_else(|| inner.get("input_schema"))
        .unwrap_or(&Value::Null);
    (&inner["name"], &inner["description"], schema)
}

/// `tools` in OpenAI chat completions' shape.
pub(crate) fn openai_chat(tools: &[Value]) -> Vec<Value> {
    tools
        .iter()
        .map(|tool| {
            if tool.get("function").is_some() {
                return tool.clone();
            }
            let (name, description, schema) = parts(tool);
            json!({
                "type": "function",
                "function": { "name": name, "description": description, "parameters": schema }
            })
        })
        .collect()
}

/// `tools` in Anthropic's shape; fields of Anthropic's own (`defer_loading`, a server tool's
/// `type`) are kept.
pub(crate) fn anthropic(tools: &[Value]) -> Vec<Value> {
    tools
        .iter()
        .map(|tool| {
            if tool.get("function").is_none() && tool.get("parameters").is_none() {
                return tool.clone();
            }
            let (name, description, schema) = parts(tool);
            json!({ "name": name, "description": description, "input_schema": schema })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_converts_both_ways() {
        let chat = json!({"type": "function", "function": {"name": "a", "description": "d", "parameters": {"type": "object"}}});
        let responses = json!({"type": "function", "name": "a", "description": "d", "parameters": {"type": "object"}});
        let anthropic_shape =
            json!({"name": "a", "description": "d", "input_schema": {"type": "object"}});
        for tool in [&chat, &responses, &anthropic_shape] {
            assert_eq!(
                openai_chat(std::slice::from_ref(tool)),
                std::slice::from_ref(&chat)
            );
            assert_eq!(
                anthropic(std::slice::from_ref(tool)),
                std::slice::from_ref(&anthropic_shape)
            );
        }
    }
}
