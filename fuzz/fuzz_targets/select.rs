//! Arbitrary messages through `ContextBuilder::select` on a small store: no panic, no error,
//! finite scores, at most `max_tools` tools besides pinned ones.
#![no_main]

use std::sync::OnceLock;

use capstore::context::{ContextBuilder, SelectionPolicy, Turn};
use capstore::skills::register_skill;
use capstore::{Skill, Store, TOOLS, Tool};
use libfuzzer_sys::fuzz_target;

fn store() -> &'static Store {
    static STORE: OnceLock<Store> = OnceLock::new();
    STORE.get_or_init(|| {
        let store = Store::new();
        store
            .write(|tx| {
                tx.insert(
                    &TOOLS,
                    Tool::new("get_weather", "Current weather for a city").with_tags(["net"]),
                )?;
                tx.insert(
                    &TOOLS,
                    Tool::new("read_file", "Read a file from disk").with_source("fs"),
                )?;
                tx.insert(
                    &TOOLS,
                    Tool::new("getPM2.5Level", "Air quality, PM2.5 in a city"),
                )?;
                tx.insert(&TOOLS, Tool::new("天气", "查询城市天气 weather"))?;
                register_skill(
                    tx,
                    Skill::new("mail", "Send and read email")
                        .with_examples(["mail Ana the report"]),
                    vec![Tool::new("send_mail", "Send an email").with_tags(["mail"])],
                )
            })
            .expect("fixture store");
        store
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&max, text)) = data.split_first() else {
        return;
    };
    let message = String::from_utf8_lossy(text);
    let policy = SelectionPolicy {
        max_tools: usize::from(max % 4),
        ..SelectionPolicy::default()
    };
    let builder = ContextBuilder::with_policy(policy).expect("valid policy");
    let turn = Turn::new(message.as_ref()).with_history([message.as_ref()]);
    let selection = builder
        .select(&store().snapshot(), &turn)
        .expect("select never fails here");
    assert!(selection.tools.len() <= usize::from(max % 4));
    assert!(selection.tools.iter().all(|t| t.score.is_finite()));
    assert!(selection.query.iter().all(|(_, w)| w.is_finite()));
});
