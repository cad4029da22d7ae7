//! What a `Store` and its `Conversation`s share: the library's store and the caches kept
//! beside it (export names, builders, embedded versions, live servers).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use capstore::context::ContextBuilder;
use capstore::embed::embed_missing;
use capstore::provider::ToolExport;
use capstore::usage::UsageQueue;
use capstore::{Snapshot, TOOLS, Tool, VECTORS};
use pyo3::prelude::*;

use crate::errors;
use crate::live::Live;
use crate::options::Settings;

/// Locks `mutex`, whatever a panicking holder left: every value kept behind one is a cache or
/// a handle that stays usable.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The store and what the binding keeps beside it, shared by the `Store` and its
/// `Conversation`s.
pub(crate) struct Inner {
    pub(crate) store: capstore::Store,
    /// The conversations' finished turns, counted into `store` in batches (written when a
    /// conversation finishes or is dropped, and when the store goes).
    pub(crate) usage: UsageQueue,
    /// The tools a loaded catalog pins (`Catalog::policy`), added to every policy.
    pub(crate) pinned: Mutex<Vec<String>>,
    /// Export names of the latest snapshot read, recomputed when the `tools` table changes.
    pub(crate) export: Mutex<Option<Arc<ToolExport>>>,
    /// Builders by their settings (`Settings::key`): a builder reads its policy's hint tables
    /// once, and hybrid retrieval keeps its vector layout in it.
    pub(crate) builders: Mutex<HashMap<String, Arc<ContextBuilder>>>,
    /// The tables' state (`tools_and_vectors`) at which each model's tool vectors are
    /// complete.
    pub(crate) embedded: Mutex<HashMap<String, u64>>,
    /// Live MCP servers, when the store was opened from an `mcpServers` configuration.
    pub(crate) live: Mutex<Option<Live>>,
}

impl Inner {
    pub(crate) fn new(store: capstore::Store, pinned: Vec<String>) -> Arc<Inner> {
        Arc::new(Inner {
            usage: UsageQueue::new(store.clone()),
            store,
            pinned: Mutex::new(pinned),
            export: Mutex::new(None),
            builders: Mutex::new(HashMap::new()),
            embedded: Mutex::new(HashMap::new()),
            live: Mutex::new(None),
        })
    }

    /// The export names of `snapshot` (`ToolExport::for_snapshot`), computed once a version.
    pub(crate) fn export(&self, snapshot: &Snapshot) -> PyResult<Arc<ToolExport>> {
        ToolExport::cached(&mut lock(&self.export), snapshot).map_err(errors::store)
    }

    /// The builder for `settings`, made once.
    pub(crate) fn builder(&self, settings: &Settings) -> PyResult<Arc<ContextBuilder>> {
        let key = settings.key();
        if let Some(builder) = lock(&self.builders).get(&key) {
            return Ok(Arc::clone(builder));
        }
        let pinned = lock(&self.pinned).clone();
        let builder = Arc::new(settings.builder(&pinned)?);
        lock(&self.builders).insert(key, Arc::clone(&builder));
        Ok(builder)
    }

    /// Gives every tool a vector of the settings' embedder, if they have one and some tool
    /// lacks it (`embed::embed_missing`): hybrid retrieval needs them.
    pub(crate) fn prepare(&self, settings: &Settings) -> PyResult<()> {
        let Some(model) = &settings.embedder else {
            return Ok(());
        };
        let id = capstore::embed::Embedder::model_id(model.as_ref()).to_string();
        let version = tools_and_vectors(&self.store.snapshot())?;
        if lock(&self.embedded).get(&id) == Some(&version) {
            return Ok(());
        }
        embed_missing(&self.store, model.as_ref()).map_err(errors::embed)?;
        let version = tools_and_vectors(&self.store.snapshot())?;
        lock(&self.embedded).insert(id, version);
        Ok(())
    }

    /// The qualified name `name` stands for: a qualified name of the store, or an exported
    /// name resolved back (`ToolExport::resolve`).
    pub(crate) fn resolve(&self, name: &str) -> PyResult<String> {
        let snapshot = self.store.snapshot();
        if snapshot.contains(&TOOLS, name).map_err(errors::store)? {
            return Ok(name.to_string());
        }
        match self.export(&snapshot)?.resolve(name) {
            Some(key) => Ok(key.to_string()),
            None => Err(errors::not_found(name)),
        }
    }

    /// Writes `tools` in one transaction (all or none); their qualified names.
    pub(crate) fn insert(&self, tools: Vec<Tool>) -> PyResult<Vec<String>> {
        let mut keys = Vec::with_capacity(tools.len());
        self.store
            .write(|tx| {
                for tool in tools {
                    keys.push(tx.insert(&TOOLS, tool)?.to_string());
                }
                Ok::<(), capstore::StoreError>(())
            })
            .map_err(errors::tool)?;
        Ok(keys)
    }
}

/// The latest version at which the `tools` or `vectors` table changed: what the vectors'
/// completeness depends on (a turn's usage leaves it be).
fn tools_and_vectors(snapshot: &Snapshot) -> PyResult<u64> {
    let tools = snapshot.table_version(&TOOLS).map_err(errors::store)?;
    let vectors = snapshot.table_version(&VECTORS).map_err(errors::store)?;
    Ok(tools.max(vectors))
}
