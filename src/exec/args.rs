//! A cheap check of a call's arguments against the tool's input schema: an object, with every
//! `required` property, whose declared primitive `type`s match. Not a JSON Schema validator:
//! nested schemas, formats, enums and the like are left to the handler.

use serde_json::{Map, Value};

/// Checks `args` against `schema`; `Err` says what is wrong, naming the argument.
pub(crate) fn check_arguments(schema: &Value, args: &Value) -> Result<(), String> {
    let Some(args) = args.as_object() else {
        return Err(format!("must be a JSON object, not {}", kind(args)));
    };
    let Some(schema) = schema.as_object() else {
        return Ok(());
    };
    check_required(schema, args)?;
    check_types(schema, args)
}

fn check_required(schema: &Map<String, Value>, args: &Map<String, Value>) -> Result<(), String> {
    let required = schema.get("required").and_then(Value::as_array);
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        if !args.contains_key(name) {
            return Err(format!("missing required argument `{name}`"));
        }
    }
    Ok(())
}

fn check_types(schema: &Map<String, Value>, args: &Map<String, Value>) -> Result<(), String> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    // By the schema's properties, so that of several wrong arguments the same one is named in
    // every build: the schema's keys are sorted (`InputSchema`), while the arguments keep the
    // model's order where a crate turned on serde_json's `preserve_order` (rig does).
    for (name, property) in properties {
        let Some(value) = args.get(name) else {
            continue;
        };
        let allowed: Vec<&str> = match property.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => continue,
        };
        // A type name we do not know (a typo, an extension) cannot be checked: let it pass.
        if allowed.is_empty() || allowed.iter().any(|t| !is_known(t) || has_type(value, t)) {
            continue;
        }
        return Err(format!(
            "argument `{name}` must be {}, not {}",
            allowed.join(" or "),
            kind(value)
        ));
    }
    Ok(())
}

fn is_known(t: &str) -> bool {
    matches!(
        t,
        "string" | "number" | "integer" | "boolean" | "array" | "object" | "null"
    )
}

fn has_type(value: &Value, t: &str) -> bool {
    match t {
        "string" => value.is_string(),
        "number" => value.is_number(),
        // JSON Schema: an integer is any number with a zero fractional part (1.0 included).
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => false,
    }
}

/// The JSON kind of a value, for messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": { "type": "string" },
                "count": { "type": "integer" },
                "ratio": { "type": "number" },
                "maybe": { "type": ["string", "null"] },
                "odd": { "type": "custom" },
                "free": {}
            },
            "required": ["path"]
        })
    }

    #[test]
    fn valid_arguments_pass() {
        let args = json!({ "path": "a", "count": 2, "ratio": 0.5, "maybe": null, "odd": 1, "free": [1], "extra": true });
        assert_eq!(check_arguments(&schema(), &args), Ok(()));
        assert_eq!(
            check_arguments(&schema(), &json!({ "path": "a", "count": 3.0 })),
            Ok(())
        );
    }

    #[test]
    fn non_objects_are_refused() {
        for args in [json!(null), json!([1]), json!("x"), json!(1)] {
            let err = check_arguments(&schema(), &args).unwrap_err();
            assert!(err.starts_with("must be a JSON object"), "{err}");
        }
    }

    #[test]
    fn missing_required_is_named() {
        assert_eq!(
            check_arguments(&schema(), &json!({})),
            Err("missing required argument `path`".to_string())
        );
    }

    #[test]
    fn wrong_primitive_types_are_named() {
        let cases = [
            (
                json!({ "path": 1 }),
                "argument `path` must be string, not integer",
            ),
            (
                json!({ "path": "a", "count": 1.5 }),
                "argument `count` must be integer, not number",
            ),
            (
                json!({ "path": "a", "ratio": "x" }),
                "argument `ratio` must be number, not string",
            ),
            (
                json!({ "path": "a", "maybe": 1 }),
                "argument `maybe` must be string or null, not integer",
            ),
        ];
        for (args, expected) in cases {
            assert_eq!(check_arguments(&schema(), &args), Err(expected.to_string()));
        }
    }

    #[test]
    fn of_several_wrong_arguments_the_first_by_name_is_named() {
        // Written out of order: the answer must not depend on whether serde_json keeps it.
        let args = json!({ "ratio": "x", "path": "a", "count": 1.5 });
        assert_eq!(
            check_arguments(&schema(), &args),
            Err("argument `count` must be integer, not number".to_string())
        );
    }

    #[test]
    fn a_schema_without_properties_only_wants_an_object() {
        assert_eq!(check_arguments(&json!({}), &json!({ "a": 1 })), Ok(()));
        assert_eq!(check_arguments(&json!(true), &json!({ "a": 1 })), Ok(()));
    }
}
