//! `capstore eval`: measures tool selection on a labelled catalog (see the library's `eval`
//! module).

use std::io::Write;

use super::args::{Args, SourceArgs, count, real};
use super::hybrid::HybridArgs;
use capstore::context::{ContextBuilder, SelectionPolicy};
use capstore::eval::{
    ConversationReport, EvalConfig, EvalReport, learn_from_conversations, load_conversations,
    load_queries, load_tools, run as run_eval, run_conversations, run_conversations_learning,
    run_with_embedder,
};

const HELP: &str = "\
USAGE:
    capstore eval --tools FILE --queries FILE [OPTIONS]
    capstore eval --tools FILE --queries FILE --embedder DIR [--lexical-weight W] [--depth N]
                  [--vector-cache FILE]
    capstore eval --conversations FILE [SOURCE] [--policy JSON] [--turns-out FILE]
                  [--embedder DIR [--lexical-weight W] [--depth N] [--vector-cache FILE]]
                  [--no-learning | --learn-from FILE... | --usage FILE] [--usage-out FILE]
                  [--sweep [--plot FILE.svg]]

CONVERSATIONS (multi-turn; see the library's `eval` module for the file format):
    --conversations FILE      scripted conversations, one JSON object a line; tools from the
                              bundled catalog unless --catalog / --mcp / --mcp-config is given
    --policy JSON             selection policy fields over the default, e.g. '{\"max_tools\": 12}'
                              (the catalog's pinned tools are added)
    --turns-out FILE          write each turn ({conversation, turn, sent, missed, tokens, ...}) a line
    --no-learning             nothing is learned from the turns' calls (the cold figure); by
                              default each turn's calls (`used`, else `gold`) are counted into
                              the usage table after the turn is scored, as a deployed agent
                              learns from its own conversations as they go
    --learn-from FILE         count the calls of these conversations first, without scoring
                              them (repeatable): an agent that has already run them
    --usage FILE              start from the usage kept in FILE (`capstore serve` writes one)
    --usage-out FILE          write what the run learned to FILE (`capstore select --usage FILE`)
    --sweep                   run a grid of list settings (tools a turn, tools in the list, tools
                              the message alone brings, the conversation's tools that may
                              re-pack a full list), lexical and, with --embedder, hybrid; print
                              one line a setting (the default marked *)
    --plot FILE.svg           with --sweep: recall against tokens a turn, the default marked
    --embedder DIR ...        hybrid retrieval for every turn, as for single queries below

EVAL OPTIONS:
    --tools FILE              tools, one JSON object a line (id, name, description, parameters, tags)
    --queries FILE            queries, one JSON object a line (id, query, gold, split)
    --k N                     tools selected per query (default 10)
    --run-out FILE            write {\"query_id\", \"ranked\": [tool ids]} a line, per query
    --split NAME              evaluate only the queries of this split
    --embedder DIR            hybrid retrieval: BM25 fused with all-MiniLM-L6-v2 read from DIR
                              (scripts/minilm.sh fetches it); embeds every tool and query first
    --lexical-weight W        one share of BM25 in the fused score for every query, 0 to 1
                              (0 ranks by the embedder alone; default: 0.2 to 0.85, following
                              how much of the message BM25 matches and how clearly the
                              embedder singles one tool out)
    --depth N                 how many of each ranking's best are fused (default 40)
    --vector-cache FILE       keep the vectors of the tools and queries in FILE (created if
                              missing): a second run embeds nothing. With --conversations,
                              only the tools' vectors are kept
CONFIG FLAGS (levers; defaults are the store's own):
    --no-split-identifiers    do not split getWeather / get.weather / v2 into parts
    --no-stop-words           keep function words
    --stemming | --no-stemming  light English stemming on / off
    --no-params               leave parameter names and descriptions out of the index
    --no-tags                 leave tags out of the index
    --field-weight FIELD=W    weight of a field (name, description, tags, params, param_docs, skills)
    --k1 X, --b X             BM25 parameters
    --no-exact-names          do not rank tools named in the query first
";

pub(crate) struct EvalArgs {
    tools: String,
    queries: String,
    run_out: Option<String>,
    split: Option<String>,
    config: EvalConfig,
    hybrid: HybridArgs,
}

pub(crate) fn parse_eval(args: &[String]) -> Result<Option<EvalArgs>, String> {
    let mut tools = None;
    let mut queries = None;
    let mut run_out = None;
    let mut split = None;
    let mut config = EvalConfig::default();
    let mut hybrid = HybridArgs::default();
    let mut it = Args::new(args);
    while let Some(flag) = it.next() {
        if hybrid.accept(flag, &mut it)? {
            continue;
        }
        let mut value = || it.value(flag).map(str::to_owned);
        match flag {
            "-h" | "--help" => return Ok(None),
            "--tools" => tools = Some(value()?),
            "--queries" => queries = Some(value()?),
            "--run-out" => run_out = Some(value()?),
            "--split" => split = Some(value()?),
            "--k" => config.k = count(flag, &value()?, 1, 10_000)?,
            "--k1" => config.text.index.params.k1 = real(flag, &value()?, 0.0, 100.0)? as f32,
            "--b" => config.text.index.params.b = real(flag, &value()?, 0.0, 1.0)? as f32,
            "--no-split-identifiers" => config.text.tokenizer.split_identifiers = false,
            "--no-stop-words" => config.text.tokenizer.stop_words = false,
            "--stemming" => config.text.tokenizer.stemming = true,
            "--no-stemming" => config.text.tokenizer.stemming = false,
            "--no-exact-names" => config.match_exact_names = false,
            "--no-params" => {
                for field in ["params", "param_docs"] {
                    config.text.index.field_weights.insert(field.into(), 0.0);
                }
            }
            "--no-tags" => {
                config.text.index.field_weights.insert("tags".into(), 0.0);
            }
            "--field-weight" => {
                let spec = value()?;
                let (field, weight) = spec
                    .split_once('=')
                    .ok_or_else(|| format!("--field-weight: expected FIELD=W, got `{spec}`"))?;
                let weight = real(flag, weight, 0.0, 1_000.0)? as f32;
                config.text.index.field_weights.insert(field.into(), weight);
            }
            other => {
                return Err(format!(
                    "eval: unknown flag `{other}` (try `capstore eval --help`)"
                ));
            }
        }
    }
    let tools = tools.ok_or("eval: --tools FILE is required")?;
    let queries = queries.ok_or("eval: --queries FILE is required")?;
    Ok(Some(EvalArgs {
        tools,
        queries,
        run_out,
        split,
        config,
        hybrid,
    }))
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if args.iter().any(|a| a == "--conversations") {
        return run_conversation_eval(args);
    }
    let Some(args) = parse_eval(args)? else {
        super::push_output(HELP.to_string());
        return Ok(());
    };
    super::source::progress(&format!("loading {} and {}", args.tools, args.queries));
    let tools = load_tools(&args.tools).map_err(|e| e.to_string())?;
    let mut queries = load_queries(&args.queries).map_err(|e| e.to_string())?;
    if let Some(split) = &args.split {
        queries.retain(|q| q.split.as_deref() == Some(split.as_str()));
        if queries.is_empty() {
            return Err(format!("no query has split `{split}`"));
        }
    }
    super::source::progress(&format!(
        "indexing {} tools and running {} queries",
        tools.len(),
        queries.len()
    ));
    let (retrieval, embedder) = args.hybrid.load()?;
    let config = EvalConfig {
        retrieval,
        ..args.config.clone()
    };
    let report = match &embedder {
        // A benchmark's queries are kept in the cache with its tools: a second run embeds
        // nothing.
        Some(embedding) => run_with_embedder(&tools, &queries, &config, embedding.cached()),
        None => run_eval(&tools, &queries, &config),
    }
    .map_err(|e| e.to_string())?;
    if let Some(embedding) = &embedder {
        embedding.save()?;
    }
    if let Some(path) = &args.run_out {
        write_jsonl(path, &report.runs).map_err(|e| format!("{path}: {e}"))?;
    }
    print_report(&args, &config, tools.len(), &report);
    Ok(())
}

/// Writes `rows` to `path`, one JSON object a line (`--run-out`, `--turns-out`).
fn write_jsonl<T: serde::Serialize>(path: &str, rows: &[T]) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    for row in rows {
        serde_json::to_writer(&mut out, row)?;
        out.write_all(b"\n")?;
    }
    out.flush()
}

fn print_report(args: &EvalArgs, c: &EvalConfig, tools: usize, report: &EvalReport) {
    let m = &report.metrics;
    say!("tools: {tools} in file, {} registered", report.registered);
    say!(
        "queries: {}{}",
        m.queries,
        args.split
            .as_deref()
            .map(|s| format!(" (split {s})"))
            .unwrap_or_default()
    );
    say!(
        "config: k={} k1={} b={} split_identifiers={} stop_words={} stemming={} exact_names={} field_weights={:?}",
        c.k,
        c.text.index.params.k1,
        c.text.index.params.b,
        c.text.tokenizer.split_identifiers,
        c.text.tokenizer.stop_words,
        c.text.tokenizer.stemming,
        c.match_exact_names,
        c.text.index.field_weights,
    );
    say!(
        "index build: {:.1} ms",
        report.build_time.as_secs_f64() * 1e3
    );
    if let Some(e) = &report.embedding {
        say!("retrieval: {:?}", c.retrieval);
        say!(
            "embedding: {} tools in {:.1} s ({:.0} tools/s), {} queries in {:.1} s ({:.0} queries/s)",
            e.tools,
            e.tools_time.as_secs_f64(),
            e.tools_per_second(),
            e.queries,
            e.queries_time.as_secs_f64(),
            e.queries_per_second()
        );
        if let Some(cache) = args.hybrid.cache() {
            say!("  (through the vector cache {cache}: only texts new to it ran the model)");
        }
    }
    say!(
        "selection: {:.0} queries/s ({:.2} s)",
        report.queries_per_second(),
        report.query_time.as_secs_f64()
    );
    say!("Recall@1 Recall@3 Recall@5 Recall@10 nDCG@10 MRR@10 C@10");
    say!(
        "{:.2} {:.2} {:.2} {:.2} {:.2} {:.2} {:.2}",
        m.recall_1,
        m.recall_3,
        m.recall_5,
        m.recall_10,
        m.ndcg_10,
        m.mrr_10,
        m.complete_10
    );
}

/// `capstore eval --conversations FILE`: the multi-turn figures of the library's
/// `run_conversations` over the command's tool source.
fn run_conversation_eval(args: &[String]) -> Result<(), String> {
    let mut sources = SourceArgs::default();
    let mut file = None;
    let mut policy = SelectionPolicy::default();
    let mut turns_out = None;
    let mut sweep = false;
    let mut plot = None;
    let mut hybrid = HybridArgs::default();
    let mut learning = true;
    let mut learn_from = Vec::new();
    let mut usage_out = None;
    let mut it = Args::new(args);
    while let Some(flag) = it.next() {
        if sources.accept(flag, &mut it)? || hybrid.accept(flag, &mut it)? {
            continue;
        }
        match flag {
            "--conversations" => file = Some(it.value(flag)?.to_owned()),
            "--policy" => {
                policy =
                    serde_json::from_str(it.value(flag)?).map_err(|e| format!("--policy: {e}"))?;
            }
            "--turns-out" => turns_out = Some(it.value(flag)?.to_owned()),
            "--no-learning" => learning = false,
            "--learn-from" => learn_from.push(it.value(flag)?.to_owned()),
            "--usage-out" => usage_out = Some(it.value(flag)?.to_owned()),
            "--sweep" => sweep = true,
            "--plot" => plot = Some(it.value(flag)?.to_owned()),
            other => return Err(super::args::unknown("eval --conversations", other)),
        }
    }
    let file = file.ok_or("eval: --conversations FILE is required")?;
    if plot.is_some() && !sweep {
        return Err("eval: --plot needs --sweep".into());
    }
    if sweep && turns_out.is_some() {
        return Err("eval: --turns-out writes one run's turns, not a --sweep's".into());
    }
    if !learning && (!learn_from.is_empty() || sources.usage.is_some()) {
        return Err(
            "eval: --no-learning starts from nothing learned: drop --learn-from / --usage".into(),
        );
    }
    let conversations = load_conversations(&file).map_err(|e| e.to_string())?;
    // The fusion flags are checked (and the model read) before the tools are loaded.
    let (retrieval, embedder) = hybrid.load()?;
    let loaded = super::source::load(&sources)?;
    for path in &learn_from {
        let earlier = load_conversations(path).map_err(|e| e.to_string())?;
        let turns = learn_from_conversations(&loaded.store, &earlier).map_err(|e| e.to_string())?;
        super::source::progress(&format!("learned from {turns} turns of {path}"));
    }
    for pinned in &loaded.policy.pinned_tools {
        if !policy.pinned_tools.contains(pinned) {
            policy.pinned_tools.push(pinned.clone());
        }
    }
    // Without --embedder the policy's own retrieval stands (lexical unless --policy says).
    if embedder.is_some() {
        policy.retrieval = retrieval;
    }
    if sweep {
        let hybrid = match embedder {
            Some(embedding) => {
                embedding.embed_tools(&loaded.store)?;
                Some((retrieval, embedding.model()))
            }
            None => None,
        };
        let points = super::sweep::sweep(&loaded.store, &policy, hybrid, &conversations, learning)?;
        print!("{}", super::sweep::table(&points));
        if let Some(path) = &plot {
            let title = format!("{file}: recall against tokens a turn");
            std::fs::write(path, super::sweep::svg(&points, &title))
                .map_err(|e| format!("{path}: {e}"))?;
        }
        return Ok(());
    }
    let mut builder = ContextBuilder::with_policy(policy).map_err(|e| e.to_string())?;
    if let Some(embedding) = embedder {
        embedding.embed_tools(&loaded.store)?;
        builder = builder.with_embedder(embedding.model());
    }
    let report = if learning {
        run_conversations_learning(&loaded.store, &builder, &conversations)
    } else {
        run_conversations(&loaded.store.snapshot(), &builder, &conversations)
    }
    .map_err(|e| e.to_string())?;
    if let Some(path) = &turns_out {
        write_jsonl(path, &report.turns).map_err(|e| format!("{path}: {e}"))?;
    }
    if let Some(path) = &usage_out {
        let rows = capstore::usage::save_file(&loaded.store.snapshot(), path)
            .map_err(|e| e.to_string())?;
        super::source::progress(&format!("usage: {rows} tools' rows written to {path}"));
    }
    print_conversations(&file, &loaded.label, &report);
    say!(
        "learning: {}",
        match (learning, learn_from.is_empty() && sources.usage.is_none()) {
            (false, _) => "off (--no-learning): nothing learned from calls".to_string(),
            (true, true) => "from each turn's calls as the conversations go".to_string(),
            (true, false) =>
                "from each turn's calls as they go, after what --learn-from / --usage gave"
                    .to_string(),
        }
    );
    Ok(())
}

fn print_conversations(file: &str, source: &str, report: &ConversationReport) {
    let m = &report.metrics;
    say!(
        "conversations: {} ({} turns) from {file}, over {source}",
        m.conversations,
        m.turns
    );
    say!(
        "recall of each turn's tools: {:.1}% (every tool sent: {:.1}% of turns); within one search: {:.1}%; at {:.1} tools, {:.0} tokens a turn",
        m.recall,
        m.complete,
        m.reachable,
        m.tools_per_turn,
        m.tokens_per_turn
    );
    for (kind, k) in &report.by_kind {
        say!(
            "  {kind} ({} turns): recall {:.1}%, every tool sent {:.1}%, within one search {:.1}%; at {:.1} tools, {:.0} tokens a turn",
            k.turns,
            k.recall,
            k.complete,
            k.reachable,
            k.tools_per_turn,
            k.tokens_per_turn
        );
    }
    say!(
        "prefix-stable follow-ups: {:.1}% of {} within one topic, {:.1}% of all {}",
        m.prefix_stable_same_topic,
        m.same_topic_follow_ups,
        m.prefix_stable,
        m.follow_ups
    );
    say!(
        "re-packs per topic switch: {:.2} on average, {} at most ({} switches; at most {} in any topic)",
        m.repacks_per_switch,
        m.max_repacks_after_switch,
        m.topic_switches,
        m.max_repacks_per_topic
    );
    say!(
        "tool definitions per turn: {:.1} tools, {:.0} tokens; cached prefix {:.0} tokens a follow-up ({:.1}%)",
        m.tools_per_turn,
        m.tokens_per_turn,
        m.cached_tokens_per_follow_up,
        m.cached_share
    );
    say!(
        "selection: {:.1} µs a turn",
        report.select_time.as_secs_f64() * 1e6 / m.turns.max(1) as f64
    );
}
