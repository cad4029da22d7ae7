//! Loading a large catalog, timed against `serde_json` parsing the same file (issue 24).
//!
//! ```text
//! capstore gen-catalog --tools 100000 > big.json      # or: this example with --gen N FILE
//! cargo run --release --no-default-features --example load_scale -- big.json [--runs 5]
//! ```
//!
//! Each run reads the file, times `serde_json::from_str::<serde_json::Value>` on its text,
//! then times `Catalog::load_file` into a new store (read, parse, check, move in: what
//! `capstore --catalog FILE` does). `--two-steps` times `Catalog::from_path` (read, parse,
//! check) and `Catalog::move_into` instead, the way before `load_file` (the catalog checked
//! twice); `--clone` times `Catalog::from_path` and `Catalog::load_into`. Runs are
//! interleaved, values are dropped outside the timings, and the medians are printed with the
//! ratio of capstore's load to the `Value` parse.
//! `--load-only` skips the `Value` parse (for peak memory: `/usr/bin/time -v`).
//! `--cpu` (Linux) also prints the CPU time each step took, from `/proc`: the process's
//! (every thread's, in the kernel's 10 ms ticks) and the calling thread's alone (in ns). On a
//! machine with c cores a step cannot take less wall time than its process CPU time ÷ c.
//! `--register N` then times N single registrations into the last loaded store (one new tool
//! inserted and committed, then deleted untimed so the store keeps its size) and a snapshot.

use std::time::Instant;

use capstore::catalog::Catalog;
use capstore::{Store, TOOLS, Tool};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, n, file] = &args[..]
        && flag == "--gen"
    {
        let spec = capstore::catalog::synthetic::Spec {
            tools: n.parse()?,
            ..Default::default()
        };
        let mut out = std::io::BufWriter::new(std::fs::File::create(file)?);
        capstore::catalog::synthetic::write_catalog(&spec, &mut out)?;
        return Ok(());
    }
    let mut file = None;
    let mut runs = 3usize;
    let mut load_only = false;
    let mut cpu = false;
    let mut register = 0usize;
    let mut how = How::LoadFile;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--runs" => runs = it.next().ok_or("--runs needs a value")?.parse()?,
            "--load-only" => load_only = true,
            "--cpu" => cpu = true,
            "--clone" => how = How::LoadInto,
            "--two-steps" => how = How::MoveInto,
            "--register" => register = it.next().ok_or("--register needs a value")?.parse()?,
            other => file = Some(other.to_string()),
        }
    }
    let file = file.ok_or("usage: load_scale FILE [--runs N] | --gen N FILE")?;
    let (mut read, mut value, mut parse, mut load, mut total) =
        (vec![], vec![], vec![], vec![], vec![]);
    let (mut value_cpu, mut load_cpu) = (vec![], vec![]);
    let mut tools = 0;
    let mut last = None;
    for _ in 0..runs.max(1) {
        if !load_only {
            let start = Instant::now();
            let text = std::fs::read_to_string(&file)?;
            read.push(start.elapsed().as_secs_f64());
            let (before, start) = (Cpu::now(), Instant::now());
            let parsed = serde_json::from_str::<serde_json::Value>(&text)?;
            value.push(start.elapsed().as_secs_f64());
            value_cpu.push(Cpu::since(before));
            drop((parsed, text));
        }
        let store = Store::new();
        let before = Cpu::now();
        let report = if how == How::LoadFile {
            let start = Instant::now();
            let report = Catalog::load_file(&file, &store)?;
            total.push(start.elapsed().as_secs_f64());
            report
        } else {
            let start = Instant::now();
            let catalog = Catalog::from_path(&file)?;
            let parsed = start.elapsed().as_secs_f64();
            let start = Instant::now();
            let report = if how == How::LoadInto {
                let report = catalog.load_into(&store);
                drop(catalog);
                report?
            } else {
                catalog.move_into(&store)?
            };
            let loaded = start.elapsed().as_secs_f64();
            parse.push(parsed);
            load.push(loaded);
            total.push(parsed + loaded);
            report
        };
        load_cpu.push(Cpu::since(before));
        tools = report.tools.len();
        drop((report, last.replace(store)));
    }
    let (read, value, parse, load, total) = (
        median(read),
        median(value),
        median(parse),
        median(load),
        median(total),
    );
    println!("{file}: {tools} tools, medians of {} runs", runs.max(1));
    println!("read the file                       {:9.1} ms", read * 1e3);
    println!("serde_json::from_str::<Value>       {:9.1} ms", value * 1e3);
    if how != How::LoadFile {
        println!("Catalog::from_path (read+parse)     {:9.1} ms", parse * 1e3);
        let into = if how == How::LoadInto {
            "load_into"
        } else {
            "move_into"
        };
        println!("Catalog::{into} (a new store)    {:9.1} ms", load * 1e3);
    }
    // With --load-only there is no parse to compare with (its median is NaN).
    let ratio = if load_only {
        String::new()
    } else {
        format!(" = {:.2}x the Value parse", total / value)
    };
    println!(
        "capstore load ({}) {:9.1} ms{ratio}, {:.2} us a tool",
        how.label(),
        total * 1e3,
        total * 1e6 / tools.max(1) as f64
    );
    if cpu {
        print_cpu(&value_cpu, &load_cpu, value, total);
    }
    if let Some(store) = last.filter(|_| register > 0) {
        registrations(&store, register)?;
    }
    Ok(())
}

