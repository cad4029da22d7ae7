//! The tool record.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::store::RecordError;

use super::names::{check_name, check_tool_name, refuse};
use super::schema::InputSchema;

/// A tool the model can call: a name, a description, a JSON Schema for its input, tags, the
/// source that provided it (an MCP server, a skill, your application) and free-form annotations.
///
/// Records are values: to change a tool, write a new one. Unknown JSON fields are an error, so
/// a typo in a catalog file does not pass silently.
///
/// ```
/// use capstore::Tool;
/// use serde_json::json;
///
/// let tool = Tool::new("get_weather", "Current weather for a city")
///     .with_source("weather")
///     .with_tags(["weather", "web"])
///     .with_input_schema(json!({
///         "type": "object",
///         "properties": { "city": { "type": "string", "description": "City name" } },
///         "required": ["city"]
///     }));
/// assert_eq!(tool.qualified_name(), "weather/get_weather");
///
/// let from_mcp: Tool = serde_json::from_value(json!({
///     "name": "search", "description": "Search", "inputSchema": { "type": "object" }
/// }))?;
/// assert_eq!(from_mcp.qualified_name(), "search");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tool {
    /// The name the model calls it by (see the naming rules in [`check_tool_name`]).
    pub name: String,
    /// What the tool does, for the model and for search.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments; an object schema. Defaults to an object with no
    /// properties. Held as compact JSON text ([`InputSchema`]).
    #[serde(default, alias = "inputSchema")]
    pub input_schema: InputSchema,
    /// Free-form labels, indexed for queries and filters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Where the tool comes from (an MCP server's name, a plug-in); part of the qualified name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Free-form metadata, such as MCP's tool annotations (`readOnlyHint`, ...).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub annotations: Value,
    /// The skills that bundle this tool (kept by skill registration).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<String>,
    /// Tools this one needs called first (`car/pressBrakePedal` for `car/startEngine`):
    /// whenever it enters a turn's list, they come with it ([the companion
    /// channel](crate::context#companions)), whatever has been learned. Keys; a bare name
    /// (no `/`) is looked up in this tool's source first. A name the store does not hold is
    /// skipped. Declared by a catalog or in code; MCP servers cannot set it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<String>,
}

impl Tool {
    /// A tool with a name and description, no source, no tags and an empty object schema.
    ///
    /// ```
    /// let tool = capstore::Tool::new("read_file", "Read a file");
    /// assert_eq!(tool.input_schema.to_value()["type"], "object");
    /// ```
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Tool {
            name: name.into(),
            description: description.into(),
            input_schema: InputSchema::empty_object(),
            tags: Vec::new(),
            source: None,
            annotations: Value::Null,
            skills: Vec::new(),
            requires: Vec::new(),
        }
    }

    /// Sets the source.
    ///
    /// ```
    /// assert_eq!(capstore::Tool::new("a", "").with_source("fs").source.as_deref(), Some("fs"));
    /// ```
    pub fn with_source(mut self, source: impl Into<String>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// Sets the tags.
    ///
    /// ```
    /// assert_eq!(capstore::Tool::new("a", "").with_tags(["x", "y"]).tags, ["x", "y"]);
    /// ```
    pub fn with_tags<S: Into<String>>(mut self, tags: impl IntoIterator<Item = S>) -> Self {
        self.tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the input JSON Schema: a `serde_json::Value` (such as a `json!` value) or an
    /// [`InputSchema`].
    ///
    /// ```
    /// use serde_json::json;
    /// let t = capstore::Tool::new("a", "").with_input_schema(json!({"type": "object"}));
    /// assert_eq!(t.input_schema, json!({"type": "object"}));
    /// assert_eq!(t.input_schema.as_str(), r#"{"type":"object"}"#);
    /// ```
    pub fn with_input_schema(mut self, schema: impl Into<InputSchema>) -> Self {
        self.input_schema = schema.into();
        self
    }

    /// Sets the annotations.
    ///
    /// ```
    /// use serde_json::json;
    /// let t = capstore::Tool::new("a", "").with_annotations(json!({"readOnlyHint": true}));
    /// assert_eq!(t.annotations["readOnlyHint"], true);
    /// ```
    pub fn with_annotations(mut self, annotations: Value) -> Self {
        self.annotations = annotations;
        self
    }

    /// Sets the skills that bundle this tool.
    ///
    /// ```
    /// assert_eq!(capstore::Tool::new("a", "").with_skills(["files"]).skills, ["files"]);
    /// ```
    pub fn with_skills<S: Into<String>>(mut self, skills: impl IntoIterator<Item = S>) -> Self {
        self.skills = skills.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the tools this one needs called first ([`Tool::requires`]).
    ///
    /// ```
    /// let start = capstore::Tool::new("startEngine", "Start the engine").with_source("car")
    ///     .with_requires(["pressBrakePedal"]);
    /// assert_eq!(start.requires, ["pressBrakePedal"]);
    /// ```
    pub fn with_requires<S: Into<String>>(mut self, tools: impl IntoIterator<Item = S>) -> Self {
        self.requires = tools.into_iter().map(Into::into).collect();
        self
    }

    /// The primary key: `source/name`, or `name` when there is no source.
    ///
    /// ```
    /// use capstore::Tool;
    /// assert_eq!(Tool::new("search", "").with_source("github").qualified_name(), "github/search");
    /// assert_eq!(Tool::new("search", "").qualified_name(), "search");
    /// ```
    pub fn qualified_name(&self) -> String {
        match self.source.as_deref() {
            Some(source) if !source.is_empty() => format!("{source}/{}", self.name),
            _ => self.name.clone(),
        }
    }

    /// Whether the tool has a (non-empty) source, so that its key is `source/name`.
    fn has_source(&self) -> bool {
        self.source
            .as_deref()
            .is_some_and(|source| !source.is_empty())
    }

    /// Checks the record against the table's rules: name ([`check_tool_name`]) and source
    /// ([`check_name`]),
    /// tags (not empty, at most 128 bytes, no control characters) and an object input schema.
    ///
    /// ```
    /// use capstore::Tool;
    /// use serde_json::json;
    /// assert!(Tool::new("ok", "").validate().is_ok());
    /// assert!(Tool::new("", "").validate().is_err());
    /// assert!(Tool::new("a", "").with_input_schema(json!("string")).validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), RecordError> {
        check_tool_name(&self.name, self.has_source())?;
        if let Some(source) = &self.source {
            check_name("source", source)?;
        }
        for tag in &self.tags {
            check_label("tags", tag)?;
        }
        for skill in &self.skills {
            check_name("skills", skill)?;
        }
        self.input_schema.check()
    }
}

/// Checks a tag or similar label: not blank, at most 128 bytes, no control characters.
///
/// ```
/// use capstore::tools::check_label;
/// assert!(check_label("tags", "web").is_ok());
/// assert!(check_label("tags", " ").is_err());
/// ```
pub fn check_label(field: &'static str, value: &str) -> Result<(), RecordError> {
    let reason = if value.trim().is_empty() {
        Some("must not be empty")
    } else if value.len() > 128 {
        Some("is longer than 128 bytes")
    } else if value.chars().any(char::is_control) {
        Some("must not contain control characters")
    } else {
        None
    };
    refuse(field, value, reason)
}
