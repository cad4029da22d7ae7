//! Replicas through PostgreSQL, measured (BENCHMARKS.md, "Replicas through PostgreSQL").
//!
//! ```text
//! cargo build --release --example sync_bench
//! bash scripts/postgres.sh run target/release/examples/sync_bench --writes 1000 --tools 100000
//! ```
//!
//! Needs `CAPSTORE_TEST_PG` (a server's URL; `scripts/postgres.sh run` sets it). Each part uses a
//! namespace of its own in that database.
//! - **propagation** (`--writes N`, default 1000): replica A writes one tool at a time; per write,
//!   the time from A's call to A's acknowledgement (committed in PostgreSQL), and from the
//!   acknowledgement to the moment the write is visible in replica B's store (B polls its own
//!   snapshot; the notification wakes its follower). Percentiles over the N writes.
//! - **throughput**: N sequential writes on A alone, then N/2 on each of A and B at once; writes
//!   per second until the last is visible on both.
//! - **bootstrap** (`--catalog FILE`, or `--tools N`: the synthetic catalog of `load_scale --gen
//!   N FILE`, written to a temporary file): the catalog's tools
//!   and skills written to a fresh log as one entry and compacted into the snapshot row; then
//!   `--runs` times, alternated: `Catalog::load_file` into a new store, and `Replica::open` of
//!   a new replica (the snapshot row read, parsed and bulk-inserted). Medians.

use std::time::{Duration, Instant};

use capstore::catalog::Catalog;
use capstore::sync::{Batch, Replica, SyncOptions, compact};
use capstore::{SKILLS, Store, TOOLS, Tool};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut writes = 1000usize;
    let mut runs = 5usize;
    let mut catalog = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--writes" => writes = it.next().ok_or("--writes needs a value")?.parse()?,
            "--runs" => runs = it.next().ok_or("--runs needs a value")?.parse()?,
            "--catalog" => catalog = Some(it.next().ok_or("--catalog needs a file")?.clone()),
            "--tools" => {
                // The synthetic catalog of `load_scale --gen N FILE`, written to a temporary file.
                let n: usize = it.next().ok_or("--tools needs a number")?.parse()?;
                let path = std::env::temp_dir().join(format!("sync_bench_{n}.json"));
                let spec = capstore::catalog::synthetic::Spec {
                    tools: n,
                    ..Default::default()
                };
                let mut out = std::io::BufWriter::new(std::fs::File::create(&path)?);
                capstore::catalog::synthetic::write_catalog(&spec, &mut out)?;
                std::io::Write::flush(&mut out)?;
                catalog = Some(path.display().to_string());
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let url = std::env::var("CAPSTORE_TEST_PG")
        .map_err(|_| "set CAPSTORE_TEST_PG (bash scripts/postgres.sh run ...)")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let tag = std::process::id();
    runtime.block_on(async {
        if writes > 0 {
            propagation(&url, &options(&format!("bench_prop_{tag}"))?, writes).await?;
            throughput(&url, &options(&format!("bench_tput_{tag}"))?, writes).await?;
        }
        if let Some(file) = catalog {
            bootstrap(&url, &options(&format!("bench_boot_{tag}"))?, &file, runs).await?;
        }
        Ok(())
    })
}

fn options(ns: &str) -> Res<SyncOptions> {
    let mut options = SyncOptions::default().with_namespace(ns)?;
    options.query_timeout = Duration::from_secs(120);
    Ok(options)
}

fn put(name: &str) -> Result<Batch, capstore::sync::SyncError> {
    let mut batch = Batch::new();
    batch.put(
        &TOOLS,
        Tool::new(name, "a benchmark tool").with_source("bench"),
    )?;
    Ok(batch)
}

async fn propagation(url: &str, options: &SyncOptions, n: usize) -> Res<()> {
    let a = Replica::open(url, options.clone()).await?;
    let b = Replica::open(url, options.clone()).await?;
    let (mut ack, mut seen, mut total) = (vec![], vec![], vec![]);
    for i in 0..n {
        let key = format!("bench/p{i}");
        let start = Instant::now();
        let version = a.write(put(&format!("p{i}"))?).await?;
        let acked = Instant::now();
        // Poll B's own snapshot: the moment a reader of B can see the tool.
        let deadline = acked + Duration::from_secs(10);
        while !b.snapshot().contains(&TOOLS, &key)? {
            if Instant::now() > deadline {
                return Err(format!("version {version} not visible on B within 10 s").into());
            }
            tokio::task::yield_now().await;
        }
        let visible = Instant::now();
        ack.push(acked - start);
        seen.push(visible.saturating_duration_since(acked));
        total.push(visible - start);
    }
    println!("propagation, {n} writes one at a time (A writes, B reads):");
    report("  A's write acknowledged", ack);
    report("  acknowledged -> visible on B", seen);
    report("  A's call -> visible on B", total);
    Ok(())
}

