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
//! - **usage** (`--usage-seconds S`, with `--gateways G` (4) and `--rate R` (500)): G replicas,
//!   each mirrored into a gateway's store as `capstore serve --state` does, each pushing R turns
//!   a second (calls drawn from a catalog of 40 tools and 10 live ones) onto its usage queue
//!   (`Replica::usage_queue(LOG_BATCH_LIMITS)`), for S seconds; meanwhile the first writes a
//!   catalog change every 50 ms, timed from its call until every other replica holds it (also
//!   measured first for 2 s with no usage, for comparison). Reports the log entries a second per
//!   gateway, the propagation percentiles, and, after a flush of every queue, whether the usage
//!   rows are equal on every replica and every call was counted exactly once.
//!
//! ```text
//! bash scripts/postgres.sh run target/release/examples/sync_bench --writes 0 --usage-seconds 20
//! ```

use std::time::{Duration, Instant};

use capstore::catalog::Catalog;
use capstore::sync::{Batch, LOG_BATCH_LIMITS, Replica, SyncOptions, compact};
use capstore::usage::{BatchLimits, TurnUse};
use capstore::{SKILLS, Store, TOOLS, Tool, USAGE};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut writes = 1000usize;
    let mut runs = 5usize;
    let mut catalog = None;
    let (mut usage_seconds, mut gateways, mut rate) = (0u64, 4usize, 500usize);
    let mut limits = LOG_BATCH_LIMITS;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--writes" => writes = it.next().ok_or("--writes needs a value")?.parse()?,
            "--runs" => runs = it.next().ok_or("--runs needs a value")?.parse()?,
            "--usage-seconds" => {
                usage_seconds = it.next().ok_or("--usage-seconds needs a value")?.parse()?;
            }
            "--gateways" => gateways = it.next().ok_or("--gateways needs a value")?.parse()?,
            "--rate" => rate = it.next().ok_or("--rate needs a value")?.parse()?,
            "--batch-ms" => {
                let ms: u64 = it.next().ok_or("--batch-ms needs a value")?.parse()?;
                limits.max_delay = Duration::from_millis(ms);
            }
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
        if usage_seconds > 0 {
            let options = options(&format!("bench_usage_{tag}"))?;
            usage(&url, &options, gateways.max(2), rate, usage_seconds, limits).await?;
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

/// A deterministic generator (an LCG): the bench's turns are the same every run.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) as usize) % n
    }
}

/// A gateway's turn: 1 to 3 calls among `tools`, 4 tools sent, the previous turn's calls.
fn bench_turn(rng: &mut Lcg, tools: &[String], previous: &[String]) -> TurnUse {
    let calls = 1 + rng.next(3);
    let called: Vec<&String> = (0..calls).map(|_| &tools[rng.next(tools.len())]).collect();
    let sent: Vec<&String> = (0..4).map(|_| &tools[rng.next(tools.len())]).collect();
    TurnUse::new(called.into_iter().cloned())
        .with_sent(sent.into_iter().cloned())
        .with_previous(previous.iter().cloned())
}

/// One catalog change written by `writer`, timed until every replica of `others` holds it; and
/// the part of that until PostgreSQL acknowledged the write.
async fn catalog_change(
    writer: &Replica,
    others: &[Replica],
    i: usize,
) -> Res<(Duration, Duration)> {
    let start = Instant::now();
    let version = writer.write(put(&format!("c{i}"))?).await?;
    let acked = start.elapsed();
    for other in others {
        other.wait_for(version, Duration::from_secs(10)).await?;
    }
    Ok((start.elapsed(), acked))
}

