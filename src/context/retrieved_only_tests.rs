//! The direct path ([`ContextBuilder::fill_retrieved_only`]) against gathering and ranking the
//! candidates: a selection whose only candidates are the tools' search hits must come out the
//! same either way, under every policy knob that touches them.

use std::cell::Cell;

use crate::context::{NoMatch, SelectionPolicy, Turn};
use crate::store::Store;
use crate::tools::{TOOLS, Tool};

use super::ContextBuilder;

thread_local! {
    /// Set to gather the candidates even where the direct path could fill.
    static ALWAYS_GATHER: Cell<bool> = const { Cell::new(false) };
    /// Selections the direct path filled on this thread.
    static FILLED_DIRECTLY: Cell<usize> = const { Cell::new(0) };
}

pub(super) fn always_gather() -> bool {
    ALWAYS_GATHER.get()
}

pub(super) fn filled_directly() {
    FILLED_DIRECTLY.set(FILLED_DIRECTLY.get() + 1);
}

/// 60 tools over ten words, overlapping from tool to tool, some repeated (varied scores and
/// ties); a third tagged `net`, every fifth with a long description (token budgets bite).
fn catalog() -> Store {
    let words = [
        "file", "read", "write", "search", "issue", "email", "weather", "token", "repo", "disk",
    ];
    let store = Store::new();
    let written = store.write(|tx| {
        for i in 0..60usize {
            let mut text: Vec<&str> = (0..3)
                .map(|j| words[(i * 7 + j * 3) % words.len()])
                .chain((i % 3 == 0).then_some(words[i % words.len()]))
                .collect();
            if i % 5 == 0 {
                text.extend(["with", "a", "much", "longer", "description"].repeat(8));
            }
            let mut tool = Tool::new(format!("tool_{i:02}"), text.join(" "));
            if i % 3 == 1 {
                tool = tool.with_tags(["net"]);
            }
            tx.insert(&TOOLS, tool)?;
        }
        Ok::<_, crate::store::StoreError>(())
    });
    assert!(written.is_ok(), "catalog: {written:?}");
    store
}

fn policies() -> Vec<SelectionPolicy> {
    let base = SelectionPolicy::default();
    let mut out = Vec::new();
    for max_tools in [1, 3, 10, 40] {
        for explain in [false, true] {
            out.push(SelectionPolicy {
                max_tools,
                explain,
                ..base.clone()
            });
        }
    }
    let with = |f: &dyn Fn(&mut SelectionPolicy)| {
        let mut p = SelectionPolicy {
            max_tools: 5,
            ..base.clone()
        };
        f(&mut p);
        p
    };
    out.extend([
        with(&|p| p.min_score = 1.0),
        with(&|p| p.min_score = 100.0),
        with(&|p| p.min_relative_score = 0.6),
        with(&|p| p.min_relative_score = 0.99),
        with(&|p| {
            p.min_relative_score = 0.5;
            p.explain = true;
        }),
        with(&|p| p.include_tags = vec!["net".into()]),
        with(&|p| p.exclude_tags = vec!["net".into()]),
        with(&|p| p.token_budget = Some(120)),
        with(&|p| {
            p.min_score = 100.0;
            p.on_no_match = NoMatch::All;
        }),
        with(&|p| p.on_no_match = NoMatch::PinnedOnly),
        with(&|p| p.match_exact_names = false),
    ]);
    out
}

fn turns() -> Vec<Turn> {
    let mut turns: Vec<Turn> = [
        "read the file",
        "search my email and the weather",
        "file issue repo disk token",
        "write to disk",
        "weather",
        "nothing here matches",
        "the and of",
        "",
        "please call tool_07 for the weather",
    ]
    .into_iter()
    .map(Turn::new)
    .collect();
    // Turns that add candidates after the search (the direct path does not apply).
    turns.push(Turn::new("read the file").with_recent_tools(["tool_03"]));
    turns.push(Turn::new("search the repo").with_previous(["tool_11", "tool_12"]));
    turns
}

#[test]
fn filling_from_the_hits_directly_selects_as_gathering_them_does() {
    let store = catalog();
    let snap = store.snapshot();
    FILLED_DIRECTLY.set(0);
    let mut cases = 0;
    for policy in policies() {
        let builder = ContextBuilder::with_policy(policy.clone());
        let Ok(builder) = builder else {
            panic!("policy {policy:?}: {builder:?}");
        };
        for turn in turns() {
            ALWAYS_GATHER.set(false);
            let direct = builder.select(&snap, &turn);
            ALWAYS_GATHER.set(true);
            let gathered = builder.select(&snap, &turn);
            ALWAYS_GATHER.set(false);
            assert_eq!(direct, gathered, "{policy:?}\n{turn:?}");
            let json = |s: &_| serde_json::to_string(s).unwrap_or_default();
            assert_eq!(
                direct.as_ref().map(json),
                gathered.as_ref().map(json),
                "{turn:?}"
            );
            cases += 1;
        }
    }
    // The direct path filled the five turns that match by text alone under the policies that
    // keep a hit (86 of 209), and the others (recent, previous or named tools, no hit above
    // the thresholds) were gathered.
    let direct = FILLED_DIRECTLY.get();
    assert!(direct > cases / 3, "{direct} of {cases} filled directly");
    assert!(direct < cases, "every case filled directly");
}
