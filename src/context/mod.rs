//! Choosing, each turn, the tool definitions that reach the model.
//!
//! A [`ContextBuilder`] turns a [`Turn`] (the latest message, earlier ones, what the model used
//! and was sent before) into a [`Selection`] over one [`Snapshot`](crate::Snapshot):
//!
//! 1. **Query**: the message, plus earlier user messages with a decaying weight, plus the names
//!    of tools used recently; and what each message's [hints](HintPolicy) add (`#status` is a
//!    channel, "text her" an SMS, "ack" acknowledge).
//! 2. **Exact names** written in the message (`github/search`, `get_weather`, `` `fetch` ``)
//!    are taken first.
//! 3. **Skills** are searched by BM25; the best (above thresholds) bring their tools and their
//!    dependencies' tools. **Tools** are searched by BM25 directly too, skill or no skill (or,
//!    in [hybrid retrieval](#hybrid-retrieval), by BM25 and their vectors, fused).
//!    Pinned tools and skills are always in.
//! 4. **Policy** ([`SelectionPolicy`]): tag filters, score thresholds, tool and skill limits, a
//!    token budget, what to do when nothing matches.
//! 5. **The message alone** ([`MessagePolicy`]): each ask of a message of several (clauses,
//!    sentences, list items: [`asks`]) is searched on its own and brings its best tool; when
//!    the query read more than the message, the whole message is searched on its own too, and
//!    its best few tools join the turn's own, in front of the rest
//!    ([a turn's channels](#a-turns-channels)).
//! 6. **The request's size** ([`RequestPolicy`]): a request of several asks gets a budget in
//!    tokens that follows it, and the servers it needs, whole when they fit, then the
//!    message's ranking to the budget ([servers as units](#servers-as-units)).
//! 7. **Companions** ([`CompanionPolicy`]): the turn's tools bring the tools they need first,
//!    declared or learned from the agent's calls ([companions](#companions)).
//! 8. **The list across turns**: last turn's list is carried on and the turn's new tools are
//!    appended; a list grown past `max_tools` is re-packed by staleness (below).
//! 9. The [`Selection`] says, for each tool, why, and which channel brought it
//!    ([`Channel`]); for near misses, why not.
//!
//! Without a builder, [`all_tools`] sends everything. [`search_tools_definition`] and
//! [`search_tools`] let the model pull in what the builder did not pick.
//!
//! # A turn's channels
//! A follow-up's query mixes the message with its history (the earlier messages, decaying, and
//! the names of tools used lately), which serves the elliptical turn ("book that one") and
//! outvotes the message that plainly asks for something new ("what's the weather there?" after
//! a trip booked: eight travel tools the history matches rank above the forecast). So a turn's
//! tools come from three channels, merged by rule:
//!
//! | channel | what it searches | enters the list |
//! |---|---|---|
//! | [`Channel::Message`] | the message alone, with its hints (BM25; fused with the message's vector in hybrid retrieval); and each of its asks alone (likewise, each with its own vector) | each ask's best and the message's best few, always (appended if new) |
//! | [`Channel::Skill`] | the message's search, which matches skills by their text and finds the servers (skills with no text) a request needs by their tools ([units](#servers-as-units)) | a matched skill's tools where the search ranks them (a follow-up's: [`Channel::Conversation`]); a unit whole, within the request's budget |
//! | [`Channel::Conversation`] | the message with its history, as above | its best `max_turn_tools`; of its search hits new to the list, all but the best `repack_for_conversation` only while the list has room |
//! | [`Channel::Companion`] | the turn's tools' declared requirements and learned companions | appended after the turn's own, within `companions.max_tools` and the list's limits |
//! | [`Channel::Kept`] | last turn's list | in place; the stalest go first when room is needed |
//!
//! How many the message brings follows its evidence: none when its best tool scores under
//! `message.min_evidence` BM25 per word of the message (in hybrid retrieval, and the nearest
//! tool's cosine under `message.min_cosine`): an elliptical message has little; up to
//! `message.max_tools` of those within `message.min_relative_score` of its best otherwise. A
//! turn without history has one query, the message, and one channel (its tools are labelled
//! [`Channel::Skill`] when a matched skill brought them rather than their own text). Cost: a second BM25
//! search of the message's few terms, on follow-ups only (the vectors are searched once for
//! both).
//!
//! A message that asks for several things ("refund the last payment and email her a receipt",
//! "convert 20 liters to gallons. Afterwards, post the result on Twitter") names each in an
//! ask of its own: a clause, a sentence or a list item ([`asks`]). The whole message's ranking
//! is outweighed by its longest ask, or by a skill one ask matches, whose tools fill the list.
//! So in a message of two asks or more, each is searched alone too (BM25), and its best tool
//! (with up to `message.per_ask` in all, each within `message.min_relative_score` of it)
//! joins the message's ([`Reason::Ask`], which names the ask) when the ask's evidence is as
//! clear as the message channel asks (`message.min_evidence` a word). Two asks name two
//! things: when two rank one tool first ("run the linter", "commit it all as 'lint + fmt'"),
//! the ask that loses less by going on to its next brings that instead; a matched skill's or the
//! conversation's other tools make room for them, never the other way round. A follow-up, and
//! a message of more clauses than `message.max_asks`, is read by its sentences and lines only.
//! In hybrid retrieval each ask is embedded too and its search fused with its nearest tool
//! vectors, and the message's vector is the mean of its asks' (for a message of at most
//! [`GIST_WORDS`] words whose caller gave no [`Turn::query_vector`]): the model reads the
//! same words as for the message alone, one ask at a time, so an ask's best is the hybrid
//! ranking's without a second pass over the message. Cost: one BM25 search of a few terms per
//! ask (in hybrid retrieval, `hybrid.depth` deep, and one scan of the vectors), for messages
//! of several asks only; hybrid, the multi-ask set's turns took 20.9 ms rather than 16.8 (the
//! asks' shorter passes and their searches; BENCHMARKS.md, "Whole requests").
//!
//! The built-in `search_tools` ([`search_tools_definition_for`]) describes what it can find,
//! the skills and servers of the catalog ([`catalog_outline`]), so a model knows to search
//! when a task needs what was not sent.
//!
//! # Servers as units
//! A request of several asks (a long task's description: "plan a bike ride around the park,
//! check the weather that morning, find a café on the way") often needs a few servers whole,
//! and an MCP server publishes no description for the skills' search to match. So a request
//! of two asks or more is sized by a budget in tokens that follows it
//! ([`RequestPolicy`]: `tokens_per_ask` an ask, at most the caller's `max_tokens`), and the
//! skills with no text of their own are scored by their best tool in the message's ranking:
//! those the request clearly needs come whole when they fit ([`Reason::Unit`]); one too large
//! for what is left gives its place to the next, its best tools still coming by the message's
//! own ranking, which fills what the units and the turn's own tools leave of the budget: a
//! long task's list is as long as its budget. [`Selection::size`] says which way the list was sized
//! ([`ListSize`]). A message of one ask, or a catalog whose skills all have text, is sized by
//! the tool limits as before. With hybrid retrieval, a message longer than [`GIST_WORDS`]
//! words is embedded as its [`gist`] (its first content words), which keeps a 2,000-character
//! task's embedding to a fraction of the model's 256-token window.
//!
//! # Companions
//! Some tools are needed although no message names them: the environment's prerequisites
//! (the brake before the engine, `cd` before `mv`, a login before a post). The agent's own
//! calls teach them ([`usage`](crate::usage): the executor, the agent loop and `capstore
//! serve` record what they run), and a tool may declare them
//! ([`Tool::requires`](crate::Tool::requires)). Once the turn's channels have chosen its own
//! tools, each brings its companions ([`Channel::Companion`]):
//!
//! - what it requires, always (a bare name is looked up in the tool's own source first);
//! - what the agent called with it in at least `companions.min_share` (0.3) of the turns that
//!   called it, and in at least `companions.min_turns` (2) of them ([`Reason::Companion`]
//!   says how many: "called before car/startEngine in 23 of its 25 turns");
//!
//! declared first, then by share, at most `companions.max_tools` (4) a turn, appended after
//! the turn's own tools (a companion already in the list keeps its place), within `max_tools`
//! and the token budget; a companion the tag filters exclude, or that is not in the snapshot
//! (removed, or held back by a gateway's quarantine, which keeps it out of the store), never
//! comes. Nothing declared and nothing learned: no companion, and the selection is what it was
//! without this step. Cost: a usage row's look-up per tool of the turn.
//!
//! # The tool list across turns
//! Providers cache a request by its prefix, and the tool definitions come first in it (OpenAI's
//! and Anthropic's requests alike): a turn whose tool list extends the last one, with nothing
//! removed or moved, reuses the whole cached prefix; a list changed at position *i* loses the
//! cache from *i* on, for the tools and the whole conversation after them. Recall comes first
//! all the same: a tool the message needs is always sent. So, each turn:
//!
//! 1. The turn selects its own tools (at most `max_turn_tools` with its history, and
//!    `message.max_tools` more on the message alone: [a turn's channels](#a-turns-channels)).
//! 2. Last turn's list ([`Turn::previous`]) stays in place, in its order; a tool the turn
//!    needs keeps its place there. The turn's other tools are appended at the end.
//!    Only some of the new tools may make room for themselves: the pinned ones, the
//!    message's, those the model found with `search_tools` or called lately, and the best
//!    `repack_for_conversation` (1) of the conversation's search hits. The conversation's
//!    other hits (its ranking's tail, read as much from the history as from the message) fill
//!    the room the list has left and wait otherwise ([`DropReason::ListFull`], or
//!    [`DropReason::TokenBudget`] when the budget is what ran out): a follow-up
//!    makes room for what its message asks, not for its history's tail.
//! 3. If the tools that may make room do not fit in `max_tools` (or the token budget), the
//!    list takes all the turn's tools and is **re-packed** once: tools carried from earlier
//!    turns are evicted, the stalest first (turns since a turn needed it or the model called
//!    it: [`PreviousTool::idle_turns`], which a [`Conversation`] keeps; among equals the later
//!    in the list, which keeps more of the prefix), until a whole turn's tools fit again
//!    (`max_tools - max_turn_tools - message.max_tools`, the message's share counted when the
//!    policy reads a turn's history; and the same share of the budget). That room lets the
//!    next turns append without another re-pack, so a topic switch costs one re-pack rather
//!    than a little churn every turn. A tool the turn needs is never evicted.
//!
//! Evicted tools are reported in [`Selection::dropped`] as [`DropReason::Stale`]. Cost: a
//! hash map of the turn's tools and one pass over last turn's list (a look-up per carried
//! tool). The defaults were chosen on the development conversations in
//! `bench/conversations/` from the curve of recall against tokens a turn that
//! `capstore eval --conversations FILE --sweep --plot FILE.svg` draws (BENCHMARKS.md,
//! "Conversations").
//!
//! # Hybrid retrieval
//! With [`Retrieval::Hybrid`] in the policy and an [`Embedder`](crate::embed::Embedder) on the
//! builder ([`ContextBuilder::with_embedder`]), step 3's search over tools is BM25 and the
//! nearest tool vectors, fused; the store's tools must have vectors from the same model
//! ([`embed_missing`](crate::embed::embed_missing)), kept in the `vectors` table beside them.
//!
//! 1. The message is embedded (or its vector taken from [`Turn::query_vector`]); BM25 gives its
//!    best `depth` tools, an exact cosine scan of every tool vector its `depth` nearest.
//! 2. Each side's scores are taken relative to its own best: BM25's over its best score (0 to
//!    1), the cosines between the `depth`-th (0) and the best (1). Relative scores keep a large
//!    BM25 lead, which ranks alone cannot: plain reciprocal-rank fusion (equal weights, k = 60)
//!    of the same two lists scores 78.0 nDCG@10 on Seal-Tools, against BM25's 86.4.
//! 3. The fused score is `w × lexical + (1 − w) × dense`, where the lexical weight `w` follows
//!    how sure each side is: a logistic curve, from `min_lexical_weight` (0.2: BM25 matched
//!    little, a paraphrase) to `max_lexical_weight` (0.85: the message spells out what the
//!    tool's text says), of the best BM25 score per word of the message, less the dense
//!    side's separation (how far the nearest tool's cosine stands above the second's; each
//!    over its scale, around its midpoint). One fixed weight cannot serve both kinds of
//!    message: on Seal-Tools the best fixed weight is about 0.85, on MetaTool about 0.3. The
//!    separation moves the weight towards the vectors when one tool stands out among them,
//!    which BM25's score alone cannot see. The midpoints are in BM25 score and cosine units
//!    and were chosen on the public sets (BENCHMARKS.md, "Hybrid retrieval"); on a catalog
//!    whose scores run higher, set [`HybridPolicy::fixed`] or move `evidence_midpoint`. A
//!    message of more than [`GIST_WORDS`] words, whose vector reads only its [`gist`], takes
//!    `max_lexical_weight`: BM25 read all of it (its score per word is low because it is long).
//! 4. The fused ranking takes the place of the BM25 hits in the rest of the selection: score
//!    thresholds apply to the fused score, and each tool's [`Reason::Hybrid`] carries the fused
//!    score, the BM25 score (with its explanation) and the cosine, either possibly absent, and
//!    the turn's lexical weight `w`.
//!
//! Deterministic for the same snapshot and turn: the scan and the fusion break ties by key.
//! Cost: the message's embedding (milliseconds, the model's) and a scan of every vector
//! (`dimensions` multiply-adds a tool); the rest is a lexical selection's. From the second turn
//! on one state of the vectors, the builder scans them laid out in one array (a copy it keeps,
//! `4 × dimensions` bytes a tool), about twice as fast as the table's rows.
//!
//! # Policy knobs and defaults
//! | knob | default |
//! |---|---|
//! | `max_tools` | 24 |
//! | `max_turn_tools` | 11 |
//! | `max_skills` | 3 |
//! | `min_score`, `min_relative_score` | 0, 0 |
//! | `skill_min_score`, `skill_min_relative_score` | 0, 0.5 |
//! | `skill_tool_weight` | 0.9 |
//! | `pinned_tools`, `pinned_skills` | none |
//! | `include_tags`, `exclude_tags` | none |
//! | `token_budget` | none |
//! | `history_turns`, `history_decay` | 2, 0.5 |
//! | `recent_tool_weight` | 0.5 |
//! | `keep_recently_used`, `keep_previous` | true, true |
//! | `repack_for_conversation` | 1 |
//! | `match_exact_names` | true |
//! | `on_no_match` | pinned only |
//! | `explain` | true |
//! | `message` | `max_tools` 4, `min_relative_score` 0.5, `min_evidence` 0.3, `min_cosine` 0.5, `per_ask` 1, `max_asks` 10 |
//! | `request` | `max_tokens` 4,000, `tokens_per_ask` 600, `depth` 60, `min_relative_score` 0.5 |
//! | `companions` | `max_tools` 4, `min_share` 0.3, `min_turns` 2 |
//! | `hints` | weight 1; shapes: channel, issue number, mention, email address, URL, file, phone number; [`HintPolicy::default_phrases`] |
//! | `retrieval` | lexical; hybrid: `depth` 40, lexical weight 0.2 to 0.85 around 0.5 BM25 a word and a 0.03 cosine separation |