fn report(label: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let at = |q: f64| {
        let i = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples.get(i).map_or(0.0, |d| d.as_secs_f64() * 1e3)
    };
    println!(
        "{label:34} p50 {:7.2} ms  p99 {:7.2} ms  max {:7.2} ms",
        at(0.5),
        at(0.99),
        at(1.0)
    );
}

async fn throughput(url: &str, options: &SyncOptions, n: usize) -> Res<()> {
    let a = std::sync::Arc::new(Replica::open(url, options.clone()).await?);
    let b = std::sync::Arc::new(Replica::open(url, options.clone()).await?);
    let start = Instant::now();
    let mut last = 0;
    for i in 0..n {
        last = a.write(put(&format!("s{i}"))?).await?;
    }
    b.wait_for(last, Duration::from_secs(60)).await?;
    let one = n as f64 / start.elapsed().as_secs_f64();

    let start = Instant::now();
    let half = n / 2;
    let writer = |r: std::sync::Arc<Replica>, who: &'static str| async move {
        for i in 0..half {
            r.write(put(&format!("{who}{i}"))?).await?;
        }
        Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    };
    let (x, y) = tokio::join!(
        tokio::spawn(writer(std::sync::Arc::clone(&a), "a")),
        tokio::spawn(writer(std::sync::Arc::clone(&b), "b"))
    );
    x?.map_err(|e| e.to_string())?;
    y?.map_err(|e| e.to_string())?;
    let head = last + 2 * half as u64;
    a.wait_for(head, Duration::from_secs(60)).await?;
    b.wait_for(head, Duration::from_secs(60)).await?;
    let two = (2 * half) as f64 / start.elapsed().as_secs_f64();
    println!("replicated writes/s (one tool a write, visible on both replicas):");
    println!("  one writer (A)                   {one:9.0} /s");
    println!("  two writers (A and B at once)    {two:9.0} /s");
    Ok(())
}

async fn bootstrap(url: &str, options: &SyncOptions, file: &str, runs: usize) -> Res<()> {
    // The catalog into the log: one entry with every tool and skill, then compacted.
    let store = Store::new();
    Catalog::load_file(file, &store)?;
    let snap = store.snapshot();
    let mut batch = Batch::new();
    for (_, tool) in snap.iter(&TOOLS)? {
        batch.put(&TOOLS, tool.clone())?;
    }
    for (_, skill) in snap.iter(&SKILLS)? {
        batch.put(&SKILLS, skill.clone())?;
    }
    let (tools, skills) = (snap.count(&TOOLS)?, snap.count(&SKILLS)?);
    drop((snap, store));
    let writer = Replica::open(url, options.clone()).await?;
    let start = Instant::now();
    let version = writer.write(batch).await?;
    let written = start.elapsed();
    drop(writer);
    let start = Instant::now();
    compact(url, options).await?;
    let compacted = start.elapsed();
    println!(
        "bootstrap: {tools} tools, {skills} skills; written as one entry in {:.0} ms, compacted in {:.0} ms",
        written.as_secs_f64() * 1e3,
        compacted.as_secs_f64() * 1e3
    );
    let (mut file_load, mut open) = (vec![], vec![]);
    for _ in 0..runs.max(1) {
        let store = Store::new();
        let start = Instant::now();
        Catalog::load_file(file, &store)?;
        file_load.push(start.elapsed());
        drop(store);
        let start = Instant::now();
        let replica = Replica::open(url, options.clone()).await?;
        open.push(start.elapsed());
        if replica.version() != version || replica.snapshot().count(&TOOLS)? != tools {
            return Err("the bootstrapped replica does not hold the catalog".into());
        }
        drop(replica);
    }
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2].as_secs_f64() * 1e3
    };
    let (f, o) = (median(file_load), median(open));
    println!("  medians of {} alternated runs:", runs.max(1));
    println!("  Catalog::load_file (the file)      {f:9.1} ms");
    println!(
        "  Replica::open (snapshot row)       {o:9.1} ms = {:.2}x the file load",
        o / f
    );
    Ok(())
}
