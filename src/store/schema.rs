//! Table declarations: a primary key, secondary indexes, an optional validator and an optional
//! full-text (BM25) index, all validated when the table is declared.
//!
//! A [`TableSchema<R>`] is typed by its record type `R`; once declared, the store keeps a
//! type-erased [`TableDef`] so that one snapshot can hold tables of many record types, and hands
//! back a typed [`Table<R>`] handle through which every read and write goes.

use std::any::{Any, TypeId};
use std::fmt;
use std::marker::PhantomData;
use std::mem;
use std::sync::Arc;

use crate::bm25::{Document, IndexConfig, Tokenizer, TokenizerConfig};

use super::error::{RecordError, SchemaError};

/// A stored record, type-erased. Records are immutable once stored: older snapshots still read
/// them, so the store only ever replaces a record, never mutates it.
pub(crate) type Row = Arc<dyn Any + Send + Sync>;

/// What a record type must be to live in a table: shareable across threads and owned.
///
/// Blanket-implemented; you never implement it by hand.
pub trait Record: Any + Send + Sync + 'static {}
impl<T: Any + Send + Sync + 'static> Record for T {}

/// The reserved name of the primary key, usable wherever an index name is asked for.
pub const PRIMARY_INDEX: &str = "id";

type KeyFn<R> = Arc<dyn Fn(&R) -> String + Send + Sync>;
type KeysFn<R> = Arc<dyn Fn(&R) -> Vec<String> + Send + Sync>;
type ValidateFn<R> = Arc<dyn Fn(&R) -> Result<(), RecordError> + Send + Sync>;
type FieldsFn<R> = Arc<dyn Fn(&R, &mut TextFields<'_>) + Send + Sync>;

/// The declaration of one table holding records of type `R`.
///
/// ```
/// use capstore::store::{IndexSchema, StoreBuilder, TableSchema};
///
/// struct Server { name: String, transport: String }
///
/// let mut builder = StoreBuilder::new();
/// let servers = builder.table(
///     TableSchema::new("mcp_servers", |s: &Server| s.name.clone())
///         .index(IndexSchema::single("transport", |s: &Server| Some(s.transport.clone()))),
/// )?;
/// let store = builder.build();
/// store.write(|tx| tx.insert(&servers, Server { name: "github".into(), transport: "stdio".into() }))?;
/// assert_eq!(store.snapshot().by_index(&servers, "transport", "stdio")?.count(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TableSchema<R> {
    name: String,
    primary: KeyFn<R>,
    indexes: Vec<IndexSchema<R>>,
    validator: Option<ValidateFn<R>>,
    text: Option<TextSchema<R>>,
    /// The parent's handle (its position and the schema it came from), and whether a write of
    /// the parent row removes this table's row too, or only its removal.
    follows: Option<(usize, u64, FollowOn)>,
}

/// When a following table's row goes with its parent row ([`TableSchema::follows`],
/// [`TableSchema::follows_removals`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FollowOn {
    /// Any write of the parent row (insert, replace, delete): the row was made from it.
    Writes,
    /// Only the parent row's deletion: the row is about the parent, whatever its contents.
    Removals,
    /// Only the parent row's deletion, and a row may only be written under a key the parent
    /// holds ([`TableSchema::belongs_to`]).
    Belongs,
}

impl<R: Record> TableSchema<R> {
    /// Declares a table named `name` whose primary key is extracted by `primary`.
    ///
    /// Table names are ASCII letters, digits, `_` and `-`. The primary key must not be empty.
    ///
    /// ```
    /// use capstore::store::TableSchema;
    /// let schema = TableSchema::new("notes", |n: &(String, String)| n.0.clone());
    /// # let _ = schema;
    /// ```
    pub fn new(
        name: impl Into<String>,
        primary: impl Fn(&R) -> String + Send + Sync + 'static,
    ) -> Self {
        TableSchema {
            name: name.into(),
            primary: Arc::new(primary),
            indexes: Vec::new(),
            validator: None,
            text: None,
            follows: None,
        }
    }

