//! One table's state inside a snapshot: the primary map, one map per secondary index and the
//! optional BM25 index, all persistent so that cloning a table is O(1) and shares structure.

use std::sync::Arc;

use imbl::OrdMap;
use imbl::ordmap::Entry;

use crate::bm25::{Bm25Index, Document};

use super::error::StoreError;
use super::index_keys::{BatchKeys, BatchValues, IndexKeys};
use super::schema::{Row, TableDef};

/// Secondary index: indexed value → primary keys of the records that carry it.
pub(crate) type IndexMap = OrdMap<Arc<str>, IndexKeys>;

#[derive(Clone)]
pub(crate) struct TableState {
    pub rows: OrdMap<Arc<str>, Row>,
    pub indexes: Vec<IndexMap>,
    pub text: Option<Bm25Index>,
    /// The version of the last commit that changed the table (0: none yet).
    pub version: u64,
}

/// A record ready to be written: its key and index keys computed, every check passed.
pub(crate) struct Prepared {
    pub key: Arc<str>,
    pub row: Row,
    pub index_keys: Vec<Vec<Arc<str>>>,
    /// The record's text document, when the table has a text index.
    pub document: Option<Document>,
}

impl TableState {
    pub fn new(def: &TableDef) -> Self {
        // The text index's config was validated when the table was declared, so creating the
        // index cannot fail; were it to, the table would simply have no text index (searches
        // report NoTextIndex) rather than the store panicking.
        let text = def
            .text
            .as_ref()
            .and_then(|text| Bm25Index::new(text.config.clone()).ok());
        TableState {
            rows: OrdMap::new(),
            indexes: vec![OrdMap::new(); def.indexes.len()],
            text,
            version: 0,
        }
    }

    /// Computes the key, index keys and text document of `row`, runs the validator and the
    /// unique checks. Reads only: a refusal leaves the table untouched.
    pub fn prepare(&self, def: &TableDef, row: Row) -> Result<Prepared, StoreError> {
        let mut prepared = self.prepare_among(def, row, None)?;
        // Every user callback (key, indexes, text) runs here, before anything is written, so
        // that one that panics leaves the table untouched.
        prepared.document = def
            .text
            .as_ref()
            .map(|text| text.document_of(&prepared.row));
        Ok(prepared)
    }

    /// [`prepare`](Self::prepare) but for the text document (left `None`: a bulk insert makes
    /// its documents apart), for a record written after a batch of others not yet in the
    /// table: `batch` gives, per index, the values the batch holds and their holders, which
    /// the unique checks see as if they were in the table.
    pub fn prepare_among(
        &self,
        def: &TableDef,
        row: Row,
        batch: Option<&[BatchValues]>,
    ) -> Result<Prepared, StoreError> {
        let key: Arc<str> = Arc::from((def.primary)(&*row));
        // The validator runs first: it says which field is wrong, where an empty key alone
        // could not.
        if let Some(validate) = &def.validator {
            validate(&*row).map_err(|error| StoreError::InvalidRecord {
                table: def.name.clone(),
                key: key.clone(),
                error,
            })?;
        }
        if key.is_empty() {
            return Err(StoreError::EmptyKey {
                table: def.name.clone(),
            });
        }
        let index_keys: Vec<Vec<Arc<str>>> =
            def.indexes.iter().map(|i| i.keys_of(&row, &key)).collect();
        for (i, ((index, map), values)) in def
            .indexes
            .iter()
            .zip(&self.indexes)
            .zip(&index_keys)
            .enumerate()
        {
            if !index.unique {
                continue;
            }
            for value in values {
                let holder = map
                    .get(value)
                    .and_then(|keys| keys.iter().find(|k| **k != key));
                // The first holder in key order, as if the batch's were in the table.
                let in_batch = batch
                    .and_then(|batch| batch.get(i)?.get(value))
                    .and_then(BatchKeys::first)
                    .filter(|k| **k != key);
                let holder = match (holder, in_batch) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                if let Some(existing) = holder {
                    return Err(StoreError::UniqueViolation {
                        table: def.name.clone(),
                        index: index.name.clone(),
                        value: value.clone(),
                        existing_key: existing.clone(),
                    });
                }
            }
        }
        Ok(Prepared {
            key,
            row,
            index_keys,
            document: None,
        })
    }

    /// Writes a prepared record, replacing any record under the same key; returns the old one.
    pub fn put(&mut self, def: &TableDef, prepared: Prepared) -> Option<Row> {
        let Prepared {
            key,
            row,
            index_keys,
            document,
        } = prepared;
        let old = self.rows.insert(key.clone(), row.clone());
        if let Some(old) = &old {
            self.unindex(def, &key, old);
        }
        for (map, values) in self.indexes.iter_mut().zip(index_keys) {
            for value in values {
                match map.entry(value) {
                    Entry::Occupied(mut keys) => keys.get_mut().insert(key.clone()),
                    Entry::Vacant(slot) => {
                        slot.insert(IndexKeys::One(key.clone()));
                    }
                }
            }
        }
        if let (Some(text), Some(doc)) = (&mut self.text, document) {
            // The row goes with its document: a search hit leads to it without a look-up. This
            // and `remove` are the table's only writes, and they write rows and text together,
            // so a hit's row is always the one `rows` holds under its key.
            text.insert_attached(&key, &doc, Some(row));
        }
        old
    }

    /// After a transaction, lets this table's text index merge into one segment if the
    /// transaction was a bulk load of a small table (see [`Bm25Index::settle_bulk_load`]).
    pub fn settle_bulk_load(&mut self, base: &TableState) {
        if let (Some(text), Some(before)) = (&mut self.text, &base.text) {
            text.settle_bulk_load(before.len());
        }
    }

    /// Removes the record under `key`; returns it, or `None` when there was none.
    pub fn remove(&mut self, def: &TableDef, key: &str) -> Option<Row> {
        let (stored_key, old) = self.rows.remove_with_key(key)?;
        self.unindex(def, &stored_key, &old);
        if let Some(text) = &mut self.text {
            text.remove(&stored_key);
        }
        Some(old)
    }

    fn unindex(&mut self, def: &TableDef, key: &Arc<str>, row: &Row) {
        for (index, map) in def.indexes.iter().zip(self.indexes.iter_mut()) {
            for value in index.keys_of(row, key) {
                let now_empty = match map.get_mut(&value) {
                    Some(keys) => keys.remove(key),
                    None => false,
                };
                if now_empty {
                    map.remove(&value);
                }
            }
        }
    }
}
