//! Errors of skill registration and dependency resolution.

use std::fmt;

use crate::store::StoreError;

/// A skill operation that could not be carried out. The store (or the transaction) is left as
/// it was before the call.
///
/// ```
/// use capstore::skills::{register_skill, SkillError};
/// use capstore::{Skill, Store, Tool};
/// let store = Store::new();
/// let err = store
///     .write(|tx| register_skill(tx, Skill::new("deploy", "").with_dependencies(["build"]), Vec::<Tool>::new()))
///     .unwrap_err();
/// assert_eq!(err.to_string(), "skill `deploy` depends on `build`, which is not registered (deploy -> build)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillError {
    /// The store refused a write (duplicate skill, invalid record, ...).
    Store(StoreError),
    /// The skill lists a tool that is neither bundled with it nor registered.
    UnknownTool {
        /// The skill.
        skill: String,
        /// The tool's qualified name.
        tool: String,
    },
    /// A dependency, direct or transitive, is not registered.
    MissingDependency {
        /// The skill whose dependency is missing.
        skill: String,
        /// The missing skill.
        dependency: String,
        /// The chain from the skill being resolved to the missing one.
        chain: Vec<String>,
    },
    /// Skills depend on each other in a cycle.
    DependencyCycle {
        /// The cycle, first skill repeated at the end.
        chain: Vec<String>,
    },
    /// No skill has this name.
    NotFound {
        /// The name asked for.
        skill: String,
    },
    /// The skill cannot be removed while others depend on it.
    DependedOn {
        /// The skill.
        skill: String,
        /// The skills that depend on it.
        dependents: Vec<String>,
    },
    /// The tool cannot be removed while skills list it.
    ToolInUse {
        /// The tool's qualified name.
        tool: String,
        /// The skills that list it.
        skills: Vec<String>,
    },
}

impl From<StoreError> for SkillError {
    fn from(e: StoreError) -> Self {
        SkillError::Store(e)
    }
}

impl fmt::Display for SkillError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkillError::Store(e) => e.fmt(f),
            SkillError::UnknownTool { skill, tool } => write!(
                f,
                "skill `{skill}` lists tool `{tool}`, which is neither bundled with it nor registered"
            ),
            SkillError::MissingDependency {
                skill,
                dependency,
                chain,
            } => write!(
                f,
                "skill `{skill}` depends on `{dependency}`, which is not registered ({})",
                chain.join(" -> ")
            ),
            SkillError::DependencyCycle { chain } => {
                write!(f, "dependency cycle: {}", chain.join(" -> "))
            }
            SkillError::NotFound { skill } => write!(f, "no skill named `{skill}`"),
            SkillError::DependedOn { skill, dependents } => write!(
                f,
                "skill `{skill}` is needed by {}",
                dependents
                    .iter()
                    .map(|d| format!("`{d}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            SkillError::ToolInUse { tool, skills } => write!(
                f,
                "tool `{tool}` is listed by skill(s) {}; unregister or change them first",
                skills
                    .iter()
                    .map(|s| format!("`{s}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

impl std::error::Error for SkillError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SkillError::Store(e) => Some(e),
            _ => None,
        }
    }
}
