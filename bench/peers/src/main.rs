//! `capstore-peers`: capstore against tantivy, the `bm25` crate and a flat inverted index, on
//! the same corpora and queries, in one process (issue 6). See README.md beside Cargo.toml.
//!
//! ```text
//! cargo run --release -p capstore-peers -- [--quick] [--sets synthetic,metatool,sealtools,toolbench]
//!     [--sizes 100,1000,10000,100000] [--kinds flat,capstore-bm25,capstore-select,tantivy,bm25-crate]
//!     [--bulk-store]
//! ```

#[path = "../../../benches/synthetic/mod.rs"]
mod synthetic;

mod concurrency;
mod contenders;
mod corpus;
mod flat;
mod measure;
mod synthetic_store;
#[cfg(test)]
mod synthetic_store_tests;

use std::sync::Arc;
use std::time::{Duration, Instant};

use contenders::{Kind, TOP_K};
use corpus::Corpus;
use flat::FlatIndex;
use measure::{
    Agreement, Effort, agreement, count_allocations, fmt_bytes, fmt_duration, fmt_int,
    median_insert, run_queries,
};

const SYNTHETIC_SIZES: [usize; 4] = [100, 1_000, 10_000, 100_000];
const ALL_SETS: [&str; 4] = ["synthetic", "metatool", "sealtools", "toolbench"];
/// The store size of the concurrency test and of the single-insert target.
const CONCURRENCY_N: usize = 10_000;
/// Issue 24's registry scale: select rows from this N on are checked against its target.
const ISSUE_24_N: usize = 1_000_000;

const USAGE: &str = "\
usage: capstore-peers [--quick] [--sets LIST] [--sizes LIST] [--kinds LIST] [--bulk-store]
  --quick        fewer queries and inserts, shorter concurrency phases, no N = 100,000
  --sets LIST    comma-separated: synthetic, metatool, sealtools, toolbench (default: all)
  --sizes LIST   synthetic sizes, comma-separated (default: 100,1000,10000,100000)
  --kinds LIST   contenders, comma-separated: flat, capstore-bm25, capstore-select, tantivy,
                 bm25-crate (default: all). flat, the yardstick the ratios are taken against,
                 is always measured, first: it is added when the list leaves it out. Contenders
                 run in the order above whatever the list's order. The concurrency test runs
                 only when capstore-select is measured.
  --bulk-store   write capstore select's store with WriteTxn::insert_many, as a catalog load
                 does (one text segment), instead of one skill at a time (about 2 log3 N
                 segments beyond 4,096 tools): the same rows and scores, about 3x faster to
                 build, faster selects. The concurrency test's store is built as always.";

struct Args {
    quick: bool,
    sets: Vec<&'static str>,
    /// Synthetic sizes, when given (default: all, or all but 100,000 with `--quick`).
    sizes: Option<Vec<usize>>,
    /// The contenders to measure, in [`Kind::ALL`]'s order: flat first, always.
    kinds: Vec<Kind>,
    /// capstore select's store written by bulk inserts.
    bulk_store: bool,
}

/// The contenders `list` names (comma-separated [`Kind::name`]s), in [`Kind::ALL`]'s order, with
/// the flat yardstick added when the list leaves it out (every ratio is against it). The
/// second value says whether it was added.
fn parse_kinds(list: &str) -> Result<(Vec<Kind>, bool), String> {
    let mut named = Vec::new();
    for name in list.split(',').map(str::trim) {
        let kind = Kind::from_name(name).ok_or_else(|| {
            let known: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
            format!(
                "--kinds: unknown contender {name:?}; known: {}",
                known.join(", ")
            )
        })?;
        named.push(kind);
    }
    let added = !named.contains(&Kind::Flat);
    let kinds = Kind::ALL
        .into_iter()
        .filter(|k| *k == Kind::Flat || named.contains(k))
        .collect();
    Ok((kinds, added))
}