    /// Adds a secondary index.
    ///
    /// ```
    /// use capstore::store::{IndexSchema, TableSchema};
    /// let schema = TableSchema::new("notes", |n: &(String, String)| n.0.clone())
    ///     .index(IndexSchema::single("body", |n: &(String, String)| Some(n.1.clone())));
    /// # let _ = schema;
    /// ```
    pub fn index(mut self, index: IndexSchema<R>) -> Self {
        self.indexes.push(index);
        self
    }

    /// Sets a validator run on every record before it is written; a refusal becomes
    /// [`StoreError::InvalidRecord`](super::StoreError::InvalidRecord) and nothing is written.
    ///
    /// ```
    /// use capstore::store::{RecordError, TableSchema};
    /// let schema = TableSchema::new("notes", |n: &String| n.clone()).validator(|n: &String| {
    ///     if n.len() > 10 {
    ///         return Err(RecordError::Invalid { field: "note", reason: "too long".into() });
    ///     }
    ///     Ok(())
    /// });
    /// # let _ = schema;
    /// ```
    pub fn validator(
        mut self,
        validate: impl Fn(&R) -> Result<(), RecordError> + Send + Sync + 'static,
    ) -> Self {
        self.validator = Some(Arc::new(validate));
        self
    }

    /// Gives the table a BM25 full-text index, maintained by every write in the same commit.
    ///
    /// ```
    /// use capstore::store::{TableSchema, TextSchema};
    /// let schema = TableSchema::new("notes", |n: &String| n.clone())
    ///     .text_index(TextSchema::new(|n: &String, doc| doc.add("body", n)));
    /// # let _ = schema;
    /// ```
    pub fn text_index(mut self, text: TextSchema<R>) -> Self {
        self.text = Some(text);
        self
    }

    /// Makes each row of this table follow the row of `parent` with the same primary key: a
    /// write transaction that inserts, replaces or deletes that parent row deletes this table's
    /// row in the same step (a write to this table afterwards, in the same transaction, stands).
    /// For data derived from a parent row, such as its embedding vector: a snapshot never shows
    /// it beside a parent row it was not made for. `parent` must be declared first.
    ///
    /// ```
    /// use capstore::store::{StoreBuilder, TableSchema};
    /// let mut builder = StoreBuilder::new();
    /// let notes = builder.table(TableSchema::new("notes", |n: &(String, String)| n.0.clone()))?;
    /// let lengths = builder.table(TableSchema::new("lengths", |l: &(String, usize)| l.0.clone()).follows(&notes))?;
    /// let store = builder.build();
    /// store.write(|tx| {
    ///     tx.insert(&notes, ("a".into(), "hello".into()))?;
    ///     tx.insert(&lengths, ("a".into(), 5))
    /// })?;
    /// store.write(|tx| tx.upsert(&notes, ("a".into(), "hello, world".into())))?;
    /// assert!(store.snapshot().get(&lengths, "a")?.is_none()); // made for the old note: gone
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn follows<P: Record>(mut self, parent: &super::Table<P>) -> Self {
        self.follows = Some((parent.id, parent.schema, FollowOn::Writes));
        self
    }

    /// Like [`follows`](Self::follows), but only a deletion of the parent row deletes this
    /// table's row; inserting or replacing the parent row leaves it. For data about the parent
    /// that outlives a new version of it, such as counts of its use.
    ///
    /// ```
    /// use capstore::store::{StoreBuilder, TableSchema};
    /// let mut builder = StoreBuilder::new();
    /// let notes = builder.table(TableSchema::new("notes", |n: &(String, String)| n.0.clone()))?;
    /// let reads = builder.table(TableSchema::new("reads", |r: &(String, u32)| r.0.clone()).follows_removals(&notes))?;
    /// let store = builder.build();
    /// store.write(|tx| {
    ///     tx.insert(&notes, ("a".into(), "hello".into()))?;
    ///     tx.insert(&reads, ("a".into(), 3))
    /// })?;
    /// store.write(|tx| tx.upsert(&notes, ("a".into(), "hello, world".into())))?;
    /// assert!(store.snapshot().get(&reads, "a")?.is_some()); // a new text: still read 3 times
    /// store.write(|tx| tx.delete(&notes, "a").map(drop))?;
    /// assert!(store.snapshot().get(&reads, "a")?.is_none()); // the note is gone: so are its reads
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn follows_removals<P: Record>(mut self, parent: &super::Table<P>) -> Self {
        self.follows = Some((parent.id, parent.schema, FollowOn::Removals));
        self
    }

