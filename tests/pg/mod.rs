//! PostgreSQL for the replication tests: the URL `scripts/postgres.sh run` exports (the tests
//! fail, never skip, without it), a namespace of the test's own, and the shared tables as JSON.

#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use capstore::sync::{Batch, SyncOptions};
use capstore::{HOOKS, SKILLS, Snapshot, TOOLS, Tool, USAGE};
use serde_json::{Value, json};

/// The server's URL, from `CAPSTORE_TEST_PG`.
pub fn url() -> String {
    std::env::var("CAPSTORE_TEST_PG").unwrap_or_else(|_| {
        panic!(
            "CAPSTORE_TEST_PG is not set: run the tests through `bash scripts/test.sh` \
             (or `bash scripts/postgres.sh run cargo test ...`), which starts PostgreSQL"
        )
    })
}

/// Options with a namespace no other test uses (so tests run side by side in one database),
/// quick to notice a lost server.
pub fn options(test: &str) -> SyncOptions {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let ns = format!(
        "t_{test}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let mut options = SyncOptions::default()
        .with_namespace(&ns)
        .expect("a valid namespace");
    options.connect_timeout = Duration::from_secs(2);
    options.query_timeout = Duration::from_secs(3);
    options.poll_interval = Duration::from_millis(200);
    options
}

/// The shared tables of a snapshot as JSON, for comparing replicas.
pub fn tables(snap: &Snapshot) -> Value {
    let tools: Vec<Value> = snap
        .iter(&TOOLS)
        .expect("tools")
        .map(|(k, t)| json!([&**k, t]))
        .collect();
    let skills: Vec<Value> = snap
        .iter(&SKILLS)
        .expect("skills")
        .map(|(k, s)| json!([&**k, s]))
        .collect();
    let hooks: Vec<Value> = snap
        .iter(&HOOKS)
        .expect("hooks")
        .map(|(k, h)| json!([&**k, h]))
        .collect();
    json!({ "tools": tools, "skills": skills, "hooks": hooks })
}

/// The usage table of a snapshot as JSON (its rows in key order), for comparing replicas.
pub fn usage(snap: &Snapshot) -> Value {
    let rows: Vec<Value> = snap
        .iter(&USAGE)
        .expect("usage")
        .map(|(k, u)| json!([&**k, u]))
        .collect();
    Value::Array(rows)
}

/// Every log entry's body, as JSON, in version order, read straight from PostgreSQL.
pub async fn log_entries(url: &str, namespace: &str) -> Vec<Value> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(connection);
    let rows = client
        .query(
            &format!("SELECT changes FROM {namespace}.log ORDER BY version"),
            &[],
        )
        .await
        .expect("read the log");
    rows.iter()
        .map(|row| serde_json::from_str(&row.get::<_, String>(0)).expect("json"))
        .collect()
}

/// A counter of `store`'s commits from now on (`Ordering::SeqCst`).
pub fn count_commits(store: &capstore::Store) -> Arc<AtomicU64> {
    let commits = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&commits);
    store
        .subscribe(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
        })
        .detach();
    commits
}

/// A batch that writes one tool, `name` of `source`.
pub fn put_tool(name: &str, source: &str) -> Batch {
    let mut batch = Batch::new();
    batch
        .put(&TOOLS, Tool::new(name, "x").with_source(source))
        .expect("encodes");
    batch
}

/// Polls `cond` every 20 ms for at most `limit`; whether it came true.
pub async fn within(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cond()
}

/// The timeout for a replica to see a write: generous for a loaded CI machine.
pub const SEE: Duration = Duration::from_secs(10);

/// The shared tables as the log says they are: every entry's changes folded in version order
/// into plain maps, read straight from PostgreSQL. A model independent of the replicas' code.
pub async fn log_model(url: &str, namespace: &str) -> Value {
    use std::collections::BTreeMap;
    // The quarantine's trust state travels in the same log; it is folded too, not compared.
    let mut model: BTreeMap<String, BTreeMap<String, Value>> =
        ["tools", "skills", "hooks", "trust"]
            .into_iter()
            .map(|t| (t.to_string(), BTreeMap::new()))
            .collect();
    for entry in log_entries(url, namespace).await {
        // An entry of usage evidence only has no changes.
        for change in entry["changes"].as_array().into_iter().flatten() {
            let table = model
                .get_mut(change["table"].as_str().expect("table"))
                .expect("a shared table");
            let key = change["key"].as_str().expect("key").to_string();
            match &change["after"] {
                Value::Null => table.remove(&key),
                after => table.insert(key, after.clone()),
            };
        }
    }
    let as_rows = |t: &BTreeMap<String, Value>| -> Vec<Value> {
        t.iter().map(|(k, v)| json!([k, v])).collect()
    };
    json!({ "tools": as_rows(&model["tools"]), "skills": as_rows(&model["skills"]), "hooks": as_rows(&model["hooks"]) })
}
