//! Bulk inserts: many records into one table in one step, checked whole before anything is
//! written.
//!
//! Inserting records one at a time pays, per record, for what a batch can do once: the text
//! index builds a one-document segment and merges about log₃ N times per document (so the
//! cost per record grows with the table), and every index entry is updated on its own. A bulk
//! insert first prepares every record against the table and the batch (the same checks, in the
//! same order, as a loop of [`WriteTxn::insert`]), gathering as it goes the documents'
//! postings into one new text segment and each index value with the keys that carry it; only
//! when all of them pass does it write: the rows, each index value once with all its keys, in
//! value order, and the text segment. So the result, the change set and any error are those of
//! the loop; only the text index's segments differ (one for the batch), and a failed batch
//! writes nothing.
//!
//! Memory is the other cost at registry scale: a batch holds each distinct index value once
//! (a copy is dropped as soon as it is met again), and its postings take 4 bytes each until the
//! segment is laid out. A million-tool catalog moved into a store ([`Catalog::move_into`])
//! peaks at ~2.4 GB resident, for a store whose live heap is ~1.7 GB (BENCHMARKS.md, "Registry
//! scale").
//!
//! [`Catalog::move_into`]: crate::catalog::Catalog::move_into
//!
//! Time: a batch of at least 4,096 records (as its iterator's size hint says; a `Vec`'s does)
//! makes its text documents on a second, scoped thread, while the calling thread checks the
//! records and then writes the rows and indexes, so a large load keeps two cores busy for most
//! of its run (BENCHMARKS.md, "Registry scale: loading").
//!
//! Small batches gain little from it and do not need it: [`WriteTxn::insert`] stays the path
//! of a single write.

use std::collections::hash_map;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, mpsc};
use std::{mem, panic, thread};

use crate::bm25::hash::StrState;
use crate::bm25::{BulkLoad, Document};

use super::error::StoreError;
use super::index_keys::{BatchKeys, BatchValues, IndexKeys};
use super::schema::{FollowOn, Record, Row, Table, TableDef};
use super::table::TableState;
use super::txn::WriteTxn;

/// A batch, checked, waiting to be written: its rows in batch order, and per index each
/// value once with the keys that carry it (so a million tools sharing a thousand sources hold
/// each source once, not a copy per tool). Its text documents are gathered apart, into one
/// segment ([`BulkLoad`]).
struct Batch {
    rows: Vec<(Arc<str>, Row)>,
    values: Vec<BatchValues>,
}

