//! The gateway's sessions queue their finished turns: a turn ended by a search costs no store
//! transaction, the sessions share one queue, and a session that ends writes what it holds.

use super::{Gateway, GatewayOptions};
use crate::store::Store;
use crate::tools::{TOOLS, Tool};
use crate::usage::USAGE;

fn store() -> Store {
    let store = Store::new();
    store
        .write(|tx| {
            tx.insert(&TOOLS, Tool::new("login", "Log in").with_source("mail"))?;
            tx.insert(
                &TOOLS,
                Tool::new("send", "Send a message").with_source("mail"),
            )
        })
        .expect("tools");
    store
}

/// One turn of a session: two calls, then the search that ends it.
fn turn(gateway: &Gateway) {
    gateway.session.next_step(false);
    gateway.session.recorder.called("mail/login");
    gateway.session.next_step(false);
    gateway.session.recorder.called("mail/send");
    gateway.session.next_step(true);
}

#[test]
fn sessions_queue_their_turns_and_write_them_when_they_end() {
    let store = store();
    let version = store.version();
    let gateway = Gateway::new(store.clone(), None, GatewayOptions::default());
    let other = gateway.for_session();
    turn(&gateway);
    turn(&other);
    turn(&gateway);
    // Three turns ended, none written: on the gateway's one queue.
    assert_eq!(store.version(), version);
    assert_eq!(gateway.shared.usage.pending(), 3);
    // A session ends: its turn (none under way here) and the queue are written, in one batch.
    drop(other);
    assert_eq!(store.version(), version + 1);
    let send = store
        .snapshot()
        .get_arc(&USAGE, "mail/send")
        .expect("reads")
        .expect("learned");
    assert_eq!(send.turns, 3);
    // The last session's calls under way are written when it goes.
    gateway.session.recorder.called("mail/login");
    drop(gateway);
    let login = store
        .snapshot()
        .get_arc(&USAGE, "mail/login")
        .expect("reads")
        .expect("learned");
    assert_eq!(login.turns, 4);
}

#[test]
fn a_gateway_that_does_not_learn_writes_nothing() {
    let store = store();
    let options = GatewayOptions {
        learn: false,
        ..GatewayOptions::default()
    };
    let gateway = Gateway::new(store.clone(), None, options);
    turn(&gateway);
    drop(gateway);
    assert_eq!(store.snapshot().count(&USAGE).expect("reads"), 0);
}
