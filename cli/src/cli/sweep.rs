//! `capstore eval --conversations FILE --sweep [--plot FILE.svg]`: the multi-turn figures over a
//! grid of list settings (tools a turn selects, tools the list holds, tools the message alone
//! brings, the conversation's tools that may re-pack a full list), lexical and, with
//! `--embedder`, hybrid; a table on stdout and, with `--plot`, recall against tokens a turn as
//! an SVG with the default policy marked. What the default was chosen from (BENCHMARKS.md,
//! "Conversations").

use std::fmt::Write as _;
use std::sync::Arc;

use capstore::context::{ContextBuilder, MessagePolicy, Retrieval, SelectionPolicy};
use capstore::embed::{Embedder, VectorCache};
use capstore::eval::{
    ConversationMetrics, ScriptedConversation, run_conversations, run_conversations_learning,
};
use capstore::{Snapshot, Store, USAGE};

/// The grid: `max_turn_tools`, `max_tools`, `message.max_tools`, `repack_for_conversation`
/// (`usize::MAX`: all of them, as before it was a knob).
const TURN_TOOLS: [usize; 6] = [8, 9, 10, 11, 12, 13];
const LIST_TOOLS: [usize; 4] = [16, 20, 24, 28];
const MESSAGE_TOOLS: [usize; 4] = [0, 2, 3, 4];
const REPACK_TOOLS: [usize; 4] = [0, 1, 2, usize::MAX];

/// The tokens a turn the plot marks as the target (issue 38's).
const TOKEN_TARGET: f64 = 2100.0;

/// One setting of the grid and its figures.
pub(crate) struct Point {
    hybrid: bool,
    turn_tools: usize,
    list_tools: usize,
    message_tools: usize,
    repack_tools: usize,
    metrics: ConversationMetrics,
    default: bool,
}

/// Runs every setting of the grid over `conversations`: lexical, and hybrid when `embedder` is
/// given (`hybrid` is then the retrieval to use). `base` is the policy the grid varies.
///
/// With `learning`, each setting learns from the turns as they go, as `eval` does, starting
/// from the usage `store` holds now (restored before each run).
pub(crate) fn sweep(
    store: &Store,
    base: &SelectionPolicy,
    hybrid: Option<(Retrieval, Arc<dyn Embedder>)>,
    conversations: &[ScriptedConversation],
    learning: bool,
) -> Result<Vec<Point>, String> {
    let defaults = SelectionPolicy::default();
    let start = store.snapshot();
    let mut retrievals = vec![(Retrieval::Lexical, None)];
    if let Some((retrieval, model)) = hybrid {
        // Every setting embeds the same messages: once, kept in memory by a vector cache
        // that is never saved (its file is never written).
        let unsaved = std::env::temp_dir().join(format!(
            "capstore-sweep-{}.unsaved-vectors",
            std::process::id()
        ));
        let cache = VectorCache::open(model, unsaved).map_err(|e| e.to_string())?;
        retrievals.push((retrieval, Some(Arc::new(cache) as Arc<dyn Embedder>)));
    }
    let mut points = Vec::new();
    for (retrieval, embedder) in retrievals {
        for turn_tools in TURN_TOOLS {
            for list_tools in LIST_TOOLS.into_iter().filter(|&l| l >= turn_tools) {
                for (message_tools, repack_tools) in MESSAGE_TOOLS
                    .into_iter()
                    .flat_map(|m| REPACK_TOOLS.map(|r| (m, r)))
                {
                    let policy = SelectionPolicy {
                        max_turn_tools: turn_tools,
                        max_tools: list_tools,
                        message: MessagePolicy {
                            max_tools: message_tools,
                            ..base.message
                        },
                        repack_for_conversation: repack_tools,
                        retrieval,
                        ..base.clone()
                    };
                    let mut builder =
                        ContextBuilder::with_policy(policy).map_err(|e| e.to_string())?;
                    if let Some(embedder) = &embedder {
                        builder = builder.with_embedder(Arc::clone(embedder));
                    }
                    let report = if learning {
                        restore_usage(store, &start)?;
                        run_conversations_learning(store, &builder, conversations)
                    } else {
                        run_conversations(&start, &builder, conversations)
                    }
                    .map_err(|e| e.to_string())?;
                    points.push(Point {
                        hybrid: embedder.is_some(),
                        turn_tools,
                        list_tools,
                        message_tools,
                        repack_tools,
                        metrics: report.metrics,
                        default: turn_tools == defaults.max_turn_tools
                            && list_tools == defaults.max_tools
                            && message_tools == defaults.message.max_tools
                            && repack_tools == defaults.repack_for_conversation,
                    });
                }
            }
        }
    }
    Ok(points)
}