impl WriteTxn {
    /// Inserts every record of `records`, all or nothing: the same as calling
    /// [`insert`](Self::insert) on each in turn, except that on error none of them is written
    /// (the error is the one the first failing insert would return). Returns the keys in
    /// order. Much faster than a loop for large batches (a catalog, a big MCP server): the
    /// text index gets the whole batch as one segment. A batch of at least 4,096 records (as
    /// `records`' size hint says: a `Vec`'s does) makes its text documents on a second thread
    /// for the length of the call, while this one checks the records.
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
        if matches!(def.follows, Some((_, FollowOn::Belongs))) {
            // A table whose rows belong to another's (a tool's handlers): each row checked
            // against its parent as `insert` does, all or nothing.
            let mark = self.savepoint();
            let mut keys = Vec::new();
            for (at, record) in records.into_iter().enumerate() {
                match self.insert(table, record) {
                    Ok(key) => keys.push(key),
                    Err(e) => {
                        let _ = self.rollback_to(mark);
                        return Err((at, e));
                    }
                }
            }
            return Ok(keys);
        }
        let rows = records.into_iter().map(|r| Arc::new(r) as Row);
        if rows.size_hint().0 >= TEXT_THREAD_MIN_ROWS {
            self.insert_with_text_thread(def, table.id, rows)
        } else {
            self.insert_here(def, table.id, rows)
        }
    }

    /// The bulk insert on this thread alone: each record checked and, as it passes, its text
    /// document made; then the writes, the text segment first, while the least else is held
    /// (laying out its postings is the batch's largest allocation).
    fn insert_here(
        &mut self,
        def: &TableDef,
        id: usize,
        rows: impl Iterator<Item = Row>,
    ) -> Result<Vec<Arc<str>>, (usize, StoreError)> {
        let state = &self.working.tables[id];
        let size = rows.size_hint().0;
        let mut text = def.text.as_ref().zip(text_load(state, size));
        let mut document = Document::new();
        let batch = check_rows(def, state, rows, size, |key, row| {
            if let Some((text, load)) = &mut text {
                text.fill_document(row, &mut document);
                load.add(Arc::clone(key), &document, Some(Arc::clone(row)));
            }
        })?;
        if let (Some(index), Some((_, load))) = (&mut self.working.tables[id].text, text) {
            load.finish(index);
        }
        Ok(self.write_rows(id, batch))
    }

    /// The bulk insert with the text documents made on a second, scoped thread: this thread
    /// checks the records and hands each block of those that passed to the text thread, then
    /// writes the rows and the indexes while the text thread finishes (it has the longer
    /// part: making a record's document and adding its postings takes about twice as long as
    /// checking it), and last adds the text segment. Laying the segment out after the rows are
    /// written, rather than before as [`insert_here`](Self::insert_here) does, holds both at
    /// once for a moment: a million-tool catalog's peak grows by ~10 MB (of ~2.4 GB).
    ///
    /// Everything the text side allocates and frees stays on its thread: only the blocks of
    /// `Arc`s cross (memory freed on another thread than the one that allocated it contends
    /// for the allocator's locks). The text document is a user callback: if it panics, the
    /// rows written meanwhile are undone and the panic goes on to the caller.
    fn insert_with_text_thread(
        &mut self,
        def: &TableDef,
        id: usize,
        rows: impl Iterator<Item = Row>,
    ) -> Result<Vec<Arc<str>>, (usize, StoreError)> {
        let size = rows.size_hint().0;
        let (Some(text), Some(mut load)) = (&def.text, text_load(&self.working.tables[id], size))
        else {
            return self.insert_here(def, id, rows);
        };
        thread::scope(|scope| {
            let (send, blocks) = mpsc::channel::<Vec<(Arc<str>, Row)>>();
            let spawned = thread::Builder::new()
                .name("capstore-bulk-text".into())
                .spawn_scoped(scope, move || {
                    let mut document = Document::new();
                    for (key, row) in blocks.into_iter().flatten() {
                        text.fill_document(&row, &mut document);
                        load.add(key, &document, Some(row));
                    }
                    load
                });
            // A system that will not start a thread gets the text made here.
            let Ok(text_thread) = spawned else {
                return self.insert_here(def, id, rows);
            };
            // A send fails only if the text thread has panicked, which the join re-raises.
            let mut block = Vec::with_capacity(TEXT_BLOCK);
            let checked = check_rows(def, &self.working.tables[id], rows, size, |key, row| {
                block.push((Arc::clone(key), Arc::clone(row)));
                if block.len() == TEXT_BLOCK {
                    let _ = send.send(mem::replace(&mut block, Vec::with_capacity(TEXT_BLOCK)));
                }
            });
            if checked.is_ok() {
                let _ = send.send(block);
            }
            drop(send);
            let batch = match checked {
                Ok(batch) => batch,
                Err(e) => {
                    text_thread
                        .join()
                        .unwrap_or_else(|p| panic::resume_unwind(p));
                    return Err(e);
                }
            };
            // What the transaction held, to put back if the text thread panicked (a copy of
            // persistent maps: O(1)).
            let before = self.savepoint();
            let keys = self.write_rows(id, batch);
            match text_thread.join() {
                Ok(load) => {
                    if let Some(index) = &mut self.working.tables[id].text {
                        load.finish(index);
                    }
                    Ok(keys)
                }
                Err(panic) => {
                    // The transaction's own savepoint: `rollback_to` cannot refuse it.
                    let _ = self.rollback_to(before);
                    panic::resume_unwind(panic)
                }
            }
        })
    }

    /// Writes a checked batch's rows and index values, records them in the change set, and
    /// removes the rows of following tables under their keys, as each insert would. Returns
    /// the keys in batch order.
    fn write_rows(&mut self, id: usize, batch: Batch) -> Vec<Arc<str>> {
        let Batch { rows, values } = batch;
        let keys: Vec<Arc<str>> = rows.iter().map(|(key, _)| Arc::clone(key)).collect();
        for (key, row) in &rows {
            self.pending
                .record(id, Arc::clone(key), None, Some(Arc::clone(row)));
        }
        self.working.tables[id].put_batch(rows, values);
        for key in &keys {
            self.remove_followers(id, key, FollowOn::Writes);
        }
        keys
    }
}

