//! `capstore stats`: what the loaded catalog holds and what its index costs.

use capstore::context::estimate_tokens;
use capstore::{HOOKS, SKILLS, TOOLS};

use super::args::{Args, SourceArgs, unknown};
use super::source;

/// The sources of a `stats` command line; `None` for `--help`.
pub(crate) fn parse(args: &[String]) -> Result<Option<SourceArgs>, String> {
    let mut sources = SourceArgs::default();
    let mut it = Args::new(args);
    while let Some(arg) = it.next() {
        if arg == "-h" || arg == "--help" {
            return Ok(None);
        }
        if !sources.accept(arg, &mut it)? {
            return Err(unknown("stats", arg));
        }
    }
    Ok(Some(sources))
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let Some(sources) = parse(args)? else {
        super::push_output(super::HELP.to_string());
        return Ok(());
    };
    let loaded = source::load(&sources)?;
    let snap = loaded.store.snapshot();
    let err = |e: capstore::StoreError| e.to_string();
    let tools = snap.count(&TOOLS).map_err(err)?;
    let skills = snap.count(&SKILLS).map_err(err)?;
    let hooks = snap.count(&HOOKS).map_err(err)?;
    say!("source: {}", loaded.label);
    say!(
        "loaded in {:.1} ms as version {}",
        loaded.elapsed.as_secs_f64() * 1e3,
        snap.version()
    );
    say!("tools: {tools}, skills: {skills}, hooks: {hooks}");
    if !loaded.policy.pinned_tools.is_empty() {
        say!("pinned: {}", loaded.policy.pinned_tools.join(", "));
    }
    let sources: Vec<String> = snap
        .index_values(&TOOLS, "source")
        .map_err(err)?
        .map(|(source, n)| format!("{source} {n}"))
        .collect();
    say!("sources ({}): {}", sources.len(), sources.join(", "));
    let mut categories: Vec<(String, usize)> = snap
        .index_values(&SKILLS, "category")
        .map_err(err)?
        .map(|(c, n)| (c.to_string(), n))
        .collect();
    categories.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let categories: Vec<String> = categories.iter().map(|(c, n)| format!("{c} {n}")).collect();
    say!(
        "skill categories ({}): {}",
        categories.len(),
        categories.join(", ")
    );
    let with_deps = snap
        .iter(&SKILLS)
        .map_err(err)?
        .filter(|(_, s)| !s.dependencies.is_empty())
        .count();
    say!("skills with dependencies: {with_deps}");
    let mut tags: Vec<(String, usize)> = snap
        .index_values(&TOOLS, "tags")
        .map_err(err)?
        .map(|(t, n)| (t.to_string(), n))
        .collect();
    tags.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let top: Vec<String> = tags
        .iter()
        .take(10)
        .map(|(t, n)| format!("{t} {n}"))
        .collect();
    say!("tool tags ({}), most used: {}", tags.len(), top.join(", "));
    let index = snap.text_index(&TOOLS).map_err(err)?;
    let stats = index.stats();
    say!(
        "tool index: {} documents, average weighted length {:.1}",
        stats.n_docs,
        stats.avgdl
    );
    let all_tokens: usize = snap
        .iter(&TOOLS)
        .map_err(err)?
        .map(|(_, t)| estimate_tokens(t))
        .sum();
    say!(
        "all tool definitions: ~{all_tokens} tokens per request without selection (~{} per tool)",
        all_tokens / tools.max(1)
    );
    Ok(())
}
