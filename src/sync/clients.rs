//! The gateways' clients shared through PostgreSQL (features `postgres` and `gateway`): one
//! `capstore clients add --state URL`, and every gateway of the catalog knows the client; one
//! revoke, and every gateway refuses its token.
//!
//! The clients travel like the trust state (see `sync::trust`): the log's `clients` table holds
//! them now, and every change is a log entry (one [`ClientRow`] per client added, a delete per
//! client revoked), decided in one transaction holding the log's head lock, so two adds of one
//! name cannot both win. Every replica keeps the rows in its own store and a gateway reads them
//! there ([`Replica::clients`]), so a request never waits for PostgreSQL; a revocation reaches
//! a gateway when its follower applies the entry, which a `NOTIFY` wakes it for at once (the
//! catalog's propagation time: tens of milliseconds, [`SyncOptions::poll_interval`] at worst
//! while it is connected).
//!
//! What it costs: a request reads the clients the gateway built the last time the replica's
//! clients table changed (one comparison of a table version); each change rebuilds them once.
//! An add or a revoke is one short transaction and one log entry.

use std::sync::Arc;

use parking_lot::Mutex;
use serde::Deserialize;

use crate::gateway::{ClientRecord, ClientSource, Clients, Scope};
use crate::store::Store;

use super::log::{self, timed};
use super::replica::Replica;
use super::wire::{CLIENTS_TABLE, ClientRow, SyncTables, WireChange, WireEntry};
use super::{SyncError, SyncOptions, check_namespace};

impl Replica {
    /// The gateway clients shared by every replica of this catalog, read from this replica's
    /// store: give them to the gateway (`GatewayOptions::clients`). Change them with
    /// [`add_client`] and [`revoke_client`] (from any process); this replica follows.
    ///
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use capstore::gateway::Scope;
    /// use capstore::sync::{Replica, SyncOptions, add_client, revoke_client};
    /// let url = "postgres://capstore@127.0.0.1:55432/postgres";
    /// let options = SyncOptions::default();
    /// let replica = Replica::open(url, options.clone()).await?;
    /// let clients = replica.clients();
    /// let (token, version) = add_client(url, &options, "ci", Scope::default()).await?;
    /// replica.wait_for(version, std::time::Duration::from_secs(5)).await?;
    /// assert!(clients.authenticate(&token).is_some());
    /// let version = revoke_client(url, &options, "ci").await?;
    /// replica.wait_for(version, std::time::Duration::from_secs(5)).await?;
    /// assert!(clients.authenticate(&token).is_none());
    /// # Ok(()) }
    /// ```
    pub fn clients(&self) -> Clients {
        let (_, options, store, tables) = self.shared_parts();
        Clients::from_source(Arc::new(ReplicaClients {
            namespace: options.namespace,
            store,
            tables,
            cache: Mutex::new(None),
        }))
    }
}

/// Adds a client named `name` with `scope` to the clients shared through PostgreSQL at `url`,
/// and returns its token (shown this once: PostgreSQL keeps its hash) and the log version that
/// holds it. Errors: the name is not a client's name ([`ClientRecord::issue`]) or is taken
/// ([`SyncError::Client`]); PostgreSQL cannot be reached or refuses.
///
/// See [`Replica::clients`].
pub async fn add_client(
    url: &str,
    options: &SyncOptions,
    name: &str,
    scope: Scope,
) -> Result<(String, u64), SyncError> {
    let (record, token) =
        ClientRecord::issue(name, scope).map_err(|e| SyncError::Client(e.to_string()))?;
    let row = to_row(&record)?;
    let version = change(url, options, name, |taken| match taken {
        true => Err(SyncError::Client(format!(
            "a client named `{name}` exists: revoke it first"
        ))),
        false => Ok(Some(row)),
    })
    .await?;
    Ok((token, version))
}

/// Revokes the client `name` of the clients shared through PostgreSQL at `url`: every gateway
/// refuses its token once it holds the returned log version. Errors: no such client
/// ([`SyncError::Client`]); PostgreSQL cannot be reached or refuses.
///
/// See [`Replica::clients`].
pub async fn revoke_client(url: &str, options: &SyncOptions, name: &str) -> Result<u64, SyncError> {
    change(url, options, name, |taken| match taken {
        true => Ok(None),
        false => Err(SyncError::Client(format!("no client named `{name}`"))),
    })
    .await
}

/// The clients shared through PostgreSQL at `url`, by name.
///
/// ```no_run
/// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
/// let url = "postgres://capstore@127.0.0.1:55432/postgres";
/// for client in capstore::sync::list_clients(url, &Default::default()).await? {
///     println!("{}: {}", client.name, client.scope);
/// }
/// # Ok(()) }
/// ```
pub async fn list_clients(
    url: &str,
    options: &SyncOptions,
) -> Result<Vec<ClientRecord>, SyncError> {
    check_namespace(&options.namespace)?;
    let mut client = log::connect_writer(url, options).await?;
    log::ensure_schema(&mut client, options).await?;
    let ns = &options.namespace;
    let rows = timed(
        options.query_timeout,
        "reading the clients",
        client.query(
            &format!("SELECT record FROM {ns}.clients ORDER BY name"),
            &[],
        ),
    )
    .await?;
    rows.iter()
        .map(|row| from_row(&decode_row(&row.get::<_, String>(0))?))
        .collect()
}

