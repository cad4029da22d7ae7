//! Usage: what the agent's own calls teach selection.
//!
//! Some tools are needed although no message names them: the environment's prerequisites
//! (press the brake before starting the engine, `cd` before `mv`, log in before posting). An
//! agent learns them by calling; so does capstore. Every turn's calls are counted into the
//! built-in [`USAGE`] table, one [`Usage`] row per tool, versioned in the
//! snapshots like every table, and a selection brings a tool's strong companions along with it
//! ([the companion channel](crate::context#companions)).
//!
//! ```text
//! calls of a turn (Executor, capstore serve, the agent loop) ──► UsageRecorder (in memory)
//!     turn ends ──► UsageQueue::push(TurnUse) (in memory; no transaction)
//!     batch due (64 turns, 1 s, flush, drop) ──► learn_all(tx, &[TurnUse]) ──► usage rows:
//!         turns, calls, sent → called, companions (together, before, next turn)
//! a later selection: a tool enters the list ──► its companions come too (ContextBuilder)
//! ```
//!
//! - **Counts, never arguments.** A row holds how many turns called the tool, how many
//!   calls, how often it was called when sent, and its [`MAX_COMPANIONS`] strongest
//!   companions: the tools called in the same turns (and which came first), and those called
//!   in the turn after.
//! - **The agent's own evidence.** Only calls the agent ran are counted, through a
//!   [`UsageRecorder`] (which [`Executor::with_usage`](crate::Executor::with_usage), the
//!   gateway and the agent loop feed); no server or catalog writes usage. Tools may also
//!   declare what they need first ([`Tool::requires`](crate::Tool::requires)), which the
//!   same channel uses, learned counts or none.
//! - **Removed tools stop counting.** A tool's row goes with the tool (not with a new
//!   version of it), and [`learn`] ignores calls of tools the store does not hold; a
//!   companion that is not in the store (removed, or held back by the gateway's quarantine,
//!   which keeps it out of the store) is never brought.
//!
//! - **Off the turn's path.** [`Chat`](crate::agent::Chat), the agent loop, the gateway and the
//!   Python conversation queue each finished turn on a [`UsageQueue`], which counts the turns
//!   into the table in batches (one transaction each, within [`BatchLimits`]) with the same
//!   rows as a transaction per turn; they flush it when they finish. A selection reads only
//!   rows written: a turn teaches the selections that start after its batch is written (see
//!   [`UsageQueue`] for the bounds and what a crash loses). The table's writes leave the
//!   `tools` table's version ([`Snapshot::table_version`](crate::Snapshot::table_version)) as
//!   it was, so what is cached on the tools (the export names) stays.
//!
//! # Cost
//! Recording a call is a push onto the conversation's list (the benchmark `usage` measures it,
//! BENCHMARKS.md). Ending a turn is a push onto the queue. A batch is one store transaction:
//! each row its turns name read and written once, and per turn, for *k* distinct calls, *k*²
//! small steps over their companions ([`learn`] writes one turn alone). A row is at most
//! [`MAX_COMPANIONS`] companions, about a kilobyte; rows exist only for tools sent or called.
//!
//! ```
//! use capstore::context::{Channel, ContextBuilder, Turn};
//! use capstore::usage::{TurnUse, learn};
//! use capstore::{Store, Tool, TOOLS};
//! let store = Store::new();
//! store.write(|tx| {
//!     tx.insert(&TOOLS, Tool::new("startEngine", "Start the car's engine").with_source("car"))?;
//!     tx.insert(&TOOLS, Tool::new("pressBrakePedal", "Press the brake pedal").with_source("car"))
//! })?;
//! for _ in 0..3 {
//!     store.write(|tx| learn(tx, &TurnUse::new(["car/pressBrakePedal", "car/startEngine"])))?;
//! }
//! let selection = ContextBuilder::new().select(&store.snapshot(), &Turn::new("start the engine"))?;
//! assert_eq!(selection.keys().collect::<Vec<_>>(), ["car/startEngine", "car/pressBrakePedal"]);
//! assert_eq!(selection.tools[1].channel, Channel::Companion);
//! assert_eq!(selection.tools[1].reasons[0].to_string(), "called before car/startEngine in 3 of its 3 turns");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod file;
mod learn;
mod queue;
mod record;
mod recorder;

pub use file::{
    LoadedUsage, USAGE_FORMAT, UsageFileError, load_file, read_file, save_file, usage_path,
};
// For sync: a replica applies the evidence of every tool named, as its log carries it.
#[cfg(feature = "postgres")]
pub(crate) use learn::{Known, learn_all_with, learn_with};
pub use learn::{TurnUse, learn, learn_all};
pub use queue::{BatchLimits, UsageQueue};
pub(crate) use record::schema;
pub use record::{Companion, MAX_COMPANIONS, USAGE, Usage, called};
pub use recorder::UsageRecorder;
