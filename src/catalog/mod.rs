//! Catalog files: skills, tools and pinned tools in one JSON document, checked whole, loaded
//! into a store in one transaction, and exported back from a snapshot.
//!
//! # The format (`capstore.catalog/v1`)
//!
//! ```
//! use capstore::catalog::Catalog;
//! let catalog = Catalog::from_json_str(r#"{
//!   "format": "capstore.catalog/v1",
//!   "skills": [
//!     {
//!       "name": "github",
//!       "description": "Work with GitHub repositories, issues and pull requests",
//!       "category": "code",
//!       "tags": ["git", "code-review"],
//!       "dependencies": ["git"],
//!       "examples": ["open a pull request for my branch", "list open issues labelled bug"],
//!       "tools": [
//!         {
//!           "name": "create_pull_request",
//!           "source": "github",
//!           "description": "Open a pull request from a branch into a base branch.",
//!           "tags": ["write"],
//!           "input_schema": {
//!             "type": "object",
//!             "properties": {
//!               "repo": {"type": "string", "description": "owner/name of the repository"},
//!               "head": {"type": "string", "description": "branch with the changes"},
//!               "base": {"type": "string", "description": "branch to merge into", "default": "main"},
//!               "title": {"type": "string", "description": "pull request title"}
//!             },
//!             "required": ["repo", "head", "title"]
//!           },
//!           "annotations": {"readOnlyHint": false}
//!         }
//!       ],
//!       "uses": ["web/fetch_url"]
//!     },
//!     {
//!       "name": "git",
//!       "description": "Local git repositories",
//!       "tools": [{"name": "git_status", "source": "git", "description": "Show the working tree status",
//!                  "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}}]
//!     }
//!   ],
//!   "tools": [
//!     {"name": "fetch_url", "source": "web", "description": "Fetch a web page"},
//!     {"name": "read_file", "source": "files", "description": "Read a file"}
//!   ],
//!   "pinned": ["files/read_file"]
//! }"#)?;
//! assert_eq!(catalog.skills[0].tools[0].qualified_name(), "github/create_pull_request");
//! # Ok::<(), capstore::catalog::CatalogError>(())
//! ```
//!
//! - `format` is required and must be exactly `capstore.catalog/v1`; `skills`, `tools` and
//!   `pinned` may be left out (empty). Unknown fields anywhere are an error.
//! - A skill ([`CatalogSkill`]) has a `name` (the naming rules of
//!   [`check_name`](crate::tools::check_name)), and optionally a `description`, one `category`,
//!   `tags`, `dependencies` (names of skills in the catalog, in any order, or already in the
//!   store; no cycles), `examples`, `tools` (the tools it bundles, that is owns) and `uses`
//!   (qualified names of tools it lists without owning: standalone, bundled by another skill,
//!   or already in the store).
//! - A tool is a [`Tool`] in its serde shape (`name`, `description`, `input_schema` or
//!   `inputSchema`, `tags`, `source`, `annotations`), without `skills`: loading fills that in.
//!   Qualified names (`source/name`, or `name`) are unique across the whole catalog.
//! - `pinned` lists qualified names of tools always sent ([`Catalog::policy`]), in the catalog
//!   or already in the store.
//!
//! Parsing ([`Catalog::from_json_str`], [`Catalog::from_path`]) checks everything that does not
//! need a store: the shape, every record by the store's rules, unique names, acyclic
//! dependencies. Every error ([`CatalogError`]) gives a JSON pointer to the offending value and
//! the skill or tool at fault, e.g.
//! `catalog /skills/0/dependencies/0 ("calendar"): dependency "contacts" is not a skill in the
//! catalog or the store`.
//!
//! # The load rule
//! [`Catalog::load_into`] (or [`Catalog::apply`] on the caller's transaction, or
//! [`Catalog::move_into`], which moves the tools into the store rather than cloning them: the
//! lighter way for a large catalog read only to be loaded; or [`Catalog::load_file`], which
//! reads a file and moves it in with one check where `from_path` and `move_into` make two)
//! writes the whole catalog in one transaction, all or nothing. Before writing it checks the
//! catalog against the store: its skills and tools must be new (a catalog adds, it never
//! replaces; a tool already in the store is [`CatalogErrorKind::ToolExists`]), and every
//! dependency, `uses` and `pinned` entry must name something in the catalog or the store.
//! Then it writes what inserting every tool and registering the skills with
//! [`register_skill`](crate::skills::register_skill) in dependency order (each after the
//! catalog skills it depends on, otherwise in file order) would: a skill's `tools` list in the
//! store is its `uses` followed by its bundled tools; each bundled tool's `skills` is that
//! skill. It writes them as two bulk inserts
//! ([`WriteTxn::insert_many`](crate::WriteTxn::insert_many)), the tools and then the skills, so
//! that a catalog of 100,000 tools loads in one pass (one text-index segment, each tool written
//! once).
//!
//! # The export rule
//! [`Catalog::from_snapshot`] writes skills by name and standalone tools by qualified name. A
//! skill bundles the tools it owns (whose `skills` name it), in the order its `tools` list gives
//! them; the rest of its list becomes `uses`. A tool owned by several skills is bundled by the
//! first of them by name and listed in the others' `uses` (a file can express one owner only,
//! so that sharing is not restored by loading the export). A tool owned by no existing skill is
//! standalone. So loading a file, exporting and loading the export into an empty store gives the
//! same tools and skills, and exporting that again gives the same catalog.

