//! The skill record.

use serde::{Deserialize, Serialize};

use crate::store::RecordError;
use crate::tools::{check_name, refuse};

/// A skill: a named bundle of tools, with a category, tags, the skills it depends on and
/// example requests that show when it is wanted.
///
/// ```
/// use capstore::Skill;
/// let skill = Skill::new("calendar", "Read and book meetings")
///     .with_category("productivity")
///     .with_tags(["time"])
///     .with_tools(["calendar/list_events", "calendar/create_event"])
///     .with_dependencies(["contacts"])
///     .with_examples(["book a meeting with Ana tomorrow"]);
/// assert_eq!(skill.tools.len(), 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Skill {
    /// Unique name.
    pub name: String,
    /// What the skill is for.
    #[serde(default)]
    pub description: String,
    /// One category (empty: none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub category: String,
    /// Free-form labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Qualified names of the tools it bundles.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Names of the skills it needs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<String>,
    /// Example requests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
}

impl Skill {
    /// A skill with a name and description, and nothing else.
    ///
    /// ```
    /// assert_eq!(capstore::Skill::new("files", "Work with files").name, "files");
    /// ```
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Skill {
            name: name.into(),
            description: description.into(),
            category: String::new(),
            tags: Vec::new(),
            tools: Vec::new(),
            dependencies: Vec::new(),
            examples: Vec::new(),
        }
    }

    /// Sets the category.
    ///
    /// ```
    /// assert_eq!(capstore::Skill::new("a", "").with_category("dev").category, "dev");
    /// ```
    pub fn with_category(mut self, category: impl Into<String>) -> Self {
        self.category = category.into();
        self
    }

    /// Sets the tags.
    ///
    /// ```
    /// assert_eq!(capstore::Skill::new("a", "").with_tags(["x"]).tags, ["x"]);
    /// ```
    pub fn with_tags<S: Into<String>>(mut self, tags: impl IntoIterator<Item = S>) -> Self {
        self.tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the bundled tools (qualified names).
    ///
    /// ```
    /// assert_eq!(capstore::Skill::new("a", "").with_tools(["fs/read"]).tools, ["fs/read"]);
    /// ```
    pub fn with_tools<S: Into<String>>(mut self, tools: impl IntoIterator<Item = S>) -> Self {
        self.tools = tools.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the dependencies (skill names).
    ///
    /// ```
    /// assert_eq!(capstore::Skill::new("a", "").with_dependencies(["b"]).dependencies, ["b"]);
    /// ```
    pub fn with_dependencies<S: Into<String>>(mut self, deps: impl IntoIterator<Item = S>) -> Self {
        self.dependencies = deps.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the example requests.
    ///
    /// ```
    /// assert_eq!(capstore::Skill::new("a", "").with_examples(["do x"]).examples, ["do x"]);
    /// ```
    pub fn with_examples<S: Into<String>>(mut self, examples: impl IntoIterator<Item = S>) -> Self {
        self.examples = examples.into_iter().map(Into::into).collect();
        self
    }

    /// Checks names (the skill's, its dependencies'), labels and that it does not depend on
    /// itself. Whether dependencies and tools exist is checked by skill registration, which sees
    /// the whole store.
    ///
    /// ```
    /// use capstore::Skill;
    /// assert!(Skill::new("a", "").validate().is_ok());
    /// assert!(Skill::new("a", "").with_dependencies(["a"]).validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), RecordError> {
        check_name("name", &self.name)?;
        if !self.category.is_empty() {
            crate::tools::check_label("category", &self.category)?;
        }
        for tag in &self.tags {
            crate::tools::check_label("tags", tag)?;
        }
        for tool in &self.tools {
            let bad = tool.is_empty() || tool.chars().any(char::is_control);
            refuse(
                "tools",
                tool,
                bad.then_some("must be a non-empty qualified tool name without control characters"),
            )?;
        }
        for dependency in &self.dependencies {
            check_name("dependencies", dependency)?;
            if *dependency == self.name {
                return Err(RecordError::Invalid {
                    field: "dependencies",
                    reason: format!("skill `{}` depends on itself", self.name),
                });
            }
        }
        Ok(())
    }
}
