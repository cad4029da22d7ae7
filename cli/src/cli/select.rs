//! `capstore select "MESSAGE"`: the tools a ContextBuilder sends for one message, with reasons.

use std::time::Instant;

use capstore::TOOLS;
use capstore::bm25::Explanation;
use capstore::context::{
    ContextBuilder, Reason, Selection, Shape, SkillMatch, Turn, estimate_tokens,
};
use capstore::provider::{Provider, ToolExport, ToolSearch};

use super::args::{Args, SourceArgs, count, unknown};
use super::hybrid::HybridArgs;
use super::source::{self, Loaded};

pub(crate) struct SelectArgs {
    message: String,
    source: SourceArgs,
    max_tools: Option<usize>,
    explain: bool,
    json: bool,
    provider: Provider,
    defer: bool,
    hybrid: HybridArgs,
}

pub(crate) fn parse(args: &[String]) -> Result<SelectArgs, String> {
    let mut words = Vec::new();
    let mut parsed = SelectArgs {
        message: String::new(),
        source: SourceArgs::default(),
        max_tools: None,
        explain: false,
        json: false,
        provider: Provider::OpenAiChat,
        defer: false,
        hybrid: HybridArgs::default(),
    };
    let mut args = Args::new(args);
    while let Some(arg) = args.next() {
        if parsed.source.accept(arg, &mut args)? || parsed.hybrid.accept(arg, &mut args)? {
            continue;
        }
        match arg {
            "--max-tools" => parsed.max_tools = Some(count(arg, args.value(arg)?, 1, 10_000)?),
            "--explain" => parsed.explain = true,
            "--json" => parsed.json = true,
            "--defer" => parsed.defer = true,
            "--provider" => parsed.provider = provider(args.value(arg)?)?,
            flag if flag.starts_with("--") => return Err(unknown("select", flag)),
            word => words.push(word),
        }
    }
    parsed.message = words.join(" ");
    if parsed.message.trim().is_empty() {
        return Err(
            "select: give a message, e.g. capstore select \"what's the weather in Oslo\"".into(),
        );
    }
    if parsed.defer && ToolSearch::for_provider(parsed.provider).is_none() {
        return Err(
            "select: --defer needs --provider anthropic or openai-responses, \
             whose APIs have a hosted tool search (OpenAI chat completions has none)"
                .into(),
        );
    }
    Ok(parsed)
}

fn provider(name: &str) -> Result<Provider, String> {
    match name {
        "openai" | "openai-chat" => Ok(Provider::OpenAiChat),
        "openai-responses" => Ok(Provider::OpenAiResponses),
        "anthropic" => Ok(Provider::Anthropic),
        other => Err(format!(
            "--provider: `{other}` is not one of openai, openai-responses, anthropic"
        )),
    }
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        super::push_output(super::HELP.to_string());
        return Ok(());
    }
    let args = parse(args)?;
    let (retrieval, embedder) = args.hybrid.load()?;
    let loaded = source::load(&args.source)?;
    let mut policy = loaded.policy.clone();
    if let Some(max) = args.max_tools {
        policy = policy.with_tool_limit(max);
    }
    policy.explain = args.explain;
    policy.retrieval = retrieval;
    let mut builder = ContextBuilder::with_policy(policy).map_err(|e| e.to_string())?;
    if let Some(embedding) = embedder {
        embedding.embed_tools(&loaded.store)?;
        builder = builder.with_embedder(embedding.model());
    }
    let snap = loaded.store.snapshot();
    let turn = Turn::new(args.message.clone());
    let selection = builder.select(&snap, &turn).map_err(|e| e.to_string())?;
    // Timed on a second, identical selection: the first also pays for one-off set-up (the
    // per-thread search scratch), which an agent loop pays once. (With --embedder this one
    // also lays the vectors out for later turns, and is timed with that.)
    let started = Instant::now();
    let again = builder.select(&snap, &turn).map_err(|e| e.to_string())?;
    let took = started.elapsed();
    debug_assert_eq!(again, selection);
    if args.json {
        let export = ToolExport::for_snapshot(&snap).map_err(|e| e.to_string())?;
        let mut request = serde_json::Map::new();
        match ToolSearch::for_provider(args.provider).filter(|_| args.defer) {
            Some(search) => {
                let tools = export
                    .with_deferred(search, &snap, &selection)
                    .map_err(|e| e.to_string())?;
                request.insert("tools".into(), tools.into());
                // The SDKs' name for the `anthropic-beta` header's values.
                if let Some(beta) = search.anthropic_beta() {
                    request.insert("betas".into(), serde_json::json!([beta]));
                }
            }
            None => {
                let tools = export.selection_json(args.provider, &selection);
                request.insert("tools".into(), tools.into());
            }
        }
        let text = serde_json::to_string_pretty(&request).map_err(|e| e.to_string())?;
        say!("{text}");
        return Ok(());
    }
    let hints = builder.policy().hints.hints(&args.message);
    let hints: Vec<String> = hints
        .iter()
        .map(|h| match h.shape {
            Some(shape) => format!("{} ({}) → {}", h.read, shape_label(shape), h.terms),
            None => format!("{:?} → {}", h.read, h.terms),
        })
        .collect();
    print_table(
        &args.message,
        &hints,
        &loaded,
        &selection,
        took.as_secs_f64() * 1e6,
    )
}

