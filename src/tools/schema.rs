//! A tool's input schema, kept as its compact JSON text.
//!
//! A parsed `serde_json::Value` costs a B-tree node per object and a heap string per key and
//! value: about 2 KB for a one-parameter schema, five times its text. The store keeps every
//! tool for as long as any snapshot holds it, and the schema is read whole only when a request
//! is built or a call is checked, so the record holds the text (shared by clones) and parses it
//! when asked. What registration needs from it is computed once, when it is made: whether it
//! is an object schema (so [`Tool::validate`](super::Tool::validate) does not parse), and the
//! parameters' names and descriptions are read from the text in one pass without building a
//! `Value` ([`InputSchema::walk`]).

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, LazyLock};

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use crate::store::RecordError;

use super::visit::{StringSeed, anything_else, skip_map, skip_seq, skip_strings};

/// How deep [`walk_schema`](super::walk_schema) follows nested schemas: deep enough for real
/// tools, bounded so that a pathological schema costs little.
const MAX_SCHEMA_DEPTH: usize = 16;

/// The deepest nesting of arrays and objects the JSON parser reads back (`serde_json`'s
/// recursion limit); a deeper schema could be written but never parsed again.
const MAX_NESTING: usize = 127;

/// A tool's input JSON Schema, immutable, held as its compact JSON text.
///
/// Cloning shares the text. Made from a [`Value`] (`From`, so
/// [`Tool::with_input_schema`](super::Tool::with_input_schema) takes a `json!` value) or from
/// JSON text ([`InputSchema::from_json`]); object keys are kept in sorted order, as a
/// `serde_json::Value` orders them by default, so a schema made either way from the same JSON
/// is equal, and serializes, byte for byte, as the `Value` would. The text is the same in a
/// build where a crate turned on serde_json's `preserve_order` (rig does), which keeps a
/// `Value`'s keys in the order written. Any JSON value can be held; the tools table refuses one
/// that is not an object schema ([`InputSchema::check`]).
///
/// ```
/// use capstore::tools::InputSchema;
/// use serde_json::json;
///
/// let schema = InputSchema::from(json!({
///     "type": "object",
///     "properties": { "city": { "type": "string" } }
/// }));
/// assert_eq!(schema.as_str(), r#"{"properties":{"city":{"type":"string"}},"type":"object"}"#);
/// assert_eq!(schema.to_value()["properties"]["city"]["type"], "string");
/// assert_eq!(InputSchema::from_json(schema.as_str())?, schema);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct InputSchema {
    json: Arc<str>,
    shape: Shape,
}

/// What the tools table needs to know of a schema's top level, found when it is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Shape {
    /// An object whose `type`, if any, is `"object"`.
    ObjectSchema,
    /// Not a JSON object.
    NotObject,
    /// An object whose `type` is not `"object"`.
    OtherType,
    /// Nested deeper than the parser reads back.
    TooDeep,
}

impl Shape {
    /// The shape of a schema nested deeper than the parser reads back (`too_deep`) or not,
    /// a JSON object or not, whose top-level `type` is absent or `"object"` (`type_is_object`)
    /// or not: the one rule for schemas made from a `Value` and read from text.
    fn of(too_deep: bool, is_object: bool, type_is_object: bool) -> Shape {
        if too_deep {
            Shape::TooDeep
        } else if !is_object {
            Shape::NotObject
        } else if type_is_object {
            Shape::ObjectSchema
        } else {
            Shape::OtherType
        }
    }
}

/// The schema of a tool that declares none: an object with no properties. One shared text.
static EMPTY_OBJECT: LazyLock<InputSchema> =
    LazyLock::new(|| InputSchema::from(serde_json::json!({ "type": "object", "properties": {} })));

impl InputSchema {
    /// An object schema with no properties, `{"properties":{},"type":"object"}`: the schema
    /// of a tool that takes no arguments, and the default. All such schemas share one text.
    ///
    /// ```
    /// use capstore::tools::InputSchema;
    /// assert_eq!(InputSchema::empty_object().as_str(), r#"{"properties":{},"type":"object"}"#);
    /// assert_eq!(InputSchema::default(), InputSchema::empty_object());
    /// ```
    pub fn empty_object() -> Self {
        EMPTY_OBJECT.clone()
    }

