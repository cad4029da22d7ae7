//! Replicas through a PostgreSQL restart: the server is stopped mid-stream and started again
//! (`scripts/postgres.sh stop|start "$CAPSTORE_TEST_PG_DIR"`). Its own test binary, so that no
//! other test's connections are cut.

mod pg;

use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use capstore::TOOLS;
use capstore::sync::{Batch, Replica, SyncError};

fn server(action: &str) {
    let dir = std::env::var("CAPSTORE_TEST_PG_DIR").expect(
        "CAPSTORE_TEST_PG_DIR: run through `bash scripts/postgres.sh run` (scripts/test.sh)",
    );
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/postgres.sh");
    let status = Command::new("bash")
        .args([script, action, &dir])
        .status()
        .expect("run scripts/postgres.sh");
    assert!(status.success(), "postgres.sh {action} failed");
}

fn put(name: &str) -> Batch {
    pg::put_tool(name, "fs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_serve_reads_through_a_server_restart_and_catch_up_exactly_once()
-> Result<(), SyncError> {
    let (url, options) = (pg::url(), pg::options("faults"));
    let a = Replica::open(&url, options.clone()).await?;
    let b = Replica::open(&url, options.clone()).await?;
    // Count B's local commits: one per log entry, never two.
    let commits = pg::count_commits(b.store());

    for i in 1..=5 {
        a.write(put(&format!("before{i}"))).await?;
    }
    b.wait_for(5, pg::SEE).await?;
    assert!(!b.status().is_behind());

    server("stop");
    // Reads go on from the last version; the replicas notice they are cut off.
    assert!(
        pg::within(Duration::from_secs(10), || !b.status().connected
            && !a.status().connected)
        .await,
        "the replicas did not notice the server stopped: {:?}",
        b.status()
    );
    assert!(b.status().is_behind());
    assert!(b.status().last_error.is_some());
    let snap = b.snapshot();
    assert_eq!((b.version_of(&snap), snap.count(&TOOLS)?), (5, 5));
    // A write fails with a typed error, within the timeouts, and is not applied anywhere.
    let started = Instant::now();
    let err = a.write(put("lost")).await.unwrap_err();
    assert!(
        matches!(err, SyncError::Postgres { .. } | SyncError::Timeout { .. }),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));

    server("start");
    assert!(
        pg::within(Duration::from_secs(15), || b.status().connected
            && a.status().connected)
        .await,
        "the replicas did not reconnect: {:?}",
        b.status()
    );
    for i in 1..=5 {
        a.write(put(&format!("after{i}"))).await?;
    }
    let on_b = b.wait_for(10, pg::SEE).await?;
    let on_a = a.wait_for(10, pg::SEE).await?;
    assert_eq!(pg::tables(&on_a), pg::tables(&on_b));
    assert_eq!(on_b.count(&TOOLS)?, 10);
    assert!(!on_b.contains(&TOOLS, "fs/lost")?);
    assert_eq!(b.version(), 10);
    // Nothing applied twice: ten entries, ten local commits.
    assert_eq!(commits.load(Ordering::SeqCst), 10);
    assert_eq!(b.store().version(), 10);
    let status = b.status();
    assert!(
        !status.is_behind() && status.last_error.is_none(),
        "{status:?}"
    );
    Ok(())
}
