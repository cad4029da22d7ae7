//! Live MCP servers of an `mcpServers` configuration, connected by the library's
//! `mcp::live::McpHub` on a tokio runtime the store owns, as `capstore select --mcp-config`
//! connects them: the servers' tools are imported into the store (`server/name`) and kept in
//! step while the store lives.

use std::path::Path;
use std::time::Duration;

use capstore::Store;
use capstore::mcp::McpConfig;
use capstore::mcp::live::{LiveOptions, McpHub, Quarantine, Startup, quarantine_path};

/// Connected servers and the runtime their tasks run on. Dropping it stops the servers (and
/// what they started).
pub(crate) struct Live {
    runtime: tokio::runtime::Runtime,
    hub: McpHub,
    stopped: bool,
}

impl Live {
    /// Reads the configuration at `path` and connects to every server of it, each within
    /// `connect_timeout`; checks their tools against the configuration's trust file
    /// (`FILE.quarantine.json`, as `capstore serve` keeps it) when `quarantine` is set. Returns
    /// once every server is imported or has failed; a failed server is retried in the
    /// background, and its failure is in [`startup`](Self::startup).
    pub(crate) fn connect(
        store: &Store,
        path: &Path,
        connect_timeout: Duration,
        quarantine: bool,
    ) -> Result<Live, String> {
        let config = McpConfig::from_path(path).map_err(|e| e.to_string())?;
        if config.servers.is_empty() {
            return Err(format!("{} names no server to connect to", path.display()));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("capstore-mcp")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the async runtime: {e}"))?;
        let options = LiveOptions {
            connect_timeout,
            quarantine: quarantine.then(|| Quarantine::open(quarantine_path(path), false)),
            ..LiveOptions::default()
        };
        let hub = runtime.block_on(McpHub::connect(store, &config, options));
        Ok(Live {
            runtime,
            hub,
            stopped: false,
        })
    }

    /// How each server's start went.
    pub(crate) fn startup(&self) -> &[Startup] {
        self.hub.startup()
    }

    /// The live tools the quarantine holds back, with why.
    pub(crate) fn held(&self) -> Vec<(String, String)> {
        self.hub
            .held()
            .into_iter()
            .map(|held| (held.key, held.why.to_string()))
            .collect()
    }

    /// Stops every server; their tools stay in the store.
    pub(crate) fn shutdown(&mut self) {
        if !self.stopped {
            self.stopped = true;
            self.runtime.block_on(self.hub.shutdown());
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.shutdown();
    }
}