    /// Makes each row of this table belong to the row of `parent` with the same key: a row
    /// may only be written under a key `parent` holds at that point of the transaction
    /// ([`StoreError::NoParent`](super::StoreError::NoParent) otherwise, the transaction's
    /// earlier writes kept), and deleting the parent row deletes it in the same step (replacing
    /// the parent row leaves it). For what only makes sense with its parent: a tool's handler.
    ///
    /// ```
    /// use capstore::store::{StoreBuilder, StoreError, TableSchema};
    /// let mut builder = StoreBuilder::new();
    /// let notes = builder.table(TableSchema::new("notes", |n: &(String, String)| n.0.clone()))?;
    /// let pins = builder.table(TableSchema::new("pins", |p: &String| p.clone()).belongs_to(&notes))?;
    /// let store = builder.build();
    /// let err = store.write(|tx| tx.insert(&pins, "a".to_string())).unwrap_err();
    /// assert!(matches!(err, StoreError::NoParent { .. }));
    /// store.write(|tx| {
    ///     tx.insert(&notes, ("a".into(), "hello".into()))?;
    ///     tx.insert(&pins, "a".to_string())
    /// })?;
    /// store.write(|tx| tx.delete(&notes, "a").map(drop))?;
    /// assert!(store.snapshot().get(&pins, "a")?.is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn belongs_to<P: Record>(mut self, parent: &super::Table<P>) -> Self {
        self.follows = Some((parent.id, parent.schema, FollowOn::Belongs));
        self
    }

    /// The table's name.
    ///
    /// ```
    /// use capstore::store::TableSchema;
    /// assert_eq!(TableSchema::new("notes", |n: &String| n.clone()).name(), "notes");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The parent's handle, as [`Self::follows`] was given it: its position and schema id.
    pub(crate) fn parent(&self) -> Option<(usize, u64)> {
        self.follows.map(|(id, schema, _)| (id, schema))
    }

    /// Checks names, index uniqueness and the text-index configuration, then erases the type.
    pub(crate) fn into_def(self) -> Result<TableDef, SchemaError> {
        validate_name(&self.name).map_err(|reason| SchemaError::InvalidName {
            table: self.name.clone(),
            index: None,
            reason,
        })?;
        let mut seen: Vec<&str> = vec![PRIMARY_INDEX];
        for index in &self.indexes {
            validate_name(&index.name).map_err(|reason| SchemaError::InvalidName {
                table: self.name.clone(),
                index: Some(index.name.clone()),
                reason,
            })?;
            if seen.contains(&index.name.as_str()) {
                return Err(SchemaError::DuplicateIndex {
                    table: self.name.clone(),
                    index: index.name.clone(),
                });
            }
            seen.push(&index.name);
        }
        if let Some(text) = &self.text {
            text.config
                .validate()
                .map_err(|e| SchemaError::InvalidTextIndex {
                    table: self.name.clone(),
                    reason: e.to_string(),
                })?;
        }

        let primary = self.primary;
        let indexes = self
            .indexes
            .into_iter()
            .map(|index| {
                let extract = index.extract;
                IndexDef {
                    name: Arc::from(index.name.as_str()),
                    unique: index.unique,
                    keys: Box::new(move |row: &(dyn Any + Send + Sync)| {
                        row.downcast_ref::<R>()
                            .map(|r| extract(r))
                            .unwrap_or_default()
                    }),
                }
            })
            .collect();
        let validator = self.validator.map(|validate| -> ErasedValidate {
            Box::new(
                move |row: &(dyn Any + Send + Sync)| match row.downcast_ref::<R>() {
                    Some(r) => validate(r),
                    None => Ok(()),
                },
            )
        });
        let text = self.text.map(|text| {
            let fields = text.fields;
            TextDef {
                tokenizer: Tokenizer::new(text.tokenizer),
                config: text.config,
                document: Box::new(
                    move |row: &(dyn Any + Send + Sync), builder: &mut TextFields<'_>| {
                        if let Some(r) = row.downcast_ref::<R>() {
                            fields(r, builder);
                        }
                    },
                ),
            }
        });
        Ok(TableDef {
            name: Arc::from(self.name.as_str()),
            type_id: TypeId::of::<R>(),
            type_name: std::any::type_name::<R>(),
            primary: Box::new(move |row: &(dyn Any + Send + Sync)| {
                row.downcast_ref::<R>()
                    .map(|r| primary(r))
                    .unwrap_or_default()
            }),
            indexes,
            validator,
            text,
            follows: self.follows.map(|(id, _, on)| (id, on)),
        })
    }
}

