//! Tools and skills made from the synthetic corpus, for benchmarks of the whole store and of
//! `ContextBuilder::select`. Shared by `capstore-peers` and the root `benches/select.rs` and
//! `benches/store_write.rs` (which include this file with `#[path]`); all declare
//! `mod synthetic;` at their crate root.
//!
//! - Tool `i`: name from document `i`'s first two words plus `_i`, description from the rest, a
//!   source (`server{i % 20}`), a tag (`tag{i % 50}`) and one parameter.
//! - Skill `j` bundles tools `10j .. 10j + 10`; its description is the first three description
//!   words of each of its tools; skill `j` depends on skill `j - 1` unless `j % 4 == 0`, so the
//!   dependency chains are four skills long.

// Each user needs part of it.
#![allow(dead_code)]

use capstore::skills::{SkillError, dependency_closure, register_skill};
use capstore::{SKILLS, Skill, Store, TOOLS, Tool};
use serde_json::json;

use crate::synthetic::Corpus;

/// Tools a skill bundles.
pub const TOOLS_PER_SKILL: usize = 10;
/// Length of a dependency chain of skills.
pub const SKILL_CHAIN: usize = 4;

/// A tool-like record from synthetic document `i` (its tokens `tokens`).
pub fn tool_from(corpus: &Corpus, i: usize, tokens: &[String]) -> Tool {
    let (head, rest) = tokens.split_at(tokens.len().min(2));
    let name = format!("{}_{i}", head.join("_"));
    let description = rest.join(" ");
    Tool::new(name, description)
        .with_source(format!("server{}", i % 20))
        .with_tags([format!("tag{}", i % 50)])
        .with_input_schema(json!({
            "type": "object",
            "properties": { "query": { "type": "string", "description": corpus.vocab[i % 500] } }
        }))
}

/// The first `n` documents of `corpus` as tools.
pub fn corpus_tools(corpus: &Corpus, n: usize) -> Vec<Tool> {
    (0..n)
        .map(|i| tool_from(corpus, i, &corpus.doc_tokens(i)))
        .collect()
}

/// Skill `j` over its slice of `tools` (see the module docs).
pub fn skill_for(j: usize, tools: &[Tool]) -> Skill {
    let description: Vec<&str> = tools
        .iter()
        .flat_map(|t| t.description.split(' ').take(3))
        .collect();
    let skill = Skill::new(format!("skill{j}"), description.join(" "))
        .with_tags([format!("tag{}", j % 50)]);
    // (A `match`, not `is_multiple_of`: the root crate's MSRV, 1.85, predates it.)
    match j % SKILL_CHAIN {
        0 => skill,
        _ => skill.with_dependencies([format!("skill{}", j - 1)]),
    }
}

/// A store holding `tools` bundled into skills (full groups of [`TOOLS_PER_SKILL`]; a last
/// partial group is registered as a skill too), in one write transaction.
pub fn store_with_skills(tools: &[Tool]) -> Store {
    let store = Store::new();
    store
        .write(|tx| {
            for (j, group) in tools.chunks(TOOLS_PER_SKILL).enumerate() {
                register_skill(tx, skill_for(j, group), group.to_vec())?;
            }
            Ok::<_, SkillError>(())
        })
        .expect("synthetic skills and tools are valid");
    store
}

/// The store [`store_with_skills`] makes, the same rows (`synthetic_store_tests.rs` in
/// `capstore-peers` checks it), written as a catalog load writes them: two bulk inserts
/// (`WriteTxn::insert_many`), every tool already owned by its skill, then every skill with its
/// tools' names. About 3× faster to build at 10,000 and 100,000 tools, but the text indexes
/// differ: each table's is one segment, where registering skill by skill leaves about
/// 2 log₃ N beyond 4,096 documents (below that, the commit merges them into one either way).
/// The same results and scores, but a select on it took about 0.65× the time at 10,000 and
/// 100,000 tools (`capstore-peers`).
pub fn store_with_skills_bulk(tools: &[Tool]) -> Store {
    let mut owned = Vec::with_capacity(tools.len());
    let mut skills = Vec::with_capacity(tools.len().div_ceil(TOOLS_PER_SKILL));
    for (j, group) in tools.chunks(TOOLS_PER_SKILL).enumerate() {
        let mut skill = skill_for(j, group);
        skill.tools = group.iter().map(Tool::qualified_name).collect();
        for tool in group {
            owned.push(Tool {
                skills: vec![skill.name.clone()],
                ..tool.clone()
            });
        }
        skills.push(skill);
    }
    let names: Vec<String> = skills.iter().map(|s| s.name.clone()).collect();
    let store = Store::new();
    store
        .write(|tx| {
            tx.insert_many(&TOOLS, owned)?;
            tx.insert_many(&SKILLS, skills)?;
            // What `register_skill` checks of each: its dependencies registered, no cycle.
            dependency_closure(tx.view(), &names)?;
            Ok::<_, SkillError>(())
        })
        .expect("synthetic skills and tools are valid");
    store
}
