//! Reading the tools and queries files, with errors that name the file and the line.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::context::{PolicyError, SelectError};
use crate::embed::EmbedError;
use crate::store::{SchemaError, StoreError};
use crate::tools::Tool;

/// One tool of an evaluation catalog: its identity in the data set, and the tool to register
/// (its `source` is filled by the identity policy when names repeat, see [the module](super)).
///
/// ```
/// use capstore::eval::ToolEntry;
/// let entry = ToolEntry { id: "t1".into(), tool: capstore::Tool::new("search", "Search the web") };
/// assert_eq!(entry.tool.name, "search");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ToolEntry {
    /// The record's `id`, which queries' `gold` lists name.
    pub id: String,
    /// The tool: `name`, `description`, `parameters` as input schema, `tags`.
    pub tool: Tool,
}

/// One labelled query.
///
/// ```
/// use capstore::eval::Query;
/// let q = Query { id: "q".into(), query: "weather".into(), gold: vec!["w".into()], split: None };
/// assert_eq!(q.gold.len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// The query's id.
    pub id: String,
    /// The user's message.
    pub query: String,
    /// The ids of the relevant tools.
    pub gold: Vec<String>,
    /// The split it belongs to, if the file says.
    pub split: Option<String>,
}

/// Why an evaluation could not run.
///
/// ```
/// use capstore::eval::{EvalError, parse_queries};
/// let err = parse_queries("q.jsonl", "{\"id\": \"a\", \"query\": \"x\"}\n").unwrap_err();
/// assert!(matches!(err, EvalError::MissingField { line: 1, field: "gold", .. }));
/// assert_eq!(err.to_string(), "q.jsonl:1: missing field `gold`");
/// ```
#[derive(Debug)]
pub enum EvalError {
    /// A file could not be read or written.
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A line is not valid JSON, or not a JSON object.
    Json {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What the parser said.
        message: String,
    },
    /// A required field is absent.
    MissingField {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The field.
        field: &'static str,
    },
    /// A field has the wrong JSON type.
    WrongType {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The field.
        field: &'static str,
        /// What it should be.
        expected: &'static str,
    },
    /// Two records of one file share an `id`.
    DuplicateId {
        /// The file.
        path: PathBuf,
        /// 1-based line number of the second one.
        line: usize,
        /// The id.
        id: String,
    },
    /// Two tools would be stored under one key (the identity policy could not tell them apart).
    DuplicateKey {
        /// The key.
        key: String,
    },
    /// The store refused a tool, or a read failed.
    Store {
        /// The tool id, when one tool is to blame.
        id: Option<String>,
        /// The store's error.
        source: StoreError,
    },
    /// The text index options are out of range.
    Schema(SchemaError),
    /// A selection failed.
    Select(SelectError),
    /// The selection policy is out of range (for example `k` = 0 is fine, a NaN weight is not).
    Policy(PolicyError),
    /// The tools or the queries could not be embedded (hybrid retrieval).
    Embed(EmbedError),
    /// The store holds a different number of tools than the file after registration.
    CountMismatch {
        /// Tools in the file.
        expected: usize,
        /// Tools in the store.
        registered: usize,
    },
    /// A scripted conversation names a tool the store does not hold.
    UnknownTool {
        /// The conversation's id.
        conversation: String,
        /// 1-based turn number.
        turn: usize,
        /// The qualified name.
        key: String,
    },
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvalError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            EvalError::Json {
                path,
                line,
                message,
            } => write!(f, "{}:{line}: invalid JSON: {message}", path.display()),
            EvalError::MissingField { path, line, field } => {
                write!(f, "{}:{line}: missing field `{field}`", path.display())
            }
            EvalError::WrongType {
                path,
                line,
                field,
                expected,
            } => write!(
                f,
                "{}:{line}: field `{field}` must be {expected}",
                path.display()
            ),
            EvalError::DuplicateId { path, line, id } => {
                write!(f, "{}:{line}: duplicate id {id:?}", path.display())
            }
            EvalError::DuplicateKey { key } => {
                write!(f, "two tools would be stored under the key {key:?}")
            }
            EvalError::Store {
                id: Some(id),
                source,
            } => {
                write!(f, "registering tool {id:?}: {source}")
            }
            EvalError::Store { id: None, source } => write!(f, "store: {source}"),
            EvalError::Schema(e) => write!(f, "text index options: {e}"),
            EvalError::Select(e) => write!(f, "selection: {e}"),
            EvalError::Policy(e) => write!(f, "{e}"),
            EvalError::Embed(e) => write!(f, "{e}"),
            EvalError::CountMismatch {
                expected,
                registered,
            } => write!(
                f,
                "{expected} tools in the file but {registered} registered"
            ),
            EvalError::UnknownTool {
                conversation,
                turn,
                key,
            } => write!(
                f,
                "conversation {conversation:?}, turn {turn}: no tool {key:?} in the store"
            ),
        }
    }
}

impl std::error::Error for EvalError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EvalError::Io { source, .. } => Some(source),
            EvalError::Store { source, .. } => Some(source),
            EvalError::Schema(e) => Some(e),
            EvalError::Select(e) => Some(e),
            EvalError::Policy(e) => Some(e),
            EvalError::Embed(e) => Some(e),
            _ => None,
        }
    }
}