    /// Parses JSON text. The text is kept in the compact, key-sorted form (white space and
    /// key order do not matter); invalid JSON is an error. Any JSON value is accepted here:
    /// whether it is an object schema is checked when the tool is registered.
    ///
    /// ```
    /// use capstore::tools::InputSchema;
    /// let schema = InputSchema::from_json(r#"{ "type": "object", "properties": {} }"#)?;
    /// assert_eq!(schema, InputSchema::empty_object());
    /// assert!(InputSchema::from_json("{ not json").is_err());
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str::<Value>(text).map(Self::from)
    }

    /// The compact JSON text, as a provider request carries it.
    ///
    /// ```
    /// use capstore::tools::InputSchema;
    /// use serde_json::json;
    /// assert_eq!(InputSchema::from(json!({"type": "object"})).as_str(), r#"{"type":"object"}"#);
    /// ```
    pub fn as_str(&self) -> &str {
        &self.json
    }

    /// The schema as a `serde_json::Value` (parsed from the text at each call).
    ///
    /// A schema nested deeper than 127 levels, which the JSON parser does not read back (and
    /// the tools table refuses), gives `Value::Null`.
    ///
    /// ```
    /// use capstore::tools::InputSchema;
    /// use serde_json::json;
    /// let value = json!({"type": "object", "required": ["city"]});
    /// assert_eq!(InputSchema::from(value.clone()).to_value(), value);
    /// ```
    pub fn to_value(&self) -> Value {
        // The text was written from a `Value` within the parser's depth (else `TooDeep`), so
        // it parses; `Null` stands for the refused deep ones.
        serde_json::from_str(&self.json).unwrap_or(Value::Null)
    }

    /// Whether this is an object schema, which the tools table requires: a JSON object whose
    /// `type`, if present, is `"object"`, nested at most 127 levels deep. The error names the
    /// field `input_schema`.
    ///
    /// ```
    /// use capstore::tools::InputSchema;
    /// use serde_json::json;
    /// assert!(InputSchema::from(json!({"type": "object"})).check().is_ok());
    /// assert!(InputSchema::from(json!({"properties": {}})).check().is_ok());
    /// assert!(InputSchema::from(json!({"type": "array"})).check().is_err());
    /// assert!(InputSchema::from(json!("string")).check().is_err());
    /// ```
    pub fn check(&self) -> Result<(), RecordError> {
        let reason = match self.shape {
            Shape::ObjectSchema => return Ok(()),
            Shape::NotObject => "must be a JSON object (a JSON Schema)".to_string(),
            Shape::OtherType => {
                let value = self.to_value();
                let other = value.get("type").unwrap_or(&Value::Null);
                format!("`type` must be \"object\" for a tool's input, not {other}")
            }
            Shape::TooDeep => format!("must not be nested more than {MAX_NESTING} levels deep"),
        };
        Err(RecordError::Invalid {
            field: "input_schema",
            reason,
        })
    }

    /// Calls `visit(name, description)` for every property of the schema, nested ones
    /// included, exactly as [`walk_schema`](super::walk_schema) does on the parsed value, but
    /// reading the text once without building a `Value`.
    ///
    /// ```
    /// use capstore::tools::InputSchema;
    /// use serde_json::json;
    /// let schema = InputSchema::from(json!({"type": "object", "properties": {
    ///     "city": {"type": "string", "description": "City name"}}}));
    /// let mut seen = Vec::new();
    /// schema.walk(&mut |name, description| seen.push((name.to_string(), description.map(str::to_string))));
    /// assert_eq!(seen, [("city".to_string(), Some("City name".to_string()))]);
    /// ```
    pub fn walk(&self, visit: &mut dyn FnMut(&str, Option<&str>)) {
        walk_from(&mut serde_json::Deserializer::from_str(&self.json), visit);
    }
}

impl Default for InputSchema {
    fn default() -> Self {
        Self::empty_object()
    }
}

impl From<&Value> for InputSchema {
    fn from(value: &Value) -> Self {
        // Keys sorted as text read from a file has them, in every build (`compact_value`).
        let read = super::compact::compact_value(value);
        InputSchema {
            json: Arc::from(read.text),
            shape: Shape::of(
                read.depth > MAX_NESTING,
                read.is_object,
                read.type_is_object,
            ),
        }
    }
}

impl From<Value> for InputSchema {
    fn from(value: Value) -> Self {
        Self::from(&value)
    }
}

impl From<InputSchema> for Value {
    fn from(schema: InputSchema) -> Self {
        schema.to_value()
    }
}

