//! Errors of reading, checking, loading and exporting a catalog: each names the place in the
//! document (a JSON pointer) and, where known, the skill or tool at fault.

use std::fmt;
use std::path::PathBuf;

use crate::skills::SkillError;
use crate::store::{RecordError, StoreError};

/// A catalog that could not be read, checked, loaded or exported. When it comes from
/// [`Catalog::load_into`](super::Catalog::load_into) or [`Catalog::apply`](super::Catalog::apply),
/// the store (or the transaction) is exactly as it was before the call.
///
/// `path` is a JSON pointer ([RFC 6901](https://www.rfc-editor.org/rfc/rfc6901)) into the
/// document, such as `/skills/3/tools/1/input_schema`; empty for the whole document.
///
/// ```
/// use capstore::catalog::{Catalog, CatalogErrorKind};
/// let err = Catalog::from_json_str(r#"{"format": "capstore.catalog/v1", "skills": [
///     {"name": "calendar", "dependencies": ["calendar"]}
/// ]}"#).unwrap_err();
/// assert_eq!(err.path, "/skills/0/dependencies/0");
/// assert_eq!(err.name.as_deref(), Some("calendar"));
/// assert!(matches!(err.kind, CatalogErrorKind::InvalidRecord(_)));
/// assert_eq!(
///     err.to_string(),
///     r#"catalog /skills/0/dependencies/0 ("calendar"): invalid dependencies: skill `calendar` depends on itself"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogError {
    /// The file the catalog was read from, when it was read from one.
    pub file: Option<PathBuf>,
    /// JSON pointer to the offending value; empty for the whole document.
    pub path: String,
    /// The skill or tool (qualified name) at fault, when known.
    pub name: Option<String>,
    /// What is wrong.
    pub kind: CatalogErrorKind,
}

/// What is wrong with a catalog; see [`CatalogError`] for where.
///
/// ```
/// use capstore::catalog::{Catalog, CatalogErrorKind};
/// let err = Catalog::from_json_str("{\"format\": ").unwrap_err();
/// assert!(matches!(err.kind, CatalogErrorKind::Syntax { line: 1, .. }));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CatalogErrorKind {
    /// The file could not be read.
    Io {
        /// The I/O error's kind.
        kind: std::io::ErrorKind,
        /// The I/O error's message.
        message: String,
    },
    /// The text is not well-formed JSON.
    Syntax {
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// What the JSON parser expected.
        message: String,
    },
    /// Well-formed JSON that does not have the catalog's shape: a missing or unknown field, a
    /// value of the wrong type, a wrong `format`, a `skills` field in a catalog tool.
    Format {
        /// What is wrong.
        message: String,
    },
    /// A skill, tool or list entry breaks the store's rules (names, tags, input schema, a
    /// skill that depends on itself, a repeated entry).
    InvalidRecord(Box<RecordError>),
    /// Two tools of the catalog have the same qualified name.
    DuplicateTool {
        /// Where the first one is.
        first: String,
    },
    /// Two skills of the catalog have the same name.
    DuplicateSkill {
        /// Where the first one is.
        first: String,
    },
    /// A skill of the catalog is already in the store.
    SkillExists,
    /// A tool of the catalog is already in the store: loading a catalog adds tools, it does not
    /// replace them.
    ToolExists,
    /// A dependency is neither a skill of the catalog nor a skill in the store.
    UnknownDependency {
        /// The missing skill.
        dependency: String,
    },
    /// Skills of the catalog depend on each other in a cycle.
    DependencyCycle {
        /// The cycle, first skill repeated at the end.
        chain: Vec<String>,
    },
    /// A tool named in `uses` or `pinned` is neither in the catalog nor in the store.
    UnknownTool {
        /// The qualified name.
        tool: String,
    },
    /// The store refused a write while the catalog was loaded.
    Store(Box<StoreError>),
    /// Skill registration refused a skill while the catalog was loaded.
    Skill(Box<SkillError>),
}

impl CatalogError {
    /// An error at `path`, about the entry `name`.
    pub(crate) fn at(path: impl Into<String>, name: Option<&str>, kind: CatalogErrorKind) -> Self {
        CatalogError {
            file: None,
            path: path.into(),
            name: name.map(str::to_string),
            kind,
        }
    }

    /// The same error, read from `file`.
    pub(crate) fn in_file(mut self, file: impl Into<PathBuf>) -> Self {
        self.file = Some(file.into());
        self
    }
}

impl From<StoreError> for CatalogError {
    fn from(e: StoreError) -> Self {
        CatalogError::at("", None, CatalogErrorKind::Store(Box::new(e)))
    }
}

impl fmt::Display for CatalogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("catalog")?;
        if let Some(file) = &self.file {
            write!(f, " {}", file.display())?;
        }
        if !self.path.is_empty() {
            write!(f, " {}", self.path)?;
        }
        if let Some(name) = &self.name {
            write!(f, " ({name:?})")?;
        }
        write!(f, ": {}", self.kind)
    }
}

impl fmt::Display for CatalogErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CatalogErrorKind::Io { message, .. } => write!(f, "cannot read the file: {message}"),
            CatalogErrorKind::Syntax {
                line,
                column,
                message,
            } => write!(
                f,
                "not well-formed JSON at line {line}, column {column}: {message}"
            ),
            CatalogErrorKind::Format { message } => {
                write!(f, "not in the catalog format: {message}")
            }
            CatalogErrorKind::InvalidRecord(e) => e.fmt(f),
            CatalogErrorKind::DuplicateTool { first } => write!(
                f,
                "a tool with this qualified name is already defined at {first}"
            ),
            CatalogErrorKind::DuplicateSkill { first } => {
                write!(f, "a skill with this name is already defined at {first}")
            }
            CatalogErrorKind::SkillExists => write!(f, "the skill is already in the store"),
            CatalogErrorKind::ToolExists => write!(
                f,
                "the tool is already in the store (loading a catalog adds tools, it does not replace them)"
            ),
            CatalogErrorKind::UnknownDependency { dependency } => write!(
                f,
                "dependency {dependency:?} is not a skill in the catalog or the store"
            ),
            CatalogErrorKind::DependencyCycle { chain } => {
                write!(f, "dependency cycle: {}", chain.join(" -> "))
            }
            CatalogErrorKind::UnknownTool { tool } => {
                write!(f, "tool {tool:?} is not in the catalog or the store")
            }
            CatalogErrorKind::Store(e) => write!(f, "the store refused a write: {e}"),
            CatalogErrorKind::Skill(e) => write!(f, "skill registration failed: {e}"),
        }
    }
}

impl std::error::Error for CatalogError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            CatalogErrorKind::InvalidRecord(e) => Some(&**e),
            CatalogErrorKind::Store(e) => Some(&**e),
            CatalogErrorKind::Skill(e) => Some(&**e),
            _ => None,
        }
    }
}

/// Appends one reference token to a JSON pointer, escaping `~` and `/` as RFC 6901 says.
pub(crate) fn push_token(pointer: &mut String, token: &str) {
    pointer.push('/');
    for c in token.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
    }
}

/// `base` followed by `tokens`, as a JSON pointer.
pub(crate) fn pointer(base: &str, tokens: &[&dyn fmt::Display]) -> String {
    let mut out = base.to_string();
    for token in tokens {
        push_token(&mut out, &token.to_string());
    }
    out
}
