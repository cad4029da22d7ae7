//! Usage: what the agent's own calls teach selection.
//!
//! Some tools are needed although no message names them: the environment's prerequisites
//! (press the brake before starting the engine, `cd` before `mv`, log in before posting). An
//! agent learns them by calling; so does capstore. Every turn's calls are counted into the
//! built-in [`USAGE`](crate::USAGE) table, one [`Usage`] row per tool, versioned in the
//! snapshots like every table, and a selection brings a tool's strong companions along with it
//! ([the companion channel](crate::context#companions)).
//!
//! ```text
//! calls of a turn (Executor, capstore serve, the agent loop) ──► UsageRecorder (in memory)
//!     turn ends ──► learn(tx, &TurnUse) ──► usage rows: turns, calls, sent → called,
//!                                          companions (together, before, next turn)
//! next turn: a tool enters the list ──► its companions come too (ContextBuilder)
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
//! # Cost
//! Recording a call is a push onto the conversation's list (the benchmark `usage` measures it,
//! BENCHMARKS.md). Ending a turn is one store transaction: an upsert per tool the turn sent or
//! called, and for *k* distinct calls *k*² small steps over their companions. A row is at most
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
mod record;
mod recorder;

pub use file::{
    LoadedUsage, USAGE_FORMAT, UsageFileError, load_file, read_file, save_file, usage_path,
};
// For sync: a replica applies the evidence of every tool named, as its log carries it.
#[cfg(feature = "postgres")]
pub(crate) use learn::{Known, learn_with};
pub use learn::{TurnUse, learn};
pub(crate) use record::schema;
pub use record::{Companion, MAX_COMPANIONS, Usage};
pub use recorder::UsageRecorder;
