//! Bulk inserts: many records into one table in one step, checked whole before anything is
//! written.
//!
//! Inserting records one at a time pays, per record, for what a batch can do once: the text
//! index builds a one-document segment and merges about log₃ N times per document (so the
//! cost per record grows with the table), and every index entry is updated on its own. A bulk
//! insert first prepares every record against the table and the batch (the same checks, in the
//! same order, as a loop of [`WriteTxn::insert`]), gathering the documents' postings into one
//! new text segment as it goes; only when all of them pass does it write: the rows, each index
//! value once with all its keys, and the text segment. So the result, the change set and any
//! error are those of the loop; only the text index's segments differ (one for the batch), and
//! a failed batch writes nothing.
//!
//! Small batches gain little from it and do not need it: [`WriteTxn::insert`] stays the path
//! of a single write.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use imbl::ordmap::Entry;

use crate::bm25::BulkLoad;

use super::error::StoreError;
use super::index_keys::IndexKeys;
use super::schema::{Record, Row, Table, TableDef};
use super::table::TableState;
use super::txn::WriteTxn;

/// A record of the batch, checked, waiting for the batch to be written.
struct Checked {
    key: Arc<str>,
    row: Row,
    index_keys: Vec<Vec<Arc<str>>>,
}

impl WriteTxn {
    /// Inserts every record of `records`, all or nothing: the same as calling
    /// [`insert`](Self::insert) on each in turn, except that on error none of them is written
    /// (the error is the one the first failing insert would return). Returns the keys in
    /// order. Much faster than a loop for large batches (a catalog, a big MCP server): the
    /// text index gets the whole batch as one segment.
    ///
    /// ```
    /// use capstore::{Store, StoreError, Tool, TOOLS};
    /// let store = Store::new();
    /// let mut tx = store.begin();
    /// let keys = tx.insert_many(&TOOLS, [Tool::new("a", "first"), Tool::new("b", "second")])?;
    /// assert_eq!(keys.len(), 2);
    /// // A batch with a duplicate key writes nothing.
    /// let err = tx.insert_many(&TOOLS, [Tool::new("c", ""), Tool::new("a", "again")]);
    /// assert!(matches!(err, Err(StoreError::DuplicateKey { .. })));
    /// assert_eq!(tx.view().count(&TOOLS)?, 2);
    /// assert_eq!(tx.commit().changes.changes.len(), 2);
    /// # Ok::<(), StoreError>(())
    /// ```
    pub fn insert_many<R: Record>(
        &mut self,
        table: &Table<R>,
        records: impl IntoIterator<Item = R>,
    ) -> Result<Vec<Arc<str>>, StoreError> {
        self.insert_many_at(table, records).map_err(|(_, e)| e)
    }

    /// [`insert_many`](Self::insert_many), the error with the position of the record at fault.
    pub(crate) fn insert_many_at<R: Record>(
        &mut self,
        table: &Table<R>,
        records: impl IntoIterator<Item = R>,
    ) -> Result<Vec<Arc<str>>, (usize, StoreError)> {
        let schema = Arc::clone(&self.working.schema);
        let def = schema.check(table).map_err(|e| (0, e))?;
        let state = &self.working.tables[table.id];
        let records = records.into_iter();
        let (checked, text) = check_batch(def, state, records.map(|r| Arc::new(r) as Row))?;
        let keys: Vec<Arc<str>> = checked.iter().map(|c| Arc::clone(&c.key)).collect();
        for c in &checked {
            self.pending
                .record(table.id, Arc::clone(&c.key), None, Some(Arc::clone(&c.row)));
        }
        self.working.tables[table.id].put_batch(def, checked, text);
        for key in &keys {
            self.remove_followers(table.id, key);
        }
        Ok(keys)
    }
}

/// Prepares every record as [`WriteTxn::insert`] would, with the batch's earlier records
/// counting as written: the validator, the key, unique values, duplicate keys. Gathers the
/// text documents into a [`BulkLoad`] as it goes.
fn check_batch(
    def: &TableDef,
    state: &TableState,
    rows: impl Iterator<Item = Row>,
) -> Result<(Vec<Checked>, Option<BulkLoad>), (usize, StoreError)> {
    let mut text = state.text.as_ref().map(BulkLoad::new);
    let (low, _) = rows.size_hint();
    let mut checked = Vec::with_capacity(low);
    if let Some(load) = &mut text {
        load.reserve(low);
    }
    let mut keys: HashSet<Arc<str>> = HashSet::with_capacity(low);
    // Per index: the batch's values of the unique ones, with their holders.
    let mut unique: Vec<HashMap<Arc<str>, Arc<str>>> = vec![HashMap::new(); def.indexes.len()];
    let any_unique = def.indexes.iter().any(|i| i.unique);
    for (i, row) in rows.enumerate() {
        let batch = any_unique.then_some(&unique[..]);
        let prepared = state.prepare_among(def, row, batch).map_err(|e| (i, e))?;
        if state.rows.contains_key(&prepared.key) || !keys.insert(Arc::clone(&prepared.key)) {
            return Err((
                i,
                StoreError::DuplicateKey {
                    table: def.name.clone(),
                    key: prepared.key,
                },
            ));
        }
        for ((index, values), held) in def
            .indexes
            .iter()
            .zip(&prepared.index_keys)
            .zip(&mut unique)
        {
            if index.unique {
                for value in values {
                    held.insert(Arc::clone(value), Arc::clone(&prepared.key));
                }
            }
        }
        if let (Some(load), Some(doc)) = (&mut text, &prepared.document) {
            load.add(
                Arc::clone(&prepared.key),
                doc,
                Some(Arc::clone(&prepared.row)),
            );
        }
        checked.push(Checked {
            key: prepared.key,
            row: prepared.row,
            index_keys: prepared.index_keys,
        });
    }
    Ok((checked, text))
}

impl TableState {
    /// Writes a checked batch of new records: the rows, each index value once with all the
    /// batch's keys that carry it, and the text segment.
    fn put_batch(&mut self, def: &TableDef, batch: Vec<Checked>, text: Option<BulkLoad>) {
        // Per index: each value with the batch's keys that carry it, grouped by hashing (the
        // keys of one value are then sorted, a few at a time, rather than every pair at once).
        let mut by_index: Vec<HashMap<Arc<str>, Vec<Arc<str>>>> =
            vec![HashMap::new(); def.indexes.len()];
        for Checked {
            key,
            row,
            index_keys,
        } in batch
        {
            for (groups, values) in by_index.iter_mut().zip(index_keys) {
                for value in values {
                    groups.entry(value).or_default().push(Arc::clone(&key));
                }
            }
            self.rows.insert(key, row);
        }
        for (map, groups) in self.indexes.iter_mut().zip(by_index) {
            for (value, mut keys) in groups {
                keys.sort_unstable();
                match map.entry(value) {
                    Entry::Occupied(mut held) => {
                        for key in keys {
                            held.get_mut().insert(key);
                        }
                    }
                    Entry::Vacant(slot) => {
                        slot.insert(IndexKeys::from_sorted(keys));
                    }
                }
            }
        }
        if let (Some(index), Some(load)) = (&mut self.text, text) {
            load.finish(index);
        }
    }
}