/// Compares with the parsed schema, so a schema can be checked against a `json!` value.
///
/// ```
/// use capstore::tools::InputSchema;
/// use serde_json::json;
/// assert_eq!(InputSchema::from(json!({"type": "object"})), json!({"type": "object"}));
/// ```
impl PartialEq<Value> for InputSchema {
    fn eq(&self, other: &Value) -> bool {
        self.to_value() == *other
    }
}

/// Compares with the parsed schema, either way round.
///
/// ```
/// use capstore::tools::InputSchema;
/// use serde_json::json;
/// assert_eq!(json!({"type": "object"}), InputSchema::from(json!({"type": "object"})));
/// ```
impl PartialEq<InputSchema> for Value {
    fn eq(&self, other: &InputSchema) -> bool {
        other == self
    }
}

impl fmt::Display for InputSchema {
    /// The compact JSON text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.json)
    }
}

impl fmt::Debug for InputSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("InputSchema").field(&&*self.json).finish()
    }
}

/// Serializes as the JSON value itself, through the serializer given, so pretty printers
/// indent it as they did a `Value` (the text is parsed for it: serializing is rare, reading
/// the text with [`InputSchema::as_str`] is not).
impl Serialize for InputSchema {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
    }
}

/// Deserializes from any JSON value (whether it is an object schema is checked at
/// registration, with the field named).
impl<'de> Deserialize<'de> for InputSchema {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Straight to the text, without a `Value` between (the same text and shape).
        let read = super::compact::compact(deserializer)?;
        let shape = Shape::of(
            read.depth > MAX_NESTING,
            read.is_object,
            read.type_is_object,
        );
        Ok(InputSchema {
            json: Arc::from(read.text),
            shape,
        })
    }
}

/// Reads the walked parts of a schema from `schema` (JSON text or a `Value`), then visits its
/// properties (see [`walk_schema`](super::walk_schema)). Input that cannot be read (text the
/// parser refuses; never the case for an [`InputSchema`]'s) has nothing to visit.
pub(crate) fn walk_from<'de, D: Deserializer<'de>>(
    schema: D,
    visit: &mut dyn FnMut(&str, Option<&str>),
) {
    if let Ok(node) = (NodeSeed { depth: 0 }).deserialize(schema) {
        node.walk(visit, 0);
    }
}

/// The parts of a schema [`InputSchema::walk`] visits, borrowed from the text where no escape
/// forces a copy; everything else is skipped unread.
enum Node<'a> {
    /// A JSON object (the only kind walked into).
    Object(Box<ObjectNode<'a>>),
    /// Anything else, or an object deeper than the walk goes.
    Other,
}

#[derive(Default)]
struct ObjectNode<'a> {
    /// `properties`, when it is an object: each name with its schema.
    properties: Option<Vec<(Cow<'a, str>, Node<'a>)>>,
    /// `description`, when it is a string.
    description: Option<Cow<'a, str>>,
    items: Option<Node<'a>>,
    additional_properties: Option<Node<'a>>,
    any_of: Option<Vec<Node<'a>>>,
    one_of: Option<Vec<Node<'a>>>,
    all_of: Option<Vec<Node<'a>>>,
}

impl Node<'_> {
    /// `walk_schema`'s order: properties (each visited, then walked into), then `items`,
    /// `additionalProperties`, `anyOf`, `oneOf`, `allOf`.
    fn walk(&self, visit: &mut dyn FnMut(&str, Option<&str>), depth: usize) {
        if depth >= MAX_SCHEMA_DEPTH {
            return;
        }
        let Node::Object(object) = self else {
            return;
        };
        for (name, property) in object.properties.iter().flatten() {
            let description = match property {
                Node::Object(p) => p.description.as_deref(),
                Node::Other => None,
            };
            visit(name, description);
            property.walk(visit, depth + 1);
        }
        for nested in [&object.items, &object.additional_properties]
            .into_iter()
            .flatten()
        {
            nested.walk(visit, depth + 1);
        }
        for options in [&object.any_of, &object.one_of, &object.all_of]
            .into_iter()
            .flatten()
        {
            for option in options {
                option.walk(visit, depth + 1);
            }
        }
    }
}