mod asks;
mod budget;
mod builder;
mod candidates;
mod carry;
mod channels;
mod companions;
mod discovery;
mod error;
mod hints;
mod hybrid;
mod key_table;
mod policy;
mod query;
mod query_terms;
mod selection;
mod sentences;
mod turn;
mod units;

pub use asks::{ASK_WORDS, Ask, asks};
pub use budget::estimate_tokens;
pub use builder::{ContextBuilder, MAX_TOOLS_NEAR_MISSES};
pub use discovery::{
    FoundTool, OUTLINE_GROUPS, SEARCH_TOOLS, all_tools, catalog_outline, search_tools,
    search_tools_definition, search_tools_definition_for,
};
pub use error::SelectError;
pub(crate) use hints::HintMatcher;
pub use hints::{Hint, HintPolicy, PhraseHint, Shape, ShapeHint};
pub use hybrid::{GIST_WORDS, gist};
pub use policy::{
    CompanionPolicy, HybridPolicy, MessagePolicy, NoMatch, PolicyError, RequestPolicy, Retrieval,
    SelectionPolicy,
};
pub use query_terms::QueryTerms;
pub use selection::{
    Channel, DropReason, Dropped, ListSize, MatchedSkill, Reason, Reasons, SelectedTool, Selection,
    SkillMatch,
};
pub use turn::{Conversation, PreviousTool, Turn};