fn parse_args() -> Result<Args, String> {
    let mut quick = false;
    let mut sets: Vec<&'static str> = ALL_SETS.to_vec();
    let mut sizes = None;
    let mut kinds = Kind::ALL.to_vec();
    let mut bulk_store = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => quick = true,
            "--bulk-store" => bulk_store = true,
            "--sets" => {
                let list = args.next().ok_or("--sets needs a comma-separated list")?;
                sets = list
                    .split(',')
                    .map(|s| {
                        ALL_SETS
                            .iter()
                            .copied()
                            .find(|known| *known == s.trim())
                            .ok_or_else(|| format!("unknown set {s:?}; known: {ALL_SETS:?}"))
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--sizes" => {
                let list = args.next().ok_or("--sizes needs a comma-separated list")?;
                sizes = Some(
                    list.split(',')
                        .map(|s| match s.trim().parse::<usize>() {
                            Ok(n) if n > 0 => Ok(n),
                            _ => Err(format!("--sizes: {s:?} is not a positive number")),
                        })
                        .collect::<Result<Vec<_>, _>>()?,
                );
            }
            "--kinds" => {
                let list = args.next().ok_or("--kinds needs a comma-separated list")?;
                let added;
                (kinds, added) = parse_kinds(&list)?;
                if added {
                    eprintln!(
                        "--kinds: flat (the yardstick) added, first: the ratios are against it"
                    );
                }
            }
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    Ok(Args {
        quick,
        sets,
        sizes,
        kinds,
        bulk_store,
    })
}

struct Row {
    corpus: &'static str,
    n: usize,
    kind: Kind,
    build: Duration,
    p50: Duration,
    p99: Duration,
    qps: f64,
    queries: usize,
    memory: i64,
    insert: Duration,
    ratio: f64,
    agreement: Option<Agreement>,
    /// Store rows: bytes of the tools' own text.
    text_bytes: usize,
}

fn machine_info() -> String {
    let nproc = std::thread::available_parallelism().map_or(0, |n| n.get());
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    format!("nproc = {nproc}; CPU: {cpu}")
}

/// Measures `kinds` (flat first: the ratios are against it) on `corpus`.
fn measure_corpus(corpus: &Corpus, args: &Args, effort: &Effort, rows: &mut Vec<Row>) {
    let kinds = &args.kinds;
    assert_eq!(kinds.first(), Some(&Kind::Flat), "flat is measured first");
    let n = corpus.len();
    // The reference for the agreement check: never timed, never inserted into; built only
    // when a contender is checked against it.
    let mut reference = kinds
        .iter()
        .any(|k| k.same_formula())
        .then(|| FlatIndex::build(1.2, 0.75, &corpus.docs));
    let mut flat_p50 = None;
    for &kind in kinds {
        let ((mut c, build), memory) = count_allocations(|| {
            let t = Instant::now();
            let c = kind.build(corpus, args.bulk_store);
            (c, t.elapsed())
        });
        let run = run_queries(c.as_mut(), corpus, effort);
        let agreement = reference
            .as_mut()
            .filter(|_| kind.same_formula())
            .map(|reference| agreement(reference, corpus, &run.results));
        let inserts = if kind == Kind::Tantivy {
            effort.inserts_slow
        } else {
            effort.inserts
        };
        let insert = median_insert(c.as_mut(), corpus, inserts);
        drop(c);
        let p50 = run.percentile(50.0);
        let flat = *flat_p50.get_or_insert(p50);
        let row = Row {
            corpus: corpus.name,
            n,
            kind,
            build,
            p50,
            p99: run.percentile(99.0),
            qps: run.qps(),
            queries: run.latencies.len(),
            memory,
            insert,
            ratio: p50.as_secs_f64() / flat.as_secs_f64(),
            agreement,
            text_bytes: corpus.tool_text_bytes,
        };
        eprintln!(
            "  {:<18} build {:>9}  p50 {:>9}  p99 {:>9}  ({} queries)",
            kind.label(),
            fmt_duration(row.build),
            fmt_duration(row.p50),
            fmt_duration(row.p99),
            row.queries
        );
        rows.push(row);
    }
}

fn agreement_cell(a: Option<Agreement>, kind: Kind) -> String {
    match (a, kind) {
        (Some(a), _) => {
            let pct = |x: usize| 100.0 * x as f64 / a.queries.max(1) as f64;
            format!(
                "{:.0}% / {:.0}% of {}",
                pct(a.ranking),
                pct(a.scores),
                a.queries
            )
        }
        (None, Kind::Flat) => "(reference)".into(),
        (None, _) => "n/a (BM25F, own query)".into(),
    }
}

fn print_table(rows: &[Row]) {
    println!(
        "| corpus | N | contender | build | p50 | p99 | QPS | memory | B/doc | single insert | p50 ÷ flat | agree: ranking / scores |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.2}× | {} |",
            r.corpus,
            fmt_int(r.n as u64),
            r.kind.label(),
            fmt_duration(r.build),
            fmt_duration(r.p50),
            fmt_duration(r.p99),
            fmt_int(r.qps.round() as u64),
            fmt_bytes(r.memory),
            fmt_int((r.memory.max(0) as u64) / r.n as u64),
            fmt_duration(r.insert),
            r.ratio,
            agreement_cell(r.agreement, r.kind),
        );
    }
}

fn print_agreement_notes(rows: &[Row]) {
    if rows.iter().all(|r| r.kind == Kind::Flat) {
        return;
    }
    println!();
    println!(
        "Agreement with the yardstick (top {TOP_K}, identical tokens, scores within 1e-4 relative):"
    );
    let measured = |kind: Kind| rows.iter().any(|r| r.kind == kind);
    for kind in [Kind::CapstoreBm25, Kind::Bm25Crate, Kind::Tantivy] {
        if !measured(kind) {
            continue;
        }
        let (mut q, mut rank, mut sc, mut diff) = (0, 0, 0, 0.0f32);
        for r in rows.iter().filter(|r| r.kind == kind) {
            if let Some(a) = r.agreement {
                q += a.queries;
                rank += a.ranking;
                sc += a.scores;
                diff = diff.max(a.max_rel_diff);
            }
        }
        let why = match kind {
            Kind::CapstoreBm25 => {
                "same formula (Lucene idf, k1 1.2, b 0.75, query-term counts); f32 sums in another order"
            }
            Kind::Bm25Crate => {
                "same formula (idf computed in f32); exact ties come back in hash order (the ranking check allows it)"
            }
            Kind::Tantivy => {
                "same idf and k1/b, but document lengths are stored as a one-byte fieldnorm: exact up to 40 tokens, rounded down beyond (42, 44, ..., 56, 60, 64, ...), so longer documents get a different length norm"
            }
            _ => "",
        };
        println!(
            "- {}: ranking {rank}/{q}, scores {sc}/{q}; largest relative score difference {diff:.1e}. {why}.",
            kind.label()
        );
    }
    if measured(Kind::CapstoreSelect) {
        println!(
            "- capstore select is not compared: it tokenizes the message itself (on the synthetic corpus its stop list drops the function words the others index), weighs fields (BM25F: name 2, param_docs 0.5), adds skills and exact-name matches."
        );
    }
}

fn print_targets(rows: &[Row], phases: &[concurrency::Phase]) {
    // Every target is about capstore.
    if !rows
        .iter()
        .any(|r| matches!(r.kind, Kind::CapstoreBm25 | Kind::CapstoreSelect))
    {
        return;
    }
    println!();
    println!("Targets (issue 6), this run:");
    let ratios = |kind: Kind| -> Vec<String> {
        rows.iter()
            .filter(|r| r.kind == kind)
            .map(|r| format!("{} {}: {:.2}×", r.corpus, fmt_int(r.n as u64), r.ratio))
            .collect()
    };
    let worst = |kind: Kind| {
        rows.iter()
            .filter(|r| r.kind == kind)
            .map(|r| r.ratio)
            .fold(0.0f64, f64::max)
    };
    let mark = |ok: bool| if ok { "met" } else { "NOT met" };
    let measured = |kind: Kind| rows.iter().any(|r| r.kind == kind);
    if measured(Kind::CapstoreBm25) {
        println!(
            "- capstore BM25 p50 ≤ 1.5× flat at every N: {} ({})",
            mark(worst(Kind::CapstoreBm25) <= 1.5),
            ratios(Kind::CapstoreBm25).join(", ")
        );
    }
    if measured(Kind::CapstoreSelect) {
        println!(
            "- ContextBuilder select (explain off) p50 ≤ 3× flat: {} ({})",
            mark(worst(Kind::CapstoreSelect) <= 3.0),
            ratios(Kind::CapstoreSelect).join(", ")
        );
    }
    if let Some(r) = rows
        .iter()
        .find(|r| r.kind == Kind::CapstoreSelect && r.corpus == "synthetic" && r.n == CONCURRENCY_N)
    {
        println!(
            "- one tool into a 10,000-tool store ≤ 50 µs incl. commit: {} ({}, median; visible in the next snapshot: checked at every insert)",
            mark(r.insert <= Duration::from_micros(50)),
            fmt_duration(r.insert)
        );
    }
    let beyond: Vec<(String, i64)> = rows
        .iter()
        .filter(|r| r.kind == Kind::CapstoreSelect)
        .map(|r| {
            (
                format!("{} {}", r.corpus, fmt_int(r.n as u64)),
                (r.memory - r.text_bytes as i64) / r.n as i64,
            )
        })
        .collect();
    if !beyond.is_empty() {
        println!(
            "- store memory ≤ 2 KB per tool beyond its own text: {} ({})",
            mark(beyond.iter().all(|(_, b)| *b <= 2048)),
            beyond
                .iter()
                .map(|(c, b)| format!("{c}: {} B", fmt_int((*b).max(0) as u64)))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if let [one, two] = phases {
        let ratio = two.selects_per_sec() / one.selects_per_sec();
        println!(
            "- 2 readers ≥ 1.7× one reader while the writer commits: {} ({ratio:.2}×)",
            mark(ratio >= 1.7)
        );
    }
    // Issue 24 (registry scale): the full select at a million tools.
    let at_scale: Vec<&Row> = rows
        .iter()
        .filter(|r| r.kind == Kind::CapstoreSelect && r.n >= ISSUE_24_N)
        .collect();
    if !at_scale.is_empty() {
        println!();
        println!("Targets (issue 24), this run:");
        println!(
            "- ContextBuilder select (explain off) p50 ≤ 1.5× flat at the same N, N ≥ 1,000,000: {} ({})",
            mark(at_scale.iter().all(|r| r.ratio <= 1.5)),
            at_scale
                .iter()
                .map(|r| format!("{} {}: {:.2}×", r.corpus, fmt_int(r.n as u64), r.ratio))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let effort = if args.quick {
        Effort {
            warm: 20,
            max_queries: 300,
            budget: Duration::from_millis(500),
            min_queries: 20,
            agree_queries: 200,
            inserts: 20,
            inserts_slow: 10,
        }
    } else {
        Effort {
            warm: 100,
            max_queries: 3_000,
            budget: Duration::from_secs(4),
            min_queries: 50,
            agree_queries: 1_000,
            inserts: 200,
            inserts_slow: 50,
        }
    };
    let sizes: &[usize] = match (&args.sizes, args.quick) {
        (Some(sizes), _) => sizes,
        (None, true) => &SYNTHETIC_SIZES[..3],
        (None, false) => &SYNTHETIC_SIZES,
    };
    let extra = effort.inserts.max(effort.inserts_slow);
    let started = Instant::now();
    let mut rows = Vec::new();

    // Load the real sets first, so that a missing one stops the run before any measurement.
    let mut real_sets = Vec::new();
    for set in args.sets.iter().copied().filter(|s| *s != "synthetic") {
        match corpus::real(set, extra) {
            Ok(c) => real_sets.push(c),
            Err(e) => {
                eprintln!(
                    "cannot load {set} from {} ({e}); set CAPSTORE_SHARED_DATA",
                    corpus::shared_data_dir().display()
                );
                std::process::exit(1);
            }
        }
    }
    // The concurrency test measures the store: only with capstore select.
    let concurrency = args.kinds.contains(&Kind::CapstoreSelect);
    let synthetic = args.sets.contains(&"synthetic");
    let largest = [
        sizes.iter().copied().max().filter(|_| synthetic),
        concurrency.then_some(CONCURRENCY_N),
    ]
    .into_iter()
    .flatten()
    .max();
    let generator = largest.map(corpus::Synthetic::new);
    if let (true, Some(generator)) = (synthetic, &generator) {
        for &n in sizes {
            eprintln!("synthetic N = {n}");
            let c = generator.at(n, extra);
            measure_corpus(&c, &args, &effort, &mut rows);
        }
    }
    for c in &real_sets {
        eprintln!("{}: {} tools, {} queries", c.name, c.len(), c.queries.len());
        measure_corpus(c, &args, &effort, &mut rows);
    }

    let duration = if args.quick {
        Duration::from_secs(1)
    } else {
        Duration::from_secs(3)
    };
    // Past the first merge of everything that steady upserts cause (one dead document per
    // 8 live ones, plus 256), so that no phase finds the freshly built store.
    let warm_up = (CONCURRENCY_N / 4) as u64;
    let phases = generator
        .filter(|_| concurrency)
        .map(|generator| run_concurrency(&generator, warm_up, duration));

    println!(
        "capstore-peers{}: {}; queries timed one at a time on one thread; finished in {:.0?}.",
        if args.quick { " --quick" } else { "" },
        machine_info(),
        started.elapsed()
    );
    if args.kinds != Kind::ALL {
        let names: Vec<&str> = args.kinds.iter().map(|k| k.name()).collect();
        println!("Contenders: {} (--kinds).", names.join(", "));
    }
    if args.bulk_store && args.kinds.contains(&Kind::CapstoreSelect) {
        println!(
            "capstore select's store written by bulk inserts (--bulk-store): one text segment per table, not the one-skill-at-a-time layout of the default run; its select times are not comparable with a default run's beyond 4,096 tools."
        );
    }
    println!();
    print_table(&rows);
    print_agreement_notes(&rows);
    if let Some(phases) = &phases {
        print_concurrency(phases, warm_up, duration);
    }
    print_targets(&rows, phases.as_ref().map_or(&[], |p| &p[..]));
}

/// The concurrency test: a [`CONCURRENCY_N`]-tool synthetic store with skills, `warm_up`
/// untimed upserts, then the phases of [`concurrency::PHASE_ORDER`]; per reader count (1, 2),
/// its phases combined.
fn run_concurrency(
    generator: &corpus::Synthetic,
    warm_up: u64,
    duration: Duration,
) -> [concurrency::Phase; 2] {
    eprintln!("concurrency: {CONCURRENCY_N} tools");
    let c = generator.at(CONCURRENCY_N, 0);
    let store = synthetic_store::store_with_skills(&c.tools);
    let messages = Arc::new(c.messages.clone());
    let mut revision = 0;
    concurrency::warm_up(&store, &c.tools, &mut revision, warm_up);
    let runs: Vec<concurrency::Phase> = concurrency::PHASE_ORDER
        .iter()
        .map(|&r| concurrency::phase(&store, &c.tools, &messages, r, duration, &mut revision))
        .collect();
    [1, 2].map(|r| concurrency::Phase::combined(&runs, r))
}

fn print_concurrency(phases: &[concurrency::Phase], warm_up: u64, duration: Duration) {
    println!();
    println!(
        "Concurrency: {} synthetic tools with skills; readers loop `snapshot()` + `ContextBuilder::select` (explain off); one writer upserts one tool and commits every 1 ms; after {} untimed upserts, phases of {} s with {} readers, summed per reader count.",
        fmt_int(CONCURRENCY_N as u64),
        fmt_int(warm_up),
        duration.as_secs(),
        concurrency::PHASE_ORDER.map(|r| r.to_string()).join(", ")
    );
    println!();
    println!(
        "| readers | selects/s | ratio to 1 reader | writer commits (due) | longest `snapshot()` | versions seen by a reader | reader CPU share | selects per reader CPU-second |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let base = phases.first().map_or(1.0, |p| p.selects_per_sec());
    for p in phases {
        println!(
            "| {} | {} | {:.2}× | {} ({}) | {} | {} | {} | {} |",
            p.readers,
            fmt_int(p.selects_per_sec().round() as u64),
            p.selects_per_sec() / base,
            fmt_int(p.commits),
            fmt_int(p.commits_due),
            fmt_duration(p.max_snapshot),
            fmt_int(p.versions_seen),
            p.reader_cpu_share()
                .map_or("n/a".into(), |s| format!("{:.0}%", 100.0 * s)),
            p.selects_per_cpu_sec()
                .map_or("n/a".into(), |s| fmt_int(s.round() as u64)),
        );
    }
    println!(
        "Readers never wait on the writer: `Store::snapshot()` is an atomic load of the current snapshot (no lock), and select reads only that snapshot. \
         A reader CPU share well under 100% means the readers waited for a core (other processes, or the writer, on a 2-core machine); \
         equal selects per CPU-second with 1 and 2 readers means they did not slow each other down."
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_put_flat_first_and_add_it_when_left_out() {
        assert_eq!(
            parse_kinds("capstore-select"),
            Ok((vec![Kind::Flat, Kind::CapstoreSelect], true))
        );
        assert_eq!(
            parse_kinds("bm25-crate, flat,capstore-bm25"),
            Ok((vec![Kind::Flat, Kind::CapstoreBm25, Kind::Bm25Crate], false))
        );
        let all: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(parse_kinds(&all.join(",")), Ok((Kind::ALL.to_vec(), false)));
        let err = parse_kinds("flat,lucene").unwrap_err();
        assert!(err.contains("\"lucene\""), "{err}");
        assert!(err.contains(&all.join(", ")), "{err}");
    }
}