mod check;
mod error;
mod export;
mod load;
#[cfg(test)]
mod load_tests;
mod parse;
#[doc(hidden)]
pub mod synthetic;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::context::SelectionPolicy;
use crate::store::Store;
use crate::tools::Tool;

pub use error::{CatalogError, CatalogErrorKind};
pub use load::LoadReport;

/// A catalog: skills with the tools they bundle, standalone tools, and pinned tool names.
///
/// Parse one with [`Catalog::from_json_str`] or [`Catalog::from_path`] (which check it), build
/// one in code, or export one from a snapshot with [`Catalog::from_snapshot`].
///
/// ```
/// use capstore::catalog::{Catalog, CatalogSkill};
/// use capstore::{Store, Tool};
/// let catalog = Catalog {
///     skills: vec![CatalogSkill {
///         tools: vec![Tool::new("list_events", "List calendar events").with_source("calendar")],
///         ..CatalogSkill::new("calendar", "Meetings and events")
///     }],
///     pinned: vec!["calendar/list_events".into()],
///     ..Catalog::default()
/// };
/// let store = Store::new();
/// assert_eq!(catalog.load_into(&store)?.skills, ["calendar"]);
/// # Ok::<(), capstore::catalog::CatalogError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Catalog {
    /// The format version; required in files.
    pub format: CatalogFormat,
    /// Skills, each with the tools it bundles.
    #[serde(default)]
    pub skills: Vec<CatalogSkill>,
    /// Standalone tools, bundled by no skill.
    #[serde(default)]
    pub tools: Vec<Tool>,
    /// Qualified names of the tools always sent.
    #[serde(default)]
    pub pinned: Vec<String>,
}

/// The catalog format version, written as `"format": "capstore.catalog/v1"`.
///
/// ```
/// use capstore::catalog::CatalogFormat;
/// assert_eq!(serde_json::to_string(&CatalogFormat::V1)?, r#""capstore.catalog/v1""#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum CatalogFormat {
    /// Version 1.
    #[default]
    #[serde(rename = "capstore.catalog/v1")]
    V1,
}

/// A skill as a catalog writes it: the [`Skill`](crate::Skill) record's fields, with the tools
/// it bundles as full [`Tool`]s and the tools it lists without owning in `uses`.
///
/// ```
/// use capstore::catalog::CatalogSkill;
/// let skill: CatalogSkill = serde_json::from_str(r#"{"name": "notes", "uses": ["files/read_file"]}"#)?;
/// assert_eq!(skill.uses, ["files/read_file"]);
/// assert!(serde_json::from_str::<CatalogSkill>(r#"{"name": "notes", "tool": []}"#).is_err());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogSkill {
    /// Unique skill name.
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
    /// Names of the skills it needs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<String>,
    /// Example requests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    /// The tools it bundles (owns).
    #[serde(default)]
    pub tools: Vec<Tool>,
    /// Qualified names of tools it lists without owning.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uses: Vec<String>,
}

impl CatalogSkill {
    /// A skill entry with a name and description, and nothing else.
    ///
    /// ```
    /// let skill = capstore::catalog::CatalogSkill::new("files", "Work with files");
    /// assert!(skill.tools.is_empty());
    /// ```
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        CatalogSkill {
            name: name.into(),
            description: description.into(),
            category: String::new(),
            tags: Vec::new(),
            dependencies: Vec::new(),
            examples: Vec::new(),
            tools: Vec::new(),
            uses: Vec::new(),
        }
    }
}