fn read(path: &Path) -> Result<String, EvalError> {
    std::fs::read_to_string(path).map_err(|source| EvalError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads a tools file (see [the module](super) for the format).
///
/// ```
/// let err = capstore::eval::load_tools("/no/such/file.jsonl").unwrap_err();
/// assert!(err.to_string().starts_with("/no/such/file.jsonl"));
/// ```
pub fn load_tools(path: impl AsRef<Path>) -> Result<Vec<ToolEntry>, EvalError> {
    let path = path.as_ref();
    parse_tools(path, &read(path)?)
}

/// Reads a queries file (see [the module](super) for the format).
///
/// ```
/// assert!(capstore::eval::load_queries("/no/such/file.jsonl").is_err());
/// ```
pub fn load_queries(path: impl AsRef<Path>) -> Result<Vec<Query>, EvalError> {
    let path = path.as_ref();
    parse_queries(path, &read(path)?)
}

/// One line's object, with helpers that turn absent or mistyped fields into errors naming the
/// line.
struct Line<'a> {
    path: &'a Path,
    line: usize,
    object: Map<String, Value>,
}

impl Line<'_> {
    fn wrong(&self, field: &'static str, expected: &'static str) -> EvalError {
        EvalError::WrongType {
            path: self.path.to_path_buf(),
            line: self.line,
            field,
            expected,
        }
    }

    fn string(&self, field: &'static str) -> Result<String, EvalError> {
        match self.object.get(field) {
            None => Err(EvalError::MissingField {
                path: self.path.to_path_buf(),
                line: self.line,
                field,
            }),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(self.wrong(field, "a string")),
        }
    }

    fn optional_string(&self, field: &'static str) -> Result<Option<String>, EvalError> {
        match self.object.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.wrong(field, "a string")),
        }
    }

    fn strings(&self, field: &'static str, required: bool) -> Result<Vec<String>, EvalError> {
        match self.object.get(field) {
            None | Some(Value::Null) if !required => Ok(Vec::new()),
            None => Err(EvalError::MissingField {
                path: self.path.to_path_buf(),
                line: self.line,
                field,
            }),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.clone()),
                    _ => Err(self.wrong(field, "an array of strings")),
                })
                .collect(),
            Some(_) => Err(self.wrong(field, "an array of strings")),
        }
    }
}

/// The non-blank lines of `text` as JSON objects, with their 1-based numbers.
fn lines<'a>(path: &'a Path, text: &'a str) -> impl Iterator<Item = Result<Line<'a>, EvalError>> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(move |(i, l)| {
            let line = i + 1;
            match serde_json::from_str::<Value>(l) {
                Ok(Value::Object(object)) => Ok(Line { path, line, object }),
                Ok(_) => Err(EvalError::Json {
                    path: path.to_path_buf(),
                    line,
                    message: "expected a JSON object".into(),
                }),
                Err(e) => Err(EvalError::Json {
                    path: path.to_path_buf(),
                    line,
                    message: e.to_string(),
                }),
            }
        })
}

/// Parses the text of a tools file; `path` only names it in errors.
///
/// ```
/// use capstore::eval::parse_tools;
/// let tools = parse_tools("t.jsonl", r#"{"id": "a", "name": "getPM2.5Level", "parameters": null, "tags": ["air"]}"#)?;
/// assert_eq!((tools[0].id.as_str(), tools[0].tool.name.as_str()), ("a", "getPM2.5Level"));
/// assert!(parse_tools("t.jsonl", "\n{\"id\": \"a\"}").unwrap_err().to_string().starts_with("t.jsonl:2:"));
/// # Ok::<(), capstore::eval::EvalError>(())
/// ```
pub fn parse_tools(path: impl AsRef<Path>, text: &str) -> Result<Vec<ToolEntry>, EvalError> {
    let path = path.as_ref();
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for line in lines(path, text) {
        let line = line?;
        let id = line.string("id")?;
        let mut tool = Tool::new(
            line.string("name")?,
            line.optional_string("description")?.unwrap_or_default(),
        );
        match line.object.get("parameters") {
            None | Some(Value::Null) => {}
            Some(schema @ Value::Object(_)) => tool.input_schema = schema.into(),
            Some(_) => return Err(line.wrong("parameters", "a JSON Schema object or null")),
        }
        tool.tags = line.strings("tags", false)?;
        if !seen.insert(id.clone()) {
            return Err(EvalError::DuplicateId {
                path: path.to_path_buf(),
                line: line.line,
                id,
            });
        }
        out.push(ToolEntry { id, tool });
    }
    Ok(out)
}

/// Parses the text of a queries file; `path` only names it in errors.
///
/// ```
/// use capstore::eval::parse_queries;
/// let q = parse_queries("q.jsonl", r#"{"id": "1", "query": "weather", "gold": ["w"], "split": "test"}"#)?;
/// assert_eq!(q[0].split.as_deref(), Some("test"));
/// assert!(parse_queries("q.jsonl", "{oops").is_err());
/// # Ok::<(), capstore::eval::EvalError>(())
/// ```
pub fn parse_queries(path: impl AsRef<Path>, text: &str) -> Result<Vec<Query>, EvalError> {
    let path = path.as_ref();
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for line in lines(path, text) {
        let line = line?;
        let id = line.string("id")?;
        let query = Query {
            query: line.string("query")?,
            gold: line.strings("gold", true)?,
            split: line.optional_string("split")?,
            id: id.clone(),
        };
        if !seen.insert(id.clone()) {
            return Err(EvalError::DuplicateId {
                path: path.to_path_buf(),
                line: line.line,
                id,
            });
        }
        out.push(query);
    }
    Ok(out)
}