/// In one transaction holding the log's head: whether `name` is taken, what `decide` makes of
/// it (a row to write, `None` to delete the name's, or an error that writes nothing), then the
/// `clients` table and the log changed alike. Returns the log version written.
async fn change(
    url: &str,
    options: &SyncOptions,
    name: &str,
    decide: impl FnOnce(bool) -> Result<Option<ClientRow>, SyncError>,
) -> Result<u64, SyncError> {
    check_namespace(&options.namespace)?;
    let mut client = log::connect_writer(url, options).await?;
    log::ensure_schema(&mut client, options).await?;
    let ns = &options.namespace;
    let t = options.query_timeout;
    let tx = timed(t, "beginning a client change", client.transaction()).await?;
    let head = log::lock_head(&tx, options).await?;
    let taken = timed(
        t,
        "reading the clients",
        tx.query_opt(
            &format!("SELECT 1 FROM {ns}.clients WHERE name = $1"),
            &[&name],
        ),
    )
    .await?
    .is_some();
    let after = decide(taken)?;
    match &after {
        Some(row) => {
            let record = serde_json::to_string(row).map_err(|e| encode(name, e))?;
            timed(
                t,
                "writing a client",
                tx.execute(
                    &format!("INSERT INTO {ns}.clients (name, record) VALUES ($1, $2)"),
                    &[&name, &record],
                ),
            )
            .await?;
        }
        None => {
            timed(
                t,
                "revoking a client",
                tx.execute(
                    &format!("DELETE FROM {ns}.clients WHERE name = $1"),
                    &[&name],
                ),
            )
            .await?;
        }
    }
    let after = after
        .map(|row| serde_json::to_value(&row).map_err(|e| encode(name, e)))
        .transpose()?;
    let body = WireEntry::changes(vec![WireChange {
        table: CLIENTS_TABLE.to_string(),
        key: name.to_string(),
        after,
    }])
    .encode()?;
    let version = log::append_locked(&tx, options, head, &body).await?;
    timed(t, "committing a client change", tx.commit()).await?;
    Ok(version)
}

/// The clients in a replica's store, as a gateway reads them on every request.
#[derive(Debug)]
struct ReplicaClients {
    namespace: String,
    store: Store,
    tables: SyncTables,
    /// The clients table's version and the clients built from it.
    cache: Mutex<Option<(u64, Arc<[ClientRecord]>)>>,
}

impl ClientSource for ReplicaClients {
    fn current(&self) -> Arc<[ClientRecord]> {
        let snap = self.store.snapshot();
        // The table is declared on every replica's store: no version means no clients.
        let Ok(version) = snap.table_version(&self.tables.clients) else {
            return Arc::from(Vec::new());
        };
        let mut cache = self.cache.lock();
        if let Some((seen, records)) = &*cache
            && *seen == version
        {
            return Arc::clone(records);
        }
        // A row whose scope this build cannot read gives no client: it gains no access.
        let records: Arc<[ClientRecord]> = snap
            .iter(&self.tables.clients)
            .map(|rows| rows.records().filter_map(|r| from_row(r).ok()).collect())
            .unwrap_or_default();
        *cache = Some((version, Arc::clone(&records)));
        records
    }

    fn place(&self) -> String {
        format!("PostgreSQL (namespace {})", self.namespace)
    }
}

fn to_row(record: &ClientRecord) -> Result<ClientRow, SyncError> {
    Ok(ClientRow {
        name: record.name.clone(),
        token_sha256: record.token_sha256.clone(),
        scope: serde_json::to_value(&record.scope).map_err(|e| encode(&record.name, e))?,
    })
}

fn from_row(row: &ClientRow) -> Result<ClientRecord, SyncError> {
    let scope = Scope::deserialize(&row.scope).map_err(|e| SyncError::Decode {
        what: format!("the scope of client {:?}", row.name),
        reason: e.to_string(),
    })?;
    Ok(ClientRecord {
        name: row.name.clone(),
        token_sha256: row.token_sha256.clone(),
        scope,
    })
}

fn decode_row(text: &str) -> Result<ClientRow, SyncError> {
    serde_json::from_str(text).map_err(|e| SyncError::Decode {
        what: "a client".into(),
        reason: e.to_string(),
    })
}

fn encode(name: &str, e: serde_json::Error) -> SyncError {
    SyncError::Encode {
        table: CLIENTS_TABLE.into(),
        key: name.to_string(),
        reason: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_round_trips_through_its_row_and_a_bad_scope_is_an_error() {
        let (record, _) = ClientRecord::issue(
            "ci",
            Scope {
                servers: vec!["time".into()],
                tools: vec!["f/*".into()],
                deny_tags: vec!["destructive".into()],
            },
        )
        .expect("a client");
        let row = to_row(&record).expect("a row");
        assert_eq!(from_row(&row).expect("a record"), record);
        let text = serde_json::to_string(&row).expect("json");
        assert_eq!(decode_row(&text).expect("decoded"), row);
        let bad = ClientRow {
            scope: serde_json::json!({"servers": "time"}),
            ..row
        };
        assert!(matches!(from_row(&bad), Err(SyncError::Decode { .. })));
    }
}