impl<R> fmt::Debug for TableSchema<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TableSchema")
            .field("name", &self.name)
            .field("indexes", &self.indexes)
            .field("validator", &self.validator.is_some())
            .field("text_index", &self.text.is_some())
            .finish()
    }
}

/// Table and index names: short ASCII identifiers, so that they read well in errors and logs.
fn validate_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("must not be empty");
    }
    if name.len() > 64 {
        return Err("must be at most 64 bytes");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err("may hold only ASCII letters, digits, `_` and `-`");
    }
    Ok(())
}

/// A secondary index: a name, an extractor giving zero, one or many keys per record, and whether
/// a key may belong to one record only.
///
/// ```
/// use capstore::store::IndexSchema;
/// struct Tool { name: String, tags: Vec<String> }
/// let by_tag = IndexSchema::multi("tags", |t: &Tool| t.tags.clone());
/// let by_name = IndexSchema::single("name", |t: &Tool| Some(t.name.clone())).unique();
/// assert!(by_name.is_unique() && !by_tag.is_unique());
/// ```
pub struct IndexSchema<R> {
    name: String,
    unique: bool,
    extract: KeysFn<R>,
}

impl<R: Record> IndexSchema<R> {
    /// An index with at most one key per record (`None`: the record is not in the index).
    ///
    /// ```
    /// use capstore::store::IndexSchema;
    /// let idx = IndexSchema::single("source", |t: &(String, Option<String>)| t.1.clone());
    /// assert_eq!(idx.name(), "source");
    /// ```
    pub fn single(
        name: impl Into<String>,
        extract: impl Fn(&R) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        IndexSchema {
            name: name.into(),
            unique: false,
            extract: Arc::new(move |r| extract(r).into_iter().collect()),
        }
    }

    /// An index with any number of keys per record (tags, for example). Repeated keys count once.
    ///
    /// ```
    /// use capstore::store::IndexSchema;
    /// let idx = IndexSchema::multi("tags", |t: &Vec<String>| t.clone());
    /// assert_eq!(idx.name(), "tags");
    /// ```
    pub fn multi(
        name: impl Into<String>,
        extract: impl Fn(&R) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        IndexSchema {
            name: name.into(),
            unique: false,
            extract: Arc::new(extract),
        }
    }
}

impl<R> IndexSchema<R> {
    /// Makes the index unique: a key may map to one record only, and a write that breaks this
    /// fails with [`StoreError::UniqueViolation`](super::StoreError::UniqueViolation).
    ///
    /// ```
    /// use capstore::store::IndexSchema;
    /// assert!(IndexSchema::single("n", |s: &String| Some(s.clone())).unique().is_unique());
    /// ```
    pub fn unique(mut self) -> Self {
        self.unique = true;
        self
    }

    /// Whether the index is unique.
    ///
    /// ```
    /// use capstore::store::IndexSchema;
    /// assert!(!IndexSchema::multi("t", |s: &String| vec![s.clone()]).is_unique());
    /// ```
    pub fn is_unique(&self) -> bool {
        self.unique
    }

    /// The index's name.
    ///
    /// ```
    /// use capstore::store::IndexSchema;
    /// assert_eq!(IndexSchema::multi("t", |s: &String| vec![s.clone()]).name(), "t");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl<R> fmt::Debug for IndexSchema<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IndexSchema")
            .field("name", &self.name)
            .field("unique", &self.unique)
            .finish()
    }
}