/// How the catalog is loaded: what `capstore --catalog FILE` does, or the two steps it replaced.
#[derive(Clone, Copy, PartialEq)]
enum How {
    /// `Catalog::load_file`.
    LoadFile,
    /// `Catalog::from_path`, then `Catalog::move_into` (`--two-steps`).
    MoveInto,
    /// `Catalog::from_path`, then `Catalog::load_into` (`--clone`).
    LoadInto,
}

impl How {
    fn label(self) -> &'static str {
        match self {
            How::LoadFile => "load_file",
            How::MoveInto => "from_path+move_into",
            How::LoadInto => "from_path+load_into",
        }
    }
}

/// Times `n` single registrations into `store` (insert + commit; each new tool is deleted
/// again, untimed) and `n` snapshots; prints the medians and the 90th percentiles.
fn registrations(store: &Store, n: usize) -> Result<(), Box<dyn std::error::Error>> {
    let (mut insert, mut snapshot) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let tool = Tool::new(
            format!("registered_{i}"),
            format!("Registered one at a time into the loaded store, number {i}"),
        )
        .with_source("scale");
        let start = Instant::now();
        store.write(|tx| tx.insert(&TOOLS, tool))?;
        insert.push(start.elapsed().as_secs_f64());
        let start = Instant::now();
        let snap = store.snapshot();
        snapshot.push(start.elapsed().as_secs_f64());
        drop(snap);
        store.write(|tx| {
            tx.delete(&TOOLS, &format!("scale/registered_{i}"))
                .map(drop)
        })?;
    }
    let p90 = |mut t: Vec<f64>| {
        t.sort_by(f64::total_cmp);
        t.get(t.len() * 9 / 10).copied().unwrap_or(f64::NAN)
    };
    println!(
        "register one tool (insert + commit)  {:9.1} us median, {:.1} us p90, of {n}",
        median(insert.clone()) * 1e6,
        p90(insert) * 1e6
    );
    println!(
        "snapshot                             {:9.3} us median, {:.3} us p90",
        median(snapshot.clone()) * 1e6,
        p90(snapshot) * 1e6
    );
    Ok(())
}

/// CPU time so far, from `/proc` (Linux): the process's, every thread's, living or ended, in
/// seconds (the kernel counts it in ticks of 1/100 s), and the calling thread's, in seconds
/// (counted in ns). `None` where `/proc` does not have them.
#[derive(Clone, Copy)]
struct Cpu {
    process: f64,
    thread: f64,
}

impl Cpu {
    fn now() -> Option<Cpu> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        // After the command name (in parentheses, which may hold spaces) come the fields
        // from the third on: utime and stime are the 14th and 15th.
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        let ticks: f64 =
            fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
        let schedstat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
        let ns: f64 = schedstat.split_whitespace().next()?.parse().ok()?;
        Some(Cpu {
            process: ticks / 100.0,
            thread: ns * 1e-9,
        })
    }

    /// The CPU time from `before` to now: (process, calling thread).
    fn since(before: Option<Cpu>) -> Option<(f64, f64)> {
        let (now, before) = (Cpu::now()?, before?);
        Some((now.process - before.process, now.thread - before.thread))
    }
}

/// Prints the medians of the CPU times taken by the `Value` parse and by the load, and what
/// they mean on this machine's cores: with c cores the load cannot take less wall time than
/// its process CPU time ÷ c.
fn print_cpu(
    value: &[Option<(f64, f64)>],
    load: &[Option<(f64, f64)>],
    value_wall: f64,
    load_wall: f64,
) {
    let process =
        |times: &[Option<(f64, f64)>]| median(times.iter().flatten().map(|t| t.0).collect());
    let thread =
        |times: &[Option<(f64, f64)>]| median(times.iter().flatten().map(|t| t.1).collect());
    if load.iter().all(Option::is_none) {
        println!("CPU time: not readable here (it is read from Linux's /proc)");
        return;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("CPU time, medians (process = every thread; calling thread alone):");
    if !value.is_empty() {
        println!(
            "  Value parse: process {:7.1} ms, calling thread {:7.1} ms (wall {:.1} ms)",
            process(value) * 1e3,
            thread(value) * 1e3,
            value_wall * 1e3
        );
    }
    println!(
        "  load:        process {:7.1} ms, calling thread {:7.1} ms (wall {:.1} ms)",
        process(load) * 1e3,
        thread(load) * 1e3,
        load_wall * 1e3
    );
    let floor = process(load) / cores as f64;
    if value.is_empty() {
        return;
    }
    println!(
        "  the load's process CPU / {cores} cores = {:.1} ms = {:.2}x the Value parse's wall time: \
         the least this load's work could take here, spread perfectly over the cores",
        floor * 1e3,
        floor / value_wall
    );
}

fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times.get(times.len() / 2).copied().unwrap_or(f64::NAN)
}
