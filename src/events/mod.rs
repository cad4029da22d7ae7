//! An event bus: what happened during a turn, told to any number of subscribers.
//!
//! [`EventBus`] is a cheap-to-clone, thread-safe handle. [`subscribe`](EventBus::subscribe)
//! returns an [`EventSubscription`] that removes the callback when dropped;
//! [`emit`](EventBus::emit) calls every subscriber, in subscription order, on the emitting
//! thread. A subscriber that panics is caught and counted, never propagated.
//!
//! # Who emits what, and in which order
//! - [`Event::TurnStarted`] and [`Event::SelectionMade`]: the code that runs turns and picks
//!   the tools (one each per turn, in that order).
//! - [`Event::ToolCallStarted`], [`Event::HookDenied`], [`Event::ToolCallFinished`],
//!   [`Event::ToolCallFailed`]: the [`Executor`](crate::exec::Executor), per call, always
//!   `ToolCallStarted`, then `HookDenied` if a hook denied the call, then exactly one of
//!   `ToolCallFinished` or `ToolCallFailed` (see [`Executor::execute`](crate::exec::Executor::execute)).
//! - [`Event::ToolCallPending`], then [`Event::ToolCallApproved`] or [`Event::ToolCallRejected`]:
//!   the [`Agent`](crate::agent::Agent), for a call that needs approval, before the executor's
//!   events of that call (a rejected call has none). [`Event::TurnFinished`]: the agent, last
//!   in a turn that answered.
//! - [`Event::CatalogChanged`]: [`EventBus::follow_store`], once per commit, in version order.
//!
//! [`EventTape`] appends every event to a JSONL file; [`read_tape`] reads one back.
//!
//! Events emitted by one thread (or one task) reach each subscriber in the order they were
//! emitted. Events emitted concurrently by different threads may interleave.
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use capstore::{Event, EventBus};
//!
//! let bus = EventBus::new();
//! let seen = Arc::new(Mutex::new(Vec::new()));
//! let log = Arc::clone(&seen);
//! let sub = bus.subscribe(move |event| log.lock().unwrap().push(event.kind()));
//! bus.emit(&Event::TurnStarted { turn: 1, message: "hello".into() });
//! sub.unsubscribe();
//! bus.emit(&Event::TurnStarted { turn: 2, message: "again".into() });
//! assert_eq!(*seen.lock().unwrap(), ["turn_started"]);
//! ```
//!
//! # Tape format
//! UTF-8, one event per line, each line the [`Event`]'s JSON: an object with a `type` tag in
//! snake_case ([`Event::kind`]) and the variant's fields by name, e.g.
//! `{"type":"tool_call_pending","ticket":3,"call_id":"c1","tool":"fs/delete","arguments":{}}`.
//! Durations are `{"secs":u64,"nanos":u32}`; `selection_made` carries the selected tools'
//! qualified names, not the whole selection. Lines are appended whole (one `write` each), so
//! a tape cut short by a crash loses at most its last line.

mod bus;
mod event;
mod tape;

pub use bus::{EventBus, EventSubscription};
pub use event::{Event, Ticket};
pub(crate) use tape::read_jsonl;
pub use tape::{EventTape, TapeError, read_tape};