/// A table's full-text index: which text of a record goes into which field, how text becomes
/// terms, and the BM25 parameters.
///
/// ```
/// use capstore::bm25::{IndexConfig, TokenizerConfig};
/// use capstore::store::TextSchema;
/// struct Doc { title: String, body: String }
/// let mut config = IndexConfig::default();
/// config.field_weights.insert("title".into(), 2.0);
/// let text = TextSchema::new(|d: &Doc, fields| {
///     fields.add("title", &d.title);
///     fields.add("body", &d.body);
/// })
/// .config(config)
/// .tokenizer(TokenizerConfig::default());
/// # let _ = text;
/// ```
pub struct TextSchema<R> {
    fields: FieldsFn<R>,
    tokenizer: TokenizerConfig,
    config: IndexConfig,
}

impl<R: Record> TextSchema<R> {
    /// A text index whose documents are filled by `fields`, with the default tokenizer and BM25
    /// parameters (k1 = 1.2, b = 0.75, every field weighing 1).
    ///
    /// ```
    /// use capstore::store::TextSchema;
    /// let text = TextSchema::new(|s: &String, fields| fields.add("body", s));
    /// # let _ = text;
    /// ```
    pub fn new(fields: impl Fn(&R, &mut TextFields<'_>) + Send + Sync + 'static) -> Self {
        TextSchema {
            fields: Arc::new(fields),
            tokenizer: TokenizerConfig::default(),
            config: IndexConfig::default(),
        }
    }
}

impl<R> TextSchema<R> {
    /// Sets the BM25 parameters and field weights.
    ///
    /// ```
    /// use capstore::bm25::IndexConfig;
    /// use capstore::store::TextSchema;
    /// let text = TextSchema::new(|s: &String, f| f.add("body", s)).config(IndexConfig::default());
    /// # let _ = text;
    /// ```
    pub fn config(mut self, config: IndexConfig) -> Self {
        self.config = config;
        self
    }

    /// Sets how text becomes terms; the same tokenizer serves documents and queries.
    ///
    /// ```
    /// use capstore::bm25::TokenizerConfig;
    /// use capstore::store::TextSchema;
    /// let text = TextSchema::new(|s: &String, f| f.add("body", s))
    ///     .tokenizer(TokenizerConfig { stemming: true, ..TokenizerConfig::default() });
    /// # let _ = text;
    /// ```
    pub fn tokenizer(mut self, tokenizer: TokenizerConfig) -> Self {
        self.tokenizer = tokenizer;
        self
    }
}

/// The fields of one record's text document, filled by a [`TextSchema`] extractor.
///
/// Text added to a field is tokenized with the table's tokenizer; adding to the same field twice
/// appends.
///
/// ```
/// use capstore::bm25::{Tokenizer, TokenizerConfig};
/// use capstore::store::TextFields;
/// let tokenizer = Tokenizer::new(TokenizerConfig::default());
/// let mut fields = TextFields::new(&tokenizer);
/// fields.add("name", "get_weather");
/// fields.add("name", "forecast");
/// assert_eq!(fields.tokens("name"), Some(vec!["get", "weather", "forecast"]));
/// ```
pub struct TextFields<'t> {
    tokenizer: &'t Tokenizer,
    document: Document,
}

impl<'t> TextFields<'t> {
    /// An empty document that tokenizes with `tokenizer`.
    ///
    /// ```
    /// use capstore::bm25::Tokenizer;
    /// use capstore::store::TextFields;
    /// let tokenizer = Tokenizer::default();
    /// assert_eq!(TextFields::new(&tokenizer).tokens("name"), None);
    /// ```
    pub fn new(tokenizer: &'t Tokenizer) -> Self {
        TextFields {
            tokenizer,
            document: Document::new(),
        }
    }

    /// Tokenizes `text` and appends its terms to `field`.
    ///
    /// ```
    /// use capstore::bm25::Tokenizer;
    /// use capstore::store::TextFields;
    /// let tokenizer = Tokenizer::default();
    /// let mut fields = TextFields::new(&tokenizer);
    /// fields.add("description", "Search the web");
    /// assert_eq!(fields.tokens("description").map(|t| t.len()), Some(2));
    /// ```
    pub fn add(&mut self, field: &str, text: &str) {
        let doc = &mut self.document;
        let field = match doc.field_named(field) {
            Some(f) => f,
            None => doc.add_field(field),
        };
        let tokenizer = self.tokenizer;
        doc.extend_field(field, |buf, ends| tokenizer.tokenize_flat(text, buf, ends));
    }

