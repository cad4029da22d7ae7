//! Usage kept in a file between runs: what `capstore serve` keeps beside its state, and what
//! `capstore select --usage FILE` and `capstore eval --usage FILE` read.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::record::USAGE;
use crate::store::{Snapshot, Store, StoreError};
use crate::tools::TOOLS;

use super::record::{MAX_COMPANIONS, Usage};

/// The `format` a usage file declares.
///
/// ```
/// assert_eq!(capstore::usage::USAGE_FORMAT, "capstore.usage/v1");
/// ```
pub const USAGE_FORMAT: &str = "capstore.usage/v1";

/// A usage file's contents: `{"format": "capstore.usage/v1", "usage": [rows...]}`, one
/// [`Usage`] row a tool.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct UsageFile {
    format: String,
    usage: Vec<Usage>,
}

/// Where `capstore serve --mcp-config FILE` keeps the usage it learned: `FILE.usage.json`,
/// beside the configuration (and its trust file).
///
/// ```
/// use capstore::usage::usage_path;
/// assert_eq!(usage_path("/home/me/.mcp.json".as_ref()), std::path::Path::new("/home/me/.mcp.json.usage.json"));
/// ```
pub fn usage_path(config: &Path) -> PathBuf {
    let mut name = config.as_os_str().to_owned();
    name.push(".usage.json");
    PathBuf::from(name)
}

/// Why a usage file could not be read or written. Nothing in the store changed.
///
/// ```
/// let err = capstore::usage::load_file(&capstore::Store::new(), "/no/such/usage.json").unwrap_err();
/// assert!(err.to_string().starts_with("/no/such/usage.json: "), "{err}");
/// ```
#[derive(Debug)]
pub enum UsageFileError {
    /// The file could not be read or written.
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not a usage file: bad JSON, a wrong field, another `format`, or a row that
    /// breaks a bound (more than [`MAX_COMPANIONS`] companions).
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, with its JSON path.
        reason: String,
    },
    /// The store refused the rows.
    Store(StoreError),
}

impl fmt::Display for UsageFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UsageFileError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            UsageFileError::Invalid { path, reason } => {
                write!(f, "{}: not a usage file: {reason}", path.display())
            }
            UsageFileError::Store(e) => write!(f, "writing usage: {e}"),
        }
    }
}

impl std::error::Error for UsageFileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            UsageFileError::Io { source, .. } => Some(source),
            UsageFileError::Store(e) => Some(e),
            UsageFileError::Invalid { .. } => None,
        }
    }
}

/// What [`load_file`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadedUsage {
    /// Rows written (tools the store holds).
    pub rows: usize,
    /// Rows skipped: their tool is not in the store (removed since, or not loaded here).
    pub skipped: usize,
}

/// Writes `snapshot`'s usage rows to `path` (a new file in its place, written whole first:
/// a reader never sees half of it). Returns how many rows were written.
///
/// ```
/// use capstore::usage::{TurnUse, learn, load_file, save_file};
/// use capstore::{Store, Tool, TOOLS, USAGE};
/// let store = Store::new();
/// store.write(|tx| tx.insert(&TOOLS, Tool::new("cd", "Change directory")))?;
/// store.write(|tx| learn(tx, &TurnUse::new(["cd"])))?;
/// let path = std::env::temp_dir().join(format!("usage-doc-{}.json", std::process::id()));
/// assert_eq!(save_file(&store.snapshot(), &path)?, 1);
/// let other = Store::new();
/// other.write(|tx| tx.insert(&TOOLS, Tool::new("cd", "Change directory")))?;
/// assert_eq!(load_file(&other, &path)?.rows, 1);
/// assert_eq!(other.snapshot().get(&USAGE, "cd")?.map(|u| u.calls), Some(1));
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn save_file(snapshot: &Snapshot, path: impl AsRef<Path>) -> Result<usize, UsageFileError> {
    let path = path.as_ref();
    let usage: Vec<Usage> = snapshot
        .iter(&USAGE)
        .map_err(UsageFileError::Store)?
        .records()
        .cloned()
        .collect();
    let rows = usage.len();
    let file = UsageFile {
        format: USAGE_FORMAT.to_string(),
        usage,
    };
    let io = |source| UsageFileError::Io {
        path: path.to_path_buf(),
        source,
    };
    let text = serde_json::to_vec(&file).map_err(|e| io(std::io::Error::other(e)))?;
    let mut temp = path.as_os_str().to_owned();
    temp.push(".tmp");
    std::fs::write(&temp, text).map_err(io)?;
    std::fs::rename(&temp, path).map_err(io)?;
    Ok(rows)
}

/// Reads the usage file at `path` into `store` in one transaction: each row of a tool the
/// store holds replaces that tool's row; rows of other tools are skipped (and counted). The
/// whole file is checked first: a bad file changes nothing.
///
/// ```
/// let path = std::env::temp_dir().join(format!("bad-usage-{}.json", std::process::id()));
/// std::fs::write(&path, r#"{"format": "capstore.usage/v9", "usage": []}"#)?;
/// let err = capstore::usage::load_file(&capstore::Store::new(), &path).unwrap_err();
/// assert!(err.to_string().ends_with("format `capstore.usage/v9`, expected `capstore.usage/v1`"), "{err}");
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn load_file(store: &Store, path: impl AsRef<Path>) -> Result<LoadedUsage, UsageFileError> {
    let rows = read_file(path)?;
    let mut loaded = LoadedUsage {
        rows: 0,
        skipped: 0,
    };
    store
        .write(|tx| {
            for mut row in rows {
                if tx.view().contains(&TOOLS, &row.tool)? {
                    row.sort_companions();
                    tx.upsert(&USAGE, row)?;
                    loaded.rows += 1;
                } else {
                    loaded.skipped += 1;
                }
            }
            Ok(())
        })
        .map_err(UsageFileError::Store)?;
    Ok(loaded)
}

/// The rows of the usage file at `path`, checked, without a store (`capstore usage` reads a
/// gateway's file this way).
///
/// ```
/// let path = std::env::temp_dir().join(format!("read-usage-{}.json", std::process::id()));
/// std::fs::write(&path, r#"{"format": "capstore.usage/v1", "usage": [
///     {"tool": "fs/mv", "turns": 3, "calls": 3, "sent": 4, "sent_and_called": 3}]}"#)?;
/// let rows = capstore::usage::read_file(&path)?;
/// assert_eq!((rows[0].tool.as_str(), rows[0].turns), ("fs/mv", 3));
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read_file(path: impl AsRef<Path>) -> Result<Vec<Usage>, UsageFileError> {
    let path = path.as_ref();
    let invalid = |reason: String| UsageFileError::Invalid {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read(path).map_err(|source| UsageFileError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut de = serde_json::Deserializer::from_slice(&text);
    let file: UsageFile = serde_path_to_error::deserialize(&mut de)
        .map_err(|e| invalid(format!("{}: {}", e.path(), e.inner())))?;
    if file.format != USAGE_FORMAT {
        return Err(invalid(format!(
            "format `{}`, expected `{USAGE_FORMAT}`",
            file.format
        )));
    }
    if let Some((i, row)) = file
        .usage
        .iter()
        .enumerate()
        .find(|(_, u)| u.companions.len() > MAX_COMPANIONS)
    {
        return Err(invalid(format!(
            "usage[{i}] ({}): {} companions, at most {MAX_COMPANIONS}",
            row.tool,
            row.companions.len()
        )));
    }
    Ok(file.usage)
}
