//! Learning without churn (issue 57): finished turns are queued and counted into the store in
//! batches, with the rows a transaction per turn would give; a turn costs no transaction; what
//! depends on the tools alone (the export names, a watch on the tools) does not move for usage.

use std::sync::Arc;
use std::time::Duration;

use capstore::agent::Chat;
use capstore::exec::register;
use capstore::usage::{BatchLimits, TurnUse, Usage, UsageQueue, UsageRecorder};
use capstore::{Store, TOOLS, Tool, USAGE, WatchSet};
use proptest::prelude::*;
use serde_json::json;

/// Tools enough that a row fills up (more than `MAX_COMPANIONS` others), so that the order in
/// which evidence arrives decides which companion a row forgets.
const TOOL_COUNT: usize = 24;

fn key(i: usize) -> String {
    format!("t/x{i}")
}

fn store_of_tools() -> Store {
    let store = Store::new();
    store
        .write(|tx| {
            for i in 0..TOOL_COUNT {
                tx.insert(
                    &TOOLS,
                    Tool::new(format!("x{i}"), format!("Tool number {i}")).with_source("t"),
                )?;
            }
            Ok::<_, capstore::StoreError>(())
        })
        .expect("tools");
    store
}

/// Every usage row, in key order, companions in the row's own order.
fn rows(store: &Store) -> Vec<Usage> {
    store
        .snapshot()
        .iter(&USAGE)
        .expect("usage")
        .records()
        .cloned()
        .collect()
}

/// One step of several conversations over one store, in some interleaving.
#[derive(Debug, Clone)]
enum Step {
    /// Conversation `.0` sends tools.
    Sent(usize, Vec<usize>),
    /// Conversation `.0`'s model calls a tool.
    Called(usize, usize),
    /// Conversation `.0` ends its turn.
    End(usize),
    /// The queue is flushed (a conversation finished, a timer).
    Flush,
}

fn step(conversations: usize) -> impl Strategy<Value = Step> {
    let conv = 0..conversations;
    let tool = 0..TOOL_COUNT;
    prop_oneof![
        1 => (conv.clone(), prop::collection::vec(tool.clone(), 0..6))
            .prop_map(|(c, t)| Step::Sent(c, t)),
        4 => (conv.clone(), tool).prop_map(|(c, t)| Step::Called(c, t)),
        2 => conv.prop_map(Step::End),
        1 => Just(Step::Flush),
    ]
}