    /// The terms gathered so far in `field`.
    ///
    /// ```
    /// use capstore::bm25::Tokenizer;
    /// use capstore::store::TextFields;
    /// let tokenizer = Tokenizer::default();
    /// let mut fields = TextFields::new(&tokenizer);
    /// fields.add("tags", "web");
    /// assert_eq!(fields.tokens("tags"), Some(vec!["web"]));
    /// ```
    pub fn tokens(&self, field: &str) -> Option<Vec<&str>> {
        self.document
            .fields()
            .find(|(name, _)| *name == field)
            .map(|(_, terms)| terms.collect())
    }

    fn into_document(self) -> Document {
        self.document
    }
}

/// A typed handle to a table of records of type `R`, cheap to copy.
///
/// The built-in tables have constant handles ([`TOOLS`](crate::TOOLS), [`SKILLS`](crate::SKILLS),
/// [`HOOKS`](crate::HOOKS)); user tables get theirs from
/// [`StoreBuilder::table`](super::StoreBuilder::table) or [`Store::table`](super::Store::table).
/// A handle used on a store it does not belong to gives
/// [`StoreError::TableMismatch`](super::StoreError::TableMismatch), never a wrong answer.
///
/// ```
/// use capstore::{Store, TOOLS};
/// let store = Store::new();
/// assert_eq!(store.snapshot().count(&TOOLS)?, 0);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub struct Table<R> {
    pub(crate) id: usize,
    /// The schema the handle came from; [`BUILTIN_SCHEMA`] for the built-in tables, which every
    /// store made by `Store::new` or `Store::builder` has at the same positions.
    pub(crate) schema: u64,
    _record: PhantomData<fn() -> R>,
}

/// The schema id carried by the constant handles of the built-in tables.
pub(crate) const BUILTIN_SCHEMA: u64 = 0;

impl<R> Table<R> {
    pub(crate) const fn new(id: usize, schema: u64) -> Self {
        Table {
            id,
            schema,
            _record: PhantomData,
        }
    }
}

impl<R> Clone for Table<R> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<R> Copy for Table<R> {}

impl<R> fmt::Debug for Table<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Table")
            .field("id", &self.id)
            .field("record", &std::any::type_name::<R>())
            .finish()
    }
}

/// A typed handle to one secondary index of a table: the table's handle and the index's name,
/// checked by the compiler where a string would be checked at run time. The built-in indexes
/// have constants ([`TOOLS_BY_SOURCE`](crate::TOOLS_BY_SOURCE), ...); for a table of your own,
/// make one with [`Index::new`] beside its [`Table`]. Read with
/// [`Snapshot::by`](super::Snapshot::by) and [`Snapshot::count_by`](super::Snapshot::count_by).
///
/// ```
/// use capstore::{Store, Tool, TOOLS, TOOLS_BY_SOURCE};
/// let store = Store::new();
/// store.write(|tx| tx.insert(&TOOLS, Tool::new("search", "Search code").with_source("github")))?;
/// let snap = store.snapshot();
/// let keys: Vec<&str> = snap.by(&TOOLS_BY_SOURCE, "github")?.keys().map(|k| &**k).collect();
/// assert_eq!(keys, ["github/search"]);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub struct Index<R> {
    pub(crate) table: Table<R>,
    pub(crate) name: &'static str,
}