/// Reads a [`Node`] at `depth`: an object's walked parts down to the walk's depth bound (a
/// property at the bound still gives its description), nothing below.
#[derive(Clone, Copy)]
struct NodeSeed {
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for NodeSeed {
    type Value = Node<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Node<'de>, D::Error> {
        if self.depth > MAX_SCHEMA_DEPTH {
            IgnoredAny::deserialize(deserializer)?;
            return Ok(Node::Other);
        }
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for NodeSeed {
    type Value = Node<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    anything_else!(Node<'de>, Node::Other);
    skip_strings!(Node<'de>, Node::Other);
    skip_seq!(Node<'de>, Node::Other);

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node<'de>, A::Error> {
        let child = NodeSeed {
            depth: self.depth + 1,
        };
        let mut object = ObjectNode::default();
        // A repeated key keeps its last value, as a parsed `Value` does.
        while let Some(key) = map.next_key_seed(StringSeed)? {
            match key.as_deref().unwrap_or_default() {
                "properties" => object.properties = map.next_value_seed(PropertiesSeed(child))?,
                "description" => object.description = map.next_value_seed(StringSeed)?,
                "items" => object.items = Some(map.next_value_seed(child)?),
                "additionalProperties" => {
                    object.additional_properties = Some(map.next_value_seed(child)?);
                }
                "anyOf" => object.any_of = map.next_value_seed(OptionsSeed(child))?,
                "oneOf" => object.one_of = map.next_value_seed(OptionsSeed(child))?,
                "allOf" => object.all_of = map.next_value_seed(OptionsSeed(child))?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Node::Object(Box::new(object)))
    }
}

/// Reads `properties`: its entries when it is an object, else nothing.
struct PropertiesSeed(NodeSeed);

impl<'de> DeserializeSeed<'de> for PropertiesSeed {
    type Value = Option<Vec<(Cow<'de, str>, Node<'de>)>>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for PropertiesSeed {
    type Value = Option<Vec<(Cow<'de, str>, Node<'de>)>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    anything_else!(Self::Value, None);
    skip_strings!(Self::Value, None);
    skip_seq!(Self::Value, None);

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut properties: Vec<(Cow<'de, str>, Node<'de>)> = Vec::new();
        while let Some(name) = map.next_key_seed(StringSeed)? {
            let node = map.next_value_seed(self.0)?;
            // (JSON keys are strings.)
            let Some(name) = name else { continue };
            // A repeated name keeps its last schema, in the first one's place (a `Value` map
            // holds each key once).
            match properties.iter_mut().find(|(n, _)| *n == name) {
                Some(slot) => slot.1 = node,
                None => properties.push((name, node)),
            }
        }
        Ok(Some(properties))
    }
}

/// Reads `anyOf`, `oneOf`, `allOf`: the options when it is an array, else nothing.
struct OptionsSeed(NodeSeed);

impl<'de> DeserializeSeed<'de> for OptionsSeed {
    type Value = Option<Vec<Node<'de>>>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for OptionsSeed {
    type Value = Option<Vec<Node<'de>>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    anything_else!(Self::Value, None);
    skip_strings!(Self::Value, None);
    skip_map!(Self::Value, None);

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut options = Vec::new();
        while let Some(option) = seq.next_element_seed(self.0)? {
            options.push(option);
        }
        Ok(Some(options))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The walk as it was written over a parsed `Value`, as the reference.
    fn reference_walk(schema: &Value, out: &mut Vec<(String, Option<String>)>, depth: usize) {
        if depth >= MAX_SCHEMA_DEPTH {
            return;
        }
        let Some(object) = schema.as_object() else {
            return;
        };
        if let Some(Value::Object(properties)) = object.get("properties") {
            for (name, property) in properties {
                let description = property.get("description").and_then(Value::as_str);
                out.push((name.clone(), description.map(str::to_string)));
                reference_walk(property, out, depth + 1);
            }
        }
        for key in ["items", "additionalProperties"] {
            if let Some(nested) = object.get(key) {
                reference_walk(nested, out, depth + 1);
            }
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            if let Some(Value::Array(options)) = object.get(key) {
                for option in options {
                    reference_walk(option, out, depth + 1);
                }
            }
        }
    }

    fn walked(schema: &InputSchema) -> Vec<(String, Option<String>)> {
        let mut out = Vec::new();
        schema.walk(&mut |n, d| out.push((n.to_string(), d.map(str::to_string))));
        out
    }

    fn nested(depth: usize) -> Value {
        (0..depth).fold(
            json!({"description": "leaf"}),
            |inner, i| json!({"type": "object", "properties": {format!("p{i}"): inner}}),
        )
    }

    #[test]
    fn the_walk_visits_what_the_value_walk_visits_in_the_same_order() {
        let schemas = [
            json!({"type": "object", "properties": {
                "z": {"type": "string", "description": "last"},
                "a\"b\\n": {"description": "esc\u{e9}ped \"quote\""},
                "m": {"type": "array", "items": {"properties": {"x": {"description": 7}}},
                      "additionalProperties": {"properties": {"y": {}}},
                      "description": ["not", "a", "string"]},
                "k": "not an object",
                "o": {"anyOf": [{"properties": {"q": {"description": "q"}}}, 3, "s"],
                      "oneOf": {"properties": {"never": {}}},
                      "allOf": [{"items": [{"properties": {"tuple": {}}}]}]}
            }}),
            json!({"properties": ["not", "an", "object"], "items": {"properties": {"i": {}}}}),
            json!({"type": "object", "properties": {}}),
            json!("a string"),
            json!([{"properties": {"a": {}}}]),
            nested(15),
            nested(16),
            nested(17),
            nested(40),
        ];
        for value in &schemas {
            // Its keys in sorted order, as the schema's text holds them (serde_json keeps the
            // order written instead when a crate turns on its `preserve_order`: rig does).
            let mut value = value.clone();
            value.sort_all_objects();
            let value = &value;
            let mut expected = Vec::new();
            reference_walk(value, &mut expected, 0);
            let schema = InputSchema::from(value);
            assert_eq!(walked(&schema), expected, "{value}");
            let mut via_value = Vec::new();
            super::super::walk_schema(value, &mut |n, d| {
                via_value.push((n.to_string(), d.map(str::to_string)));
            });
            assert_eq!(via_value, expected, "{value}");
        }
        assert_eq!(walked(&InputSchema::from(nested(40))).len(), 16);
    }

    #[test]
    fn text_is_the_values_compact_form_and_parses_back_to_it() {
        let value = json!({"type": "object", "maximum": 1.0715660391465826e-75,
            "properties": {"b": {"enum": [1, -2, 3.5, null, true]}, "a": {}}});
        let schema = InputSchema::from(&value);
        // Keys sorted, whether or not serde_json keeps the order they were written in.
        assert_eq!(
            schema.as_str(),
            r#"{"maximum":1.0715660391465826e-75,"properties":{"a":{},"b":{"enum":[1,-2,3.5,null,true]}},"type":"object"}"#
        );
        assert_eq!(InputSchema::from_json(&value.to_string()).unwrap(), schema);
        assert_eq!(schema.to_value(), value);
        // Written in key order, the value serializes as the schema does, pretty or not.
        let value = schema.to_value();
        assert_eq!(serde_json::to_string(&schema).unwrap(), schema.as_str());
        assert_eq!(
            serde_json::to_string_pretty(&schema).unwrap(),
            serde_json::to_string_pretty(&value).unwrap()
        );
        let back: InputSchema = serde_json::from_str(schema.as_str()).unwrap();
        assert_eq!(back, schema);
        assert_eq!(format!("{schema}"), schema.as_str());
    }

    #[test]
    fn check_refuses_what_the_tools_table_refused() {
        let reason = |v: Value| match InputSchema::from(v).check() {
            Ok(()) => None,
            Err(RecordError::Invalid { field, reason }) => {
                assert_eq!(field, "input_schema");
                Some(reason)
            }
            Err(other) => panic!("unexpected {other:?}"),
        };
        assert_eq!(reason(json!({"type": "object"})), None);
        assert_eq!(reason(json!({})), None);
        assert_eq!(
            reason(json!(1)).as_deref(),
            Some("must be a JSON object (a JSON Schema)")
        );
        assert_eq!(
            reason(json!({"type": ["object", "null"]})).as_deref(),
            Some("`type` must be \"object\" for a tool's input, not [\"object\",\"null\"]")
        );
        assert_eq!(
            reason(json!({"type": "array"})).as_deref(),
            Some("`type` must be \"object\" for a tool's input, not \"array\"")
        );
    }

    #[test]
    fn the_deepest_schema_kept_is_the_deepest_the_parser_reads_back() {
        let chain = |levels: usize| (1..levels).fold(json!({}), |inner, _| json!({ "a": inner }));
        let deepest = InputSchema::from(chain(MAX_NESTING));
        assert!(deepest.check().is_ok());
        assert!(serde_json::from_str::<Value>(deepest.as_str()).is_ok());
        assert_eq!(deepest.to_value(), chain(MAX_NESTING));
        let too_deep = InputSchema::from(chain(MAX_NESTING + 1));
        assert!(serde_json::from_str::<Value>(too_deep.as_str()).is_err());
        assert!(too_deep.check().is_err());
        assert_eq!(too_deep.to_value(), Value::Null);
    }
}
