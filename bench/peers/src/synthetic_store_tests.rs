//! Tests of `synthetic_store.rs`, kept out of it: the root benches include that file with
//! `#[path]`, and lint it with `cfg(test)` on but no test harness.

use capstore::context::{ContextBuilder, SelectionPolicy, Turn};
use capstore::{SKILLS, Skill, TOOLS, Tool};

use crate::synthetic::{Corpus, CorpusSpec};
use crate::synthetic_store::{
    TOOLS_PER_SKILL, corpus_tools, store_with_skills, store_with_skills_bulk,
};

#[test]
fn bulk_store_holds_what_registering_each_skill_leaves() {
    // A last partial group; past 4,096 tools, where the text segments differ.
    let n = 5_003;
    let corpus = Corpus::generate(CorpusSpec::tool_like(n));
    let tools = corpus_tools(&corpus, n);
    let (bulk, single) = (store_with_skills_bulk(&tools), store_with_skills(&tools));
    let (bulk, single) = (bulk.snapshot(), single.snapshot());
    let tool_rows = |snap: &capstore::Snapshot| -> Vec<(String, Tool)> {
        snap.iter(&TOOLS)
            .expect("tools")
            .map(|(k, t)| (k.to_string(), t.clone()))
            .collect()
    };
    let skill_rows = |snap: &capstore::Snapshot| -> Vec<(String, Skill)> {
        snap.iter(&SKILLS)
            .expect("skills")
            .map(|(k, s)| (k.to_string(), s.clone()))
            .collect()
    };
    assert_eq!(tool_rows(&bulk).len(), n);
    assert_eq!(skill_rows(&bulk).len(), n.div_ceil(TOOLS_PER_SKILL));
    assert!(tool_rows(&bulk) == tool_rows(&single));
    assert!(skill_rows(&bulk) == skill_rows(&single));
    // The same search results (scores included) from both, tools and skills, and the same
    // selections.
    let builder = ContextBuilder::with_policy(SelectionPolicy {
        max_tools: 10,
        explain: false,
        ..SelectionPolicy::default()
    })
    .expect("valid policy");
    for q in corpus.queries.iter().take(50) {
        let message = q.join(" ");
        let hits = |snap: &capstore::Snapshot| {
            let tools: Vec<(String, f32)> = snap
                .search(&TOOLS, &message, 10)
                .expect("search")
                .into_iter()
                .map(|h| (h.key.to_string(), h.score))
                .collect();
            let skills: Vec<(String, f32)> = snap
                .search(&SKILLS, &message, 10)
                .expect("search")
                .into_iter()
                .map(|h| (h.key.to_string(), h.score))
                .collect();
            (tools, skills)
        };
        assert_eq!(hits(&bulk), hits(&single), "{message}");
        let selected = |snap: &capstore::Snapshot| {
            let selection = builder
                .select(snap, &Turn::new(message.as_str()))
                .expect("select");
            assert!(!selection.tools.is_empty(), "{message}");
            format!("{:?} {:?}", selection.tools, selection.skills)
        };
        assert_eq!(selected(&bulk), selected(&single), "{message}");
    }
}