async fn usage(
    url: &str,
    options: &SyncOptions,
    gateways: usize,
    rate: usize,
    seconds: u64,
    limits: BatchLimits,
) -> Res<()> {
    let mut replicas = Vec::new();
    let mut mirrors = Vec::new();
    for g in 0..gateways {
        let mut options = options.clone();
        options.replica = format!("gateway-{g}");
        let replica = Replica::open(url, options).await?;
        let store = Store::new();
        mirrors.push((replica.mirror_into(&store)?, store));
        replicas.push(replica);
    }
    let mut catalog = Batch::new();
    for i in 0..40 {
        catalog.put(
            &TOOLS,
            Tool::new(format!("t{i}"), "a catalog tool").with_source("cat"),
        )?;
    }
    let v = replicas[0].write(catalog).await?;
    for r in &replicas {
        r.wait_for(v, Duration::from_secs(10)).await?;
    }
    let mut tools: Vec<String> = (0..40).map(|i| format!("cat/t{i}")).collect();
    tools.extend((0..10).map(|i| format!("live/l{i}")));
    let (writer, others) = replicas.split_first().ok_or("no gateways")?;

    // Catalog changes with no usage, for comparison.
    let (mut idle, mut idle_ack) = (Vec::new(), Vec::new());
    let quiet = Instant::now();
    while quiet.elapsed() < Duration::from_secs(2) {
        let (seen, acked) = catalog_change(writer, others, idle.len()).await?;
        idle.push(seen);
        idle_ack.push(acked);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // The gateways' turns: `rate` a second each, pushed every 10 ms.
    let queues: Vec<_> = replicas.iter().map(|r| r.usage_queue(limits)).collect();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut pushers = Vec::new();
    for (g, queue) in queues.iter().enumerate() {
        let (queue, stop, tools) = (queue.clone(), std::sync::Arc::clone(&stop), tools.clone());
        pushers.push(tokio::spawn(async move {
            let mut rng = Lcg(g as u64 + 1);
            let mut previous: Vec<String> = Vec::new();
            let (mut turns, mut calls) = (0u64, 0u64);
            let started = Instant::now();
            let mut tick = tokio::time::interval(Duration::from_millis(10));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                tick.tick().await;
                // Catch up to the rate since the start (a late tick pushes more).
                let due = (started.elapsed().as_secs_f64() * rate as f64) as u64;
                while turns < due {
                    let turn = bench_turn(&mut rng, &tools, &previous);
                    calls += turn.called.len() as u64;
                    previous = turn.called.clone();
                    previous.dedup();
                    queue.push(turn);
                    turns += 1;
                }
            }
            (turns, calls, started.elapsed())
        }));
    }
    let (mut busy, mut busy_ack) = (Vec::new(), Vec::new());
    let started = Instant::now();
    let run_for = Duration::from_secs(seconds);
    while started.elapsed() < run_for {
        let (seen, acked) = catalog_change(writer, others, idle.len() + busy.len()).await?;
        busy.push(seen);
        busy_ack.push(acked);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut pushed = Vec::new();
    for p in pushers {
        pushed.push(p.await?);
    }
    let elapsed = started.elapsed().as_secs_f64();
    // Entries sent while the turns came, before the final flush.
    let entries: Vec<u64> = queues.iter().map(|q| q.status().entries).collect();
    let mut head = 0;
    for q in &queues {
        if let Some(v) = q.flush().await? {
            head = head.max(v);
        }
    }
    // Batches the queues' tasks sent on their own are known to their replicas.
    let head = replicas
        .iter()
        .map(|r| r.status().latest_known)
        .fold(head, u64::max);
    let mut usage_rows = Vec::new();
    for r in &replicas {
        let snap = r.wait_for(head, Duration::from_secs(30)).await?;
        let rows: Vec<_> = snap.iter(&USAGE)?.records().cloned().collect();
        usage_rows.push(rows);
    }
    let equal = usage_rows.iter().all(|rows| *rows == usage_rows[0]);
    let mirrored = mirrors.iter().all(|(_, store)| {
        store
            .snapshot()
            .iter(&USAGE)
            .is_ok_and(|rows| rows.records().cloned().collect::<Vec<_>>() == usage_rows[0])
    });
    let counted: u64 = usage_rows[0].iter().map(|u| u.calls).sum();
    let calls: u64 = pushed.iter().map(|(_, c, _)| c).sum();
    let turns: u64 = pushed.iter().map(|(t, _, _)| t).sum();

    println!(
        "usage: {gateways} gateways x {rate} turns/s for {seconds} s (batches of {} turns or {:?}), each mirrored into a gateway store:",
        limits.max_turns, limits.max_delay
    );
    let per_gateway = |values: Vec<f64>| {
        values
            .iter()
            .map(|v| format!("{v:.1}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!(
        "  turns pushed a second, per gateway     {}",
        per_gateway(
            pushed
                .iter()
                .map(|(t, _, d)| *t as f64 / d.as_secs_f64())
                .collect()
        )
    );
    println!(
        "  log entries a second, per gateway      {}  (target <= 20)",
        per_gateway(entries.iter().map(|e| *e as f64 / elapsed).collect())
    );
    println!(
        "catalog change, writer's call -> held by the {} other replicas:",
        others.len()
    );
    report(&format!("  no usage ({} changes)", idle.len()), idle);
    report("    of which acknowledged", idle_ack);
    report(&format!("  under usage ({} changes)", busy.len()), busy);
    report("    of which acknowledged", busy_ack);
    println!(
        "after a flush: usage rows equal on all {gateways} replicas: {equal}; in every mirror: {mirrored}; \
         {} rows; calls counted {counted} of {calls} pushed ({turns} turns)",
        usage_rows[0].len()
    );
    if !equal || !mirrored || counted != calls {
        return Err("the replicas' usage differs from what was pushed".into());
    }
    Ok(())
}