/// A bulk insert of at least this many records (as its iterator's size hint says) makes its
/// text documents on a second thread; a smaller one makes them as it goes (starting a thread
/// costs more than it saves).
pub(super) const TEXT_THREAD_MIN_ROWS: usize = 4096;

/// How many checked records the text thread is handed at a time.
const TEXT_BLOCK: usize = 256;

/// A text segment to gather `size` new documents for `state`'s text index, if it has one.
fn text_load(state: &TableState, size: usize) -> Option<BulkLoad> {
    let mut load = BulkLoad::new(state.text.as_ref()?);
    load.reserve(size);
    Some(load)
}

/// Prepares every record as [`WriteTxn::insert`] would, with the batch's earlier records
/// counting as written: the validator, the key, unique values, duplicate keys. Gathers the
/// rows and the index values; `checked(key, row)` is called for each record that passes, in
/// batch order (its text document is made from it).
fn check_rows(
    def: &TableDef,
    state: &TableState,
    rows: impl Iterator<Item = Row>,
    capacity: usize,
    mut checked: impl FnMut(&Arc<str>, &Row),
) -> Result<Batch, (usize, StoreError)> {
    let mut batch = Batch {
        rows: Vec::with_capacity(capacity),
        values: (0..def.indexes.len()).map(|_| HashMap::default()).collect(),
    };
    let mut keys: HashSet<Arc<str>, StrState> =
        HashSet::with_capacity_and_hasher(capacity, StrState::default());
    for (i, row) in rows.enumerate() {
        // The batch's earlier records count as written for the unique checks.
        let prepared = state.prepare_among(def, row, Some(&batch.values));
        let prepared = prepared.map_err(|e| (i, e))?;
        let key = prepared.key;
        if state.rows.contains_key(&key) || !keys.insert(Arc::clone(&key)) {
            return Err((
                i,
                StoreError::DuplicateKey {
                    table: def.name.clone(),
                    key,
                },
            ));
        }
        for (groups, values) in batch.values.iter_mut().zip(prepared.index_keys) {
            for value in values {
                match groups.entry(value) {
                    hash_map::Entry::Occupied(mut keys) => keys.get_mut().push(&key),
                    hash_map::Entry::Vacant(slot) => {
                        slot.insert(BatchKeys::One(Arc::clone(&key)));
                    }
                }
            }
        }
        checked(&key, &prepared.row);
        batch.rows.push((key, prepared.row));
    }
    Ok(batch)
}

impl TableState {
    /// Writes a checked batch of new records: the rows, and each index value once with all
    /// the batch's keys that carry it, in value order: an ordered map takes keys in order
    /// several times faster than in hash order, where each insert walks a different path of
    /// nodes (100,000 string keys into an `imbl::OrdMap`: ~20 ms sorted, ~100 ms shuffled).
    ///
    /// A new value is inserted without `OrdMap::entry`, which walks the tree three times for
    /// it (to look, to insert, to hand back the value); an index empty before the batch (a
    /// catalog loaded into a new store) is not searched at all.
    fn put_batch(&mut self, rows: Vec<(Arc<str>, Row)>, values: Vec<BatchValues>) {
        for (key, row) in rows {
            self.rows.insert(key, row);
        }
        for (map, groups) in self.indexes.iter_mut().zip(values) {
            let was_empty = map.is_empty();
            let mut groups: Vec<(Arc<str>, BatchKeys)> = groups.into_iter().collect();
            groups.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            for (value, keys) in groups {
                let mut keys = keys.into_vec();
                keys.sort_unstable();
                let held = if was_empty { None } else { map.get_mut(&value) };
                match held {
                    Some(held) => keys.into_iter().for_each(|key| held.insert(key)),
                    None => {
                        map.insert(value, IndexKeys::from_sorted(keys));
                    }
                }
            }
        }
    }
}