/// The grid as a table, one setting a line.
pub(crate) fn table(points: &[Point]) -> String {
    let mut out = String::from(
        "retrieval\tturn\tlist\tmessage\trepack\trecall\twithin_search\tstable\trepacks_per_switch\tmost_after_switch\ttools\ttokens\tuncached\tdefault\n",
    );
    for p in points {
        let m = &p.metrics;
        let _ = writeln!(
            out,
            "{}\t{}\t{}\t{}\t{}\t{:.1}\t{:.1}\t{:.1}\t{:.2}\t{}\t{:.1}\t{:.0}\t{:.0}\t{}",
            if p.hybrid { "hybrid" } else { "lexical" },
            p.turn_tools,
            p.list_tools,
            p.message_tools,
            repack_label(p.repack_tools),
            m.recall,
            m.reachable,
            m.prefix_stable_same_topic,
            m.repacks_per_switch,
            m.max_repacks_after_switch,
            m.tools_per_turn,
            m.tokens_per_turn,
            uncached(m),
            if p.default { "*" } else { "" },
        );
    }
    out
}

/// Recall against tokens a turn, every setting a dot, each retrieval's best trade (the
/// settings no other beats on both) joined by a line, the default ringed, the token target a
/// dashed line.
pub(crate) fn svg(points: &[Point], title: &str) -> String {
    const W: f64 = 760.0;
    const H: f64 = 460.0;
    const LEFT: f64 = 64.0;
    const RIGHT: f64 = 24.0;
    const TOP: f64 = 44.0;
    const BOTTOM: f64 = 56.0;
    let tokens = |p: &Point| p.metrics.tokens_per_turn;
    let recall = |p: &Point| p.metrics.recall;
    let lo_x = points.iter().map(tokens).fold(f64::INFINITY, f64::min);
    let hi_x = points
        .iter()
        .map(tokens)
        .fold(TOKEN_TARGET, f64::max)
        .max(lo_x + 100.0);
    let (x0, x1) = (
        (lo_x / 100.0).floor() * 100.0,
        (hi_x / 100.0).ceil() * 100.0,
    );
    let lo_y = points.iter().map(recall).fold(100.0, f64::min);
    let (y0, y1) = (((lo_y - 1.0) / 5.0).floor() * 5.0, 100.0);
    let x = |v: f64| LEFT + (v - x0) / (x1 - x0) * (W - LEFT - RIGHT);
    let y = |v: f64| TOP + (y1 - v) / (y1 - y0) * (H - TOP - BOTTOM);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="24" text-anchor="middle" font-size="15">{}</text>"#,
        W / 2.0,
        escape(title)
    );
    // Grid lines and axis labels.
    let mut v = x0;
    while v <= x1 + 0.5 {
        let _ = writeln!(
            s,
            r##"<line x1="{0:.1}" y1="{TOP}" x2="{0:.1}" y2="{1:.1}" stroke="#eee"/><text x="{0:.1}" y="{2:.1}" text-anchor="middle">{3}</text>"##,
            x(v),
            H - BOTTOM,
            H - BOTTOM + 16.0,
            v
        );
        v += if x1 - x0 > 1000.0 { 200.0 } else { 100.0 };
    }
    let mut v = y0;
    while v <= y1 + 0.01 {
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{0:.1}" x2="{1:.1}" y2="{0:.1}" stroke="#eee"/><text x="{2:.1}" y="{3:.1}" text-anchor="end">{4}%</text>"##,
            y(v),
            W - RIGHT,
            LEFT - 6.0,
            y(v) + 4.0,
            v
        );
        v += 5.0;
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">tokens of tool definitions a turn (mean)</text>"#,
        (LEFT + W - RIGHT) / 2.0,
        H - 14.0
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate(16 {}) rotate(-90)" text-anchor="middle">recall of each turn's tools</text>"#,
        (TOP + H - BOTTOM) / 2.0
    );
    let _ = writeln!(
        s,
        r##"<line x1="{0:.1}" y1="{TOP}" x2="{0:.1}" y2="{1:.1}" stroke="#555" stroke-dasharray="5 4"/><text x="{2:.1}" y="{3:.1}" fill="#555">target: ≤ 2,100 tokens</text>"##,
        x(TOKEN_TARGET),
        H - BOTTOM,
        x(TOKEN_TARGET) + 4.0,
        TOP + 12.0
    );
    for (hybrid, colour, name) in [(false, "#1f77b4", "lexical"), (true, "#d62728", "hybrid")] {
        let series: Vec<&Point> = points.iter().filter(|p| p.hybrid == hybrid).collect();
        if series.is_empty() {
            continue;
        }
        for p in &series {
            let _ = writeln!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{colour}" fill-opacity="0.35"><title>{name}: turn {}, list {}, message {}, re-pack for {}: {:.1}% at {:.0} tokens</title></circle>"#,
                x(tokens(p)),
                y(recall(p)),
                p.turn_tools,
                p.list_tools,
                p.message_tools,
                repack_label(p.repack_tools),
                recall(p),
                tokens(p)
            );
        }
        let mut frontier: Vec<&Point> = series
            .iter()
            .copied()
            .filter(|p| {
                !series.iter().any(|q| {
                    tokens(q) <= tokens(p)
                        && recall(q) >= recall(p)
                        && (tokens(q) < tokens(p) || recall(q) > recall(p))
                })
            })
            .collect();
        frontier.sort_by(|a, b| tokens(a).total_cmp(&tokens(b)));
        let line: Vec<String> = frontier
            .iter()
            .map(|p| format!("{:.1},{:.1}", x(tokens(p)), y(recall(p))))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="1.5"/>"#,
            line.join(" ")
        );
        if let Some(p) = series.iter().find(|p| p.default) {
            let _ = writeln!(
                s,
                r#"<circle cx="{0:.1}" cy="{1:.1}" r="7" fill="none" stroke="{colour}" stroke-width="2"/><text x="{2:.1}" y="{3:.1}" fill="{colour}">default ({name}): {4:.1}%, {5:.0} tokens</text>"#,
                x(tokens(p)),
                y(recall(p)),
                x(tokens(p)) + 10.0,
                y(recall(p)) + if hybrid { -10.0 } else { 18.0 },
                recall(p),
                tokens(p)
            );
        }
        let legend_y = TOP + 30.0 + if hybrid { 18.0 } else { 0.0 };
        let _ = writeln!(
            s,
            r#"<circle cx="{0:.1}" cy="{1:.1}" r="4" fill="{colour}"/><text x="{2:.1}" y="{3:.1}">{name}: every setting, and its best trades</text>"#,
            W - RIGHT - 250.0,
            legend_y,
            W - RIGHT - 240.0,
            legend_y + 4.0
        );
    }
    s.push_str("</svg>\n");
    s
}

/// The tokens of tool definitions a turn that a provider's prompt cache does not serve (the
/// tokens billed at the full price): a turn's tokens less the cached prefix, averaged over
/// every turn (a conversation's first is all uncached).
fn uncached(m: &ConversationMetrics) -> f64 {
    let cached = m.cached_tokens_per_follow_up * m.follow_ups as f64;
    m.tokens_per_turn - cached / m.turns.max(1) as f64
}

/// `repack_for_conversation` as the table and the plot show it.
fn repack_label(n: usize) -> String {
    if n == usize::MAX {
        "all".into()
    } else {
        n.to_string()
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Puts `store`'s usage table back as `start` held it: what a run learned is forgotten.
pub(crate) fn restore_usage(store: &Store, start: &Snapshot) -> Result<(), String> {
    store
        .write(|tx| {
            let now: Vec<String> = tx
                .view()
                .iter(&USAGE)?
                .keys()
                .map(|k| k.to_string())
                .collect();
            for key in now {
                tx.delete(&USAGE, &key)?;
            }
            for row in start.iter(&USAGE)?.records() {
                tx.insert(&USAGE, row.clone())?;
            }
            Ok::<_, capstore::StoreError>(())
        })
        .map(drop)
        .map_err(|e| e.to_string())
}