/// A shape as `capstore select` names it.
fn shape_label(shape: Shape) -> &'static str {
    match shape {
        Shape::Channel => "a channel",
        Shape::IssueNumber => "an issue number",
        Shape::Mention => "a mention",
        Shape::EmailAddress => "an email address",
        Shape::Url => "a URL",
        Shape::FilePath => "a file",
        Shape::PhoneNumber => "a phone number",
    }
}

/// `hints`: what the message's hints added to its query, as `read → terms`.
fn print_table(
    message: &str,
    hints: &[String],
    loaded: &Loaded,
    selection: &Selection,
    micros: f64,
) -> Result<(), String> {
    let snap = loaded.store.snapshot();
    let all_tokens: usize = snap
        .iter(&TOOLS)
        .map_err(|e| e.to_string())?
        .map(|(_, tool)| estimate_tokens(tool))
        .sum();
    let total = snap.count(&TOOLS).map_err(|e| e.to_string())?;
    say!("message: {message:?}");
    if !hints.is_empty() {
        say!("hints: {}", hints.join("; "));
    }
    let sent_tokens: usize = selection
        .tools
        .iter()
        .map(|t| estimate_tokens(&t.tool))
        .sum();
    say!(
        "{}: {} of {total} tools selected in {micros:.0} µs; ~{sent_tokens} tokens of definitions instead of ~{all_tokens} for all",
        loaded.label,
        selection.tools.len(),
    );
    // Why the list has the size it has: the message's asks, and the limit or budget they set.
    say!("list size: {}", selection.size);
    if !selection.skills.is_empty() {
        let skills: Vec<String> = selection
            .skills
            .iter()
            .map(|s| match s.how {
                SkillMatch::Matched => format!("{} ({:.2})", s.name, s.score),
                how => format!("{} ({how})", s.name),
            })
            .collect();
        say!("skills: {}", skills.join(", "));
    }
    if selection.no_match {
        say!("nothing in the message matched a tool or skill: sending the no-match set");
    }
    say!();
    say!(" #  {:<34} {:>9}  why", "tool", "relevance");
    for (i, tool) in selection.tools.iter().enumerate() {
        // The strongest reasons; the rest are more paths to the same skill.
        let mut why: Vec<String> = tool
            .reasons
            .iter()
            .take(2)
            .map(ToString::to_string)
            .collect();
        if let Some(bm25) = tool
            .reasons
            .iter()
            .skip(2)
            .find(|r| matches!(r, Reason::Retrieved { .. } | Reason::Hybrid { .. }))
        {
            why.push(bm25.to_string());
        }
        // Pinned and named tools are in by rule, not by a score.
        let relevance = if tool.score > 0.0 {
            format!("{:.2}", tool.score)
        } else {
            "-".to_string()
        };
        say!(
            "{:>2}  {:<34} {:>9}  {}",
            i + 1,
            tool.key,
            relevance,
            why.join("; ")
        );
        for reason in &tool.reasons {
            if let Reason::Retrieved {
                explanation: Some(explanation),
                ..
            }
            | Reason::Hybrid {
                explanation: Some(explanation),
                ..
            } = reason
            {
                say!("    {:<34}            {}", "", terms(explanation));
            }
        }
    }
    let near: Vec<String> = selection
        .dropped
        .iter()
        .take(5)
        .map(|d| format!("{} ({})", d.key, d.reason))
        .collect();
    if !near.is_empty() {
        say!("\nnear misses: {}", near.join(", "));
    }
    Ok(())
}

/// The terms that contributed to a BM25 score, largest first: `flight 3.12 + lisbon 2.40`.
pub(crate) fn terms(explanation: &Explanation) -> String {
    let mut parts: Vec<_> = explanation.terms.iter().filter(|t| t.score > 0.0).collect();
    parts.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.term.cmp(&b.term))
    });
    let parts: Vec<String> = parts
        .iter()
        .map(|t| format!("{} {:.2}", t.term, t.score))
        .collect();
    parts.join(" + ")
}