fn schedule() -> impl Strategy<Value = (usize, Vec<Step>, usize)> {
    (1usize..4).prop_flat_map(|conversations| {
        (
            Just(conversations),
            prop::collection::vec(step(conversations), 1..160),
            1usize..9,
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Any interleaving of several conversations' turns, queued and written in batches (of any
    /// size, flushed at any point), ends with exactly the rows of one `learn` transaction per
    /// turn in the order the turns ended: counts, companions and the order a full row keeps
    /// them in.
    #[test]
    fn batched_turns_give_the_rows_of_a_transaction_per_turn((conversations, steps, max_turns) in schedule()) {
        let per_turn = store_of_tools();
        let batched = store_of_tools();
        let queue = UsageQueue::with_limits(
            batched.clone(),
            BatchLimits { max_turns, max_delay: Duration::from_secs(3600) },
        );
        let one: Vec<UsageRecorder> = (0..conversations).map(|_| UsageRecorder::new()).collect();
        let two: Vec<UsageRecorder> = (0..conversations).map(|_| UsageRecorder::new()).collect();
        let mut turns = 0u64;
        for step in &steps {
            match step {
                Step::Sent(c, tools) => {
                    let tools: Vec<String> = tools.iter().map(|&t| key(t)).collect();
                    one[*c].sent(&tools);
                    two[*c].sent(&tools);
                }
                Step::Called(c, t) => {
                    one[*c].called(&key(*t));
                    two[*c].called(&key(*t));
                }
                Step::End(c) => {
                    if one[*c].commit_turn(&per_turn).expect("per turn").is_some() {
                        turns += 1;
                    }
                    queue.push(two[*c].finish_turn()).expect("queued");
                    prop_assert!(queue.pending() < max_turns.max(1));
                }
                Step::Flush => {
                    queue.flush().expect("flushed");
                    prop_assert_eq!(queue.pending(), 0);
                }
            }
        }
        queue.flush().expect("flushed");
        prop_assert_eq!(rows(&batched), rows(&per_turn));
        // One transaction a batch: never more than one a turn.
        prop_assert_eq!(batched.version() - 1, queue.batches());
        prop_assert!(queue.batches() <= turns);
    }
}

/// A store with a mail service whose tools run, for chats.
fn mail() -> Store {
    let store = Store::new();
    store
        .update(|tx| {
            for (name, description) in [
                ("login", "Log in to the mail service"),
                ("send_message", "Send a mail message to a contact"),
                ("search", "Search the mail messages"),
            ] {
                register(
                    tx,
                    Tool::new(name, description)
                        .with_source("mail")
                        .with_handler(|_| async { Ok(json!("done")) }),
                )?;
            }
            Ok(())
        })
        .expect("registers");
    store
}

async fn mail_turn(chat: &mut Chat) {
    chat.turn("log in and send a message to Ana")
        .expect("selects");
    chat.call("login", json!({})).await.expect("runs");
    chat.call("send_message", json!({})).await.expect("runs");
}

#[tokio::test]
async fn a_chats_turns_cost_no_transaction_and_finish_writes_them_in_one() {
    let store = mail();
    let version = store.version();
    let mut chat = Chat::new(store.clone());
    for _ in 0..5 {
        mail_turn(&mut chat).await;
    }
    // Five turns, four of them ended: queued, the store as it was.
    assert_eq!(store.version(), version);
    assert_eq!(store.snapshot().count(&USAGE).expect("reads"), 0);
    chat.finish().expect("written");
    assert_eq!(store.version(), version + 1);
    let send = store
        .snapshot()
        .get_arc(&USAGE, "mail/send_message")
        .expect("reads")
        .expect("learned");
    assert_eq!((send.turns, send.calls), (5, 5));
    chat.finish().expect("nothing more");
    assert_eq!(store.version(), version + 1);
}

#[tokio::test]
async fn dropping_a_chat_writes_its_last_turn() {
    let store = mail();
    let mut chat = Chat::new(store.clone());
    mail_turn(&mut chat).await;
    assert_eq!(store.snapshot().count(&USAGE).expect("reads"), 0);
    drop(chat);
    let login = store
        .snapshot()
        .get_arc(&USAGE, "mail/login")
        .expect("reads")
        .expect("learned when dropped");
    assert_eq!(login.turns, 1);
}

/// The export names are not computed again after turns that wrote usage and changed no tool:
/// the chat's next turn is sent under the very same names (the same `Arc`); a new tool makes
/// new ones. A watch on the tools table sleeps through the usage too.
#[tokio::test]
async fn turns_that_change_no_tool_keep_the_export_names_and_wake_no_tool_watch() {
    let store = mail();
    // A batch a turn: every turn writes usage, the worst case for what keys on the version.
    let each_turn = BatchLimits {
        max_turns: 1,
        ..BatchLimits::default()
    };
    let mut chat = Chat::new(store.clone())
        .with_usage_queue(UsageQueue::with_limits(store.clone(), each_turn));
    let seen = store.snapshot();
    let watch = store
        .watch(&WatchSet::new().table(&TOOLS), seen.version())
        .expect("watches");
    let tool_versions = store.table_versions(&TOOLS).expect("follows");
    mail_turn(&mut chat).await;
    let first = Arc::clone(chat.export().expect("a turn"));
    for _ in 0..3 {
        mail_turn(&mut chat).await;
        assert!(
            Arc::ptr_eq(&first, chat.export().expect("a turn")),
            "export names computed again after a usage write"
        );
    }
    assert_eq!(store.version(), seen.version() + 3, "three turns written");
    assert!(!watch.is_fired());
    assert!(!tool_versions.has_changed().expect("store alive"));
    // A tool changes: new names, and the watch wakes.
    store
        .update(|tx| {
            register(
                tx,
                Tool::new("archive", "Archive a mail message")
                    .with_source("mail")
                    .with_handler(|_| async { Ok(json!("archived")) }),
            )?;
            Ok(())
        })
        .expect("registers");
    mail_turn(&mut chat).await;
    let fresh = chat.export().expect("a turn");
    assert!(!Arc::ptr_eq(&first, fresh));
    assert_eq!(fresh.resolve("archive"), Some("mail/archive"));
    assert!(watch.is_fired());
    assert!(tool_versions.has_changed().expect("store alive"));
}

#[tokio::test]
async fn chats_sharing_a_queue_write_together_at_its_size_bound() {
    let store = mail();
    let version = store.version();
    let four = BatchLimits {
        max_turns: 4,
        ..BatchLimits::default()
    };
    let queue = UsageQueue::with_limits(store.clone(), four);
    let mut a = Chat::new(store.clone()).with_usage_queue(queue.clone());
    let mut b = Chat::new(store.clone()).with_usage_queue(queue.clone());
    for _ in 0..2 {
        mail_turn(&mut a).await;
        mail_turn(&mut b).await;
    }
    // Two turns ended (each chat's next turn ends its last): held.
    assert_eq!((queue.pending(), store.version()), (2, version));
    mail_turn(&mut a).await; // ends a's second turn: the third
    assert_eq!((queue.pending(), store.version()), (3, version));
    mail_turn(&mut b).await; // ends b's second turn: the fourth fills the batch
    assert_eq!((queue.pending(), store.version()), (0, version + 1));
    let send = store
        .snapshot()
        .get_arc(&USAGE, "mail/send_message")
        .expect("reads")
        .expect("learned");
    assert_eq!(send.turns, 4);
}

#[test]
fn the_time_bound_writes_at_the_next_turn_or_when_a_timer_asks() {
    let store = store_of_tools();
    let short = BatchLimits {
        max_turns: 1_000,
        max_delay: Duration::from_millis(30),
    };
    let queue = UsageQueue::with_limits(store.clone(), short);
    let turn = || TurnUse::new([key(0), key(1)]);
    assert!(queue.push(turn()).expect("queued").is_none());
    assert!(queue.flush_if_due().expect("checked").is_none());
    std::thread::sleep(Duration::from_millis(40));
    // A turn queued past the bound writes both.
    assert!(queue.push(turn()).expect("written").is_some());
    assert_eq!(queue.pending(), 0);
    // Without a turn: a timer's check writes once the bound passed.
    assert!(queue.push(turn()).expect("queued").is_none());
    std::thread::sleep(Duration::from_millis(40));
    assert!(queue.flush_if_due().expect("written").is_some());
    let row = store
        .snapshot()
        .get_arc(&USAGE, &key(0))
        .expect("reads")
        .expect("learned");
    assert_eq!(row.turns, 3);
    assert_eq!(queue.batches(), 2);
}

#[test]
fn the_last_handle_of_a_queue_writes_what_it_holds() {
    let store = store_of_tools();
    let queue = UsageQueue::new(store.clone());
    let other = queue.clone();
    queue.push(TurnUse::new([key(2)])).expect("queued");
    drop(queue);
    assert_eq!(
        store.snapshot().count(&USAGE).expect("reads"),
        0,
        "a handle left"
    );
    drop(other);
    assert_eq!(store.snapshot().count(&USAGE).expect("reads"), 1);
}