impl Catalog {
    /// Parses and checks a catalog document (see the [module docs](self) for what is checked).
    ///
    /// ```
    /// use capstore::catalog::{Catalog, CatalogErrorKind};
    /// let err = Catalog::from_json_str(r#"{"format": "capstore.catalog/v1", "skills": [
    ///     {"name": "web", "tools": [{"name": "fetch", "input_schema": {"type": "string"}}]}
    /// ]}"#).unwrap_err();
    /// assert_eq!(err.path, "/skills/0/tools/0/input_schema");
    /// assert_eq!(err.name.as_deref(), Some("fetch"));
    /// assert!(matches!(err.kind, CatalogErrorKind::InvalidRecord(_)));
    /// ```
    pub fn from_json_str(text: &str) -> Result<Catalog, CatalogError> {
        let catalog = parse::parse(text)?;
        check::check(&catalog)?;
        Ok(catalog)
    }

    /// Reads, parses and checks a catalog file; errors name the file.
    ///
    /// ```
    /// use capstore::catalog::{Catalog, CatalogErrorKind};
    /// let err = Catalog::from_path("no/such/catalog.json").unwrap_err();
    /// assert!(matches!(err.kind, CatalogErrorKind::Io { .. }));
    /// assert!(err.to_string().starts_with("catalog no/such/catalog.json: cannot read the file"));
    /// ```
    pub fn from_path(path: impl AsRef<Path>) -> Result<Catalog, CatalogError> {
        let path = path.as_ref();
        let text = read_file(path)?;
        Catalog::from_json_str(&text).map_err(|e| e.in_file(path))
    }

    /// Reads a catalog file and moves it into `store` in one transaction: what
    /// [`from_path`](Self::from_path) followed by [`move_into`](Self::move_into) does, the
    /// same report and the same errors (each naming the file), with the catalog checked once
    /// rather than twice. The way to load a large catalog from a file (the CLI's `--catalog`
    /// takes it): at 100,000 tools the catalog's checks are 7.5% of a load's samples (its
    /// profile: BENCHMARKS-LOG.md, "Store writes and loading").
    ///
    /// ```
    /// use capstore::catalog::{Catalog, CatalogErrorKind};
    /// use capstore::{Store, TOOLS};
    /// let file = std::env::temp_dir().join(format!("capstore-doc-{}.json", std::process::id()));
    /// std::fs::write(&file, r#"{"format": "capstore.catalog/v1",
    ///     "tools": [{"name": "read_file", "source": "files", "description": "Read a file"}]}"#)?;
    /// let store = Store::new();
    /// let report = Catalog::load_file(&file, &store)?;
    /// assert_eq!((report.version, report.tools), (1, vec!["files/read_file".to_string()]));
    /// assert!(store.snapshot().contains(&TOOLS, "files/read_file")?);
    ///
    /// // Loading it again would replace the tool: refused, the file named, nothing changed.
    /// let err = Catalog::load_file(&file, &store).unwrap_err();
    /// assert_eq!((err.path.as_str(), &err.kind), ("/tools/0", &CatalogErrorKind::ToolExists));
    /// assert_eq!(err.file.as_deref(), Some(file.as_path()));
    /// assert_eq!(store.version(), 1);
    /// # std::fs::remove_file(&file)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn load_file(path: impl AsRef<Path>, store: &Store) -> Result<LoadReport, CatalogError> {
        let path = path.as_ref();
        let text = read_file(path)?;
        let catalog = parse::parse(&text).map_err(|e| e.in_file(path))?;
        drop(text);
        // `move_into` checks the catalog before anything is written.
        catalog.move_into(store).map_err(|e| e.in_file(path))
    }

    /// The catalog that ships with capstore (`catalog/default.json`).
    ///
    /// ```
    /// let catalog = capstore::catalog::Catalog::bundled()?;
    /// assert!(catalog.skills.iter().all(|s| !s.tools.is_empty()));
    /// # Ok::<(), capstore::catalog::CatalogError>(())
    /// ```
    pub fn bundled() -> Result<Catalog, CatalogError> {
        Catalog::from_json_str(include_str!("../../catalog/default.json"))
            .map_err(|e| e.in_file("catalog/default.json"))
    }

    /// The default [`SelectionPolicy`] with the catalog's pinned tools.
    ///
    /// ```
    /// use capstore::catalog::Catalog;
    /// let catalog = Catalog { pinned: vec!["files/read_file".into()], ..Catalog::default() };
    /// assert_eq!(catalog.policy().pinned_tools, ["files/read_file"]);
    /// ```
    pub fn policy(&self) -> SelectionPolicy {
        SelectionPolicy {
            pinned_tools: self.pinned.clone(),
            ..SelectionPolicy::default()
        }
    }
}

/// A catalog file's text; an error naming the file when it cannot be read.
fn read_file(path: &Path) -> Result<String, CatalogError> {
    std::fs::read_to_string(path).map_err(|e| {
        CatalogError::at(
            "",
            None,
            CatalogErrorKind::Io {
                kind: e.kind(),
                message: e.to_string(),
            },
        )
        .in_file(path)
    })
}
