//! Errors of the store: one enum for schema declaration, one for reads and writes.

use std::fmt;
use std::sync::Arc;

/// A schema that cannot be built, reported by [`StoreBuilder::build`](super::StoreBuilder::build)
/// before any store exists.
///
/// ```
/// use capstore::store::{SchemaError, TableSchema};
///
/// let mut builder = capstore::Store::builder(); // has a `tools` table already
/// let err = builder
///     .table(TableSchema::<String>::new("tools", |s: &String| s.clone()))
///     .unwrap_err();
/// assert!(matches!(err, SchemaError::DuplicateTable { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaError {
    /// A table or index name is empty or holds characters other than ASCII letters, digits, `_`
    /// and `-`.
    InvalidName {
        /// The table the name belongs to (the name itself when a table name is invalid).
        table: String,
        /// The index name, when an index name is invalid.
        index: Option<String>,
        /// Why the name was refused.
        reason: &'static str,
    },
    /// Two tables share a name.
    DuplicateTable {
        /// The repeated table name.
        table: String,
    },
    /// Two indexes of one table share a name, or an index uses the reserved name `id`.
    DuplicateIndex {
        /// The table.
        table: String,
        /// The repeated index name.
        index: String,
    },
    /// The full-text index configuration is invalid (for example a negative `k1`).
    InvalidTextIndex {
        /// The table.
        table: String,
        /// What is wrong, from the BM25 module.
        reason: String,
    },
    /// The table follows ([`TableSchema::follows`](super::TableSchema::follows)) a table that
    /// is not declared before it in this builder.
    UnknownParent {
        /// The following table.
        table: String,
    },
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchemaError::InvalidName {
                table,
                index: Some(index),
                reason,
            } => write!(f, "table `{table}`: invalid index name `{index}`: {reason}"),
            SchemaError::InvalidName {
                table,
                index: None,
                reason,
            } => write!(f, "invalid table name `{table}`: {reason}"),
            SchemaError::DuplicateTable { table } => {
                write!(f, "table `{table}` is declared twice")
            }
            SchemaError::DuplicateIndex { table, index } => write!(
                f,
                "table `{table}`: index `{index}` is declared twice or uses the reserved name `id`"
            ),
            SchemaError::InvalidTextIndex { table, reason } => {
                write!(f, "table `{table}`: invalid text index: {reason}")
            }
            SchemaError::UnknownParent { table } => write!(
                f,
                "table `{table}` follows a table that is not declared before it"
            ),
        }
    }
}

impl std::error::Error for SchemaError {}

/// Why a record was refused by its table's validator.
///
/// Validators are declared with [`TableSchema::validator`](super::TableSchema::validator); the
/// built-in tables use them to enforce the naming rules of tools, skills and hooks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordError {
    /// A name-like field breaks the naming rules.
    InvalidName {
        /// The field, e.g. `name`, `source`, `tags`.
        field: &'static str,
        /// The offending value.
        value: String,
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// Any other rule of the table.
    Invalid {
        /// The field at fault.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordError::InvalidName {
                field,
                value,
                reason,
            } => write!(f, "invalid {field} {value:?}: {reason}"),
            RecordError::Invalid { field, reason } => write!(f, "invalid {field}: {reason}"),
        }
    }
}

impl std::error::Error for RecordError {}

/// An operation on a store, snapshot or write transaction that could not be carried out.
///
/// Every variant names the table (and key or index) at fault. A write that fails leaves the
/// transaction exactly as it was before the call, so the caller may go on, abort or commit.
///
/// ```
/// use capstore::{Store, Tool, TOOLS, StoreError};
///
/// let store = Store::new();
/// let mut tx = store.begin();
/// tx.insert(&TOOLS, Tool::new("read_file", "Read a file"))?;
/// let err = tx.insert(&TOOLS, Tool::new("read_file", "again")).unwrap_err();
/// assert!(matches!(err, StoreError::DuplicateKey { .. }));
/// assert_eq!(err.to_string(), "table `tools`: key `read_file` already exists");
/// # Ok::<(), StoreError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// `insert` of a key that is already present.
    DuplicateKey {
        /// The table.
        table: Arc<str>,
        /// The primary key.
        key: Arc<str>,
    },
    /// `update` or `delete` of a key that is not present.
    NotFound {
        /// The table.
        table: Arc<str>,
        /// The primary key.
        key: Arc<str>,
    },
    /// A unique index already maps this value to another record.
    UniqueViolation {
        /// The table.
        table: Arc<str>,
        /// The unique index.
        index: Arc<str>,
        /// The indexed value.
        value: Arc<str>,
        /// The record that holds the value already.
        existing_key: Arc<str>,
    },
    /// A record's primary key is empty.
    EmptyKey {
        /// The table.
        table: Arc<str>,
    },
    /// The table's validator refused the record.
    InvalidRecord {
        /// The table.
        table: Arc<str>,
        /// The record's primary key (possibly empty when the key itself is the problem).
        key: Arc<str>,
        /// What is wrong.
        error: RecordError,
    },
    /// No table has this name.
    UnknownTable {
        /// The name asked for.
        table: String,
    },
    /// A table handle was used on a store whose table at that position differs in name or type.
    TableMismatch {
        /// The handle's table name.
        table: String,
        /// What the store holds there.
        reason: String,
    },
    /// The table has no index of this name.
    UnknownIndex {
        /// The table.
        table: Arc<str>,
        /// The name asked for.
        index: String,
    },
    /// A full-text search on a table that has no text index.
    NoTextIndex {
        /// The table.
        table: Arc<str>,
    },
    /// [`WriteTxn::rollback_to`](super::WriteTxn::rollback_to) with a savepoint made by another
    /// transaction.
    ForeignSavepoint,
    /// A row of a table that belongs to another
    /// ([`TableSchema::belongs_to`](super::TableSchema::belongs_to)) written under a key that
    /// table does not hold: a handler for a tool that is not there.
    NoParent {
        /// The table written.
        table: Arc<str>,
        /// The key.
        key: Arc<str>,
        /// The table that must hold the key first.
        parent: Arc<str>,
    },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::DuplicateKey { table, key } => {
                write!(f, "table `{table}`: key `{key}` already exists")
            }
            StoreError::NotFound { table, key } => {
                write!(f, "table `{table}`: key `{key}` not found")
            }
            StoreError::UniqueViolation {
                table,
                index,
                value,
                existing_key,
            } => write!(
                f,
                "table `{table}`: unique index `{index}` already maps `{value}` to `{existing_key}`"
            ),
            StoreError::EmptyKey { table } => write!(f, "table `{table}`: empty primary key"),
            StoreError::InvalidRecord { table, key, error } => {
                write!(f, "table `{table}`: record `{key}`: {error}")
            }
            StoreError::UnknownTable { table } => write!(f, "no table named `{table}`"),
            StoreError::NoParent { table, key, parent } => write!(
                f,
                "table `{table}`: key `{key}` is not in `{parent}`, which its rows belong to"
            ),
            StoreError::TableMismatch { table, reason } => {
                write!(
                    f,
                    "table handle `{table}` does not fit this store: {reason}"
                )
            }
            StoreError::UnknownIndex { table, index } => {
                write!(f, "table `{table}` has no index `{index}`")
            }
            StoreError::NoTextIndex { table } => {
                write!(f, "table `{table}` has no text index")
            }
            StoreError::ForeignSavepoint => {
                write!(f, "the savepoint belongs to another transaction")
            }
        }
    }
}

impl std::error::Error for StoreError {}
