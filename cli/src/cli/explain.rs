//! `capstore explain TOOL "MESSAGE"`: why one tool was, or was not, selected for a message.

use capstore::TOOLS;
use capstore::context::{ContextBuilder, Turn};
use capstore::provider::ToolExport;

use super::args::{SourceArgs, sources_and_words};
use super::source;

/// The sources, the tool and the message of an `explain` command line.
pub(crate) fn parse(args: &[String]) -> Result<(SourceArgs, String, String), String> {
    let (sources, words) = sources_and_words("explain", args)?;
    match words.split_first() {
        Some((tool, rest)) if !rest.is_empty() => Ok((sources, tool.to_string(), rest.join(" "))),
        _ => Err("explain: usage: capstore explain TOOL \"MESSAGE\"".into()),
    }
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        super::push_output(super::HELP.to_string());
        return Ok(());
    }
    let (sources, tool, message) = parse(args)?;
    let tool = tool.as_str();
    let loaded = source::load(&sources)?;
    let snap = loaded.store.snapshot();
    let export = ToolExport::for_snapshot(&snap).map_err(|e| e.to_string())?;
    let key = match source::resolve_tool(&snap, "explain", tool) {
        Ok(key) => key,
        Err(error) => {
            let held = loaded
                .live
                .as_ref()
                .and_then(|live| live.hub.held().into_iter().find(|held| held.key == tool));
            let Some(held) = held else {
                return Err(error);
            };
            // Held back by the trust file: never a candidate, and why.
            say!("tool: {tool}");
            say!("message: {message:?}");
            say!(
                "selected: no, quarantined: {}. Approve it with `capstore approve {tool} --mcp-config {}`",
                held.why,
                sources
                    .mcp_config
                    .as_deref()
                    .map_or(String::new(), |c| c.display().to_string())
            );
            return Ok(());
        }
    };

    let mut policy = loaded.policy.clone();
    policy.explain = true;
    let builder = ContextBuilder::with_policy(policy).map_err(|e| e.to_string())?;
    let selection = builder
        .select(&snap, &Turn::new(message.clone()))
        .map_err(|e| e.to_string())?;

    say!(
        "tool: {key} (sent to the model as `{}`)",
        export.export_name(&key).unwrap_or(&key)
    );
    say!("message: {message:?}");
    if let Some(at) = selection.tools.iter().position(|t| *t.key == *key) {
        let chosen = &selection.tools[at];
        let why: Vec<String> = chosen.reasons.iter().map(ToString::to_string).collect();
        say!(
            "selected: yes, #{} of {} in send order: {}",
            at + 1,
            selection.tools.len(),
            why.join("; ")
        );
    } else if let Some(dropped) = selection.dropped.iter().find(|d| *d.key == *key) {
        let was: Vec<String> = dropped.candidate.iter().map(ToString::to_string).collect();
        say!(
            "selected: no, a candidate ({}) dropped: {}",
            was.join("; "),
            dropped.reason
        );
    } else {
        say!("selected: no, not a candidate (no skill of it matched and BM25 did not rank it)");
    }

    let total = snap.count(&TOOLS).map_err(|e| e.to_string())?;
    let ranking = snap
        .search(&TOOLS, &message, total)
        .map_err(|e| e.to_string())?;
    match ranking.iter().position(|hit| *hit.key == *key) {
        Some(rank) => say!(
            "BM25: rank {} of {} matching tools (best {} at {:.2})",
            rank + 1,
            ranking.len(),
            ranking[0].key,
            ranking[0].score
        ),
        None => say!("BM25: no query term occurs in its text"),
    }
    if let Some(why) = snap
        .explain(&TOOLS, &key, &message)
        .map_err(|e| e.to_string())?
        .filter(|why| !why.terms.is_empty())
    {
        say!(
            "score {:.3} = Σ idf · tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl)):",
            why.score
        );
        say!(
            "  {:<16} {:>6} {:>6} {:>6} {:>7} {:>7} {:>7}",
            "term",
            "weight",
            "tf",
            "df",
            "idf",
            "dl",
            "score"
        );
        for term in &why.terms {
            say!(
                "  {:<16} {:>6.2} {:>6.1} {:>6} {:>7.3} {:>7.1} {:>7.3}",
                term.term,
                term.query_weight,
                term.tf,
                term.doc_freq,
                term.idf,
                term.dl,
                term.score
            );
        }
        if let Some(first) = why.terms.first() {
            say!("  (N = {}, avgdl = {:.1})", first.n_docs, first.avgdl);
        }
    }
    if let Some(record) = snap.get(&TOOLS, &key).map_err(|e| e.to_string())?
        && !record.skills.is_empty()
    {
        let matched: Vec<&str> = selection.skills.iter().map(|s| &*s.name).collect();
        for skill in &record.skills {
            let state = if matched.contains(&skill.as_str()) {
                "matched this turn"
            } else {
                "not matched"
            };
            say!("skill {skill}: {state}");
        }
    }
    Ok(())
}