impl<R> Index<R> {
    /// The index `name` of `table` (checked against the store's schema when read: a name the
    /// table does not declare is [`StoreError::UnknownIndex`](super::StoreError::UnknownIndex)).
    ///
    /// ```
    /// use capstore::store::{Index, IndexSchema, StoreBuilder, TableSchema};
    /// let mut builder = StoreBuilder::new();
    /// let notes = builder.table(TableSchema::new("notes", |n: &(String, String)| n.0.clone())
    ///     .index(IndexSchema::single("author", |n: &(String, String)| Some(n.1.clone()))))?;
    /// let by_author = Index::new(notes, "author");
    /// let store = builder.build();
    /// store.write(|tx| tx.insert(&notes, ("n1".into(), "ana".into())))?;
    /// assert_eq!(store.snapshot().count_by(&by_author, "ana")?, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub const fn new(table: Table<R>, name: &'static str) -> Self {
        Index { table, name }
    }

    /// The table it indexes.
    ///
    /// ```
    /// assert_eq!(capstore::TOOLS_BY_TAG.name(), "tags");
    /// # let _ = capstore::TOOLS_BY_TAG.table();
    /// ```
    pub const fn table(&self) -> Table<R> {
        self.table
    }

    /// Its name in the table's schema.
    ///
    /// ```
    /// assert_eq!(capstore::SKILLS_BY_CATEGORY.name(), "category");
    /// ```
    pub const fn name(&self) -> &'static str {
        self.name
    }
}

impl<R> Clone for Index<R> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<R> Copy for Index<R> {}

impl<R> fmt::Debug for Index<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Index")
            .field("table", &self.table)
            .field("name", &self.name)
            .finish()
    }
}

type ErasedKey = Box<dyn Fn(&(dyn Any + Send + Sync)) -> String + Send + Sync>;
type ErasedKeys = Box<dyn Fn(&(dyn Any + Send + Sync)) -> Vec<String> + Send + Sync>;
type ErasedValidate =
    Box<dyn Fn(&(dyn Any + Send + Sync)) -> Result<(), RecordError> + Send + Sync>;
type ErasedDocument = Box<dyn Fn(&(dyn Any + Send + Sync), &mut TextFields<'_>) + Send + Sync>;

/// A declared table with its record type erased, as the store keeps it.
pub(crate) struct TableDef {
    pub name: Arc<str>,
    pub type_id: TypeId,
    pub type_name: &'static str,
    pub primary: ErasedKey,
    pub indexes: Vec<IndexDef>,
    pub validator: Option<ErasedValidate>,
    pub text: Option<TextDef>,
    /// The table whose rows this table's rows follow ([`TableSchema::follows`]), and on what.
    pub follows: Option<(usize, FollowOn)>,
}

impl TableDef {
    /// The position of an index by name; `None` stands for the primary key. An unknown name is
    /// [`StoreError::UnknownIndex`](super::StoreError::UnknownIndex).
    pub fn index_position(&self, index: &str) -> Result<Option<usize>, super::StoreError> {
        if index == PRIMARY_INDEX {
            return Ok(None);
        }
        self.indexes
            .iter()
            .position(|i| &*i.name == index)
            .map(Some)
            .ok_or_else(|| super::StoreError::UnknownIndex {
                table: self.name.clone(),
                index: index.to_string(),
            })
    }
}

pub(crate) struct IndexDef {
    pub name: Arc<str>,
    pub unique: bool,
    pub keys: ErasedKeys,
}

impl IndexDef {
    /// The record's keys in this index, sorted and without repeats. A value equal to the
    /// record's primary key `primary` (a tool's name when it has no source) shares its text
    /// rather than holding a copy.
    pub fn keys_of(&self, row: &Row, primary: &Arc<str>) -> Vec<Arc<str>> {
        let mut keys = (self.keys)(&**row);
        keys.sort_unstable();
        keys.dedup();
        keys.into_iter()
            .map(|k| {
                if *k == **primary {
                    primary.clone()
                } else {
                    Arc::from(k)
                }
            })
            .collect()
    }
}

pub(crate) struct TextDef {
    pub tokenizer: Tokenizer,
    pub config: IndexConfig,
    pub document: ErasedDocument,
}

impl TextDef {
    /// The text document of a record of the table.
    pub fn document_of(&self, row: &Row) -> Document {
        let mut document = Document::new();
        self.fill_document(row, &mut document);
        document
    }

    /// [`document_of`](Self::document_of) into `document`, cleared first, its buffers kept: a
    /// bulk insert makes one document after another in the same buffers, where a new document
    /// each time cost a tenth of the text side in allocating and growing them.
    pub fn fill_document(&self, row: &Row, document: &mut Document) {
        document.clear();
        let mut fields = TextFields {
            tokenizer: &self.tokenizer,
            document: mem::take(document),
        };
        (self.document)(&**row, &mut fields);
        *document = fields.into_document();
    }
}
