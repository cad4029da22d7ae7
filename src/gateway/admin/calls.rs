//! The recent calls, as the executor tells them on the gateway's event bus.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;

use crate::{Event, EventBus, EventSubscription};

/// How many finished calls the page keeps (the oldest go first).
const KEEP: usize = 50;

/// One call, running or done.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Call {
    /// The tool's qualified name.
    pub(super) tool: String,
    /// When it started.
    pub(super) at: SystemTime,
    /// `None` while it runs; then how long it took and its error, if it failed.
    pub(super) outcome: Option<(Duration, Option<String>)>,
}

#[derive(Default)]
struct Log {
    running: HashMap<(String, String), (Instant, SystemTime)>,
    done: VecDeque<Call>,
}

/// Follows a bus; the calls are kept until the `Calls` is dropped.
pub(super) struct Calls {
    log: Arc<Mutex<Log>>,
    _subscription: EventSubscription,
}

impl Calls {
    pub(super) fn follow(bus: &EventBus) -> Calls {
        let log = Arc::new(Mutex::new(Log::default()));
        let writer = Arc::clone(&log);
        let subscription = bus.subscribe(move |event| {
            let mut log = writer.lock();
            match event {
                Event::ToolCallStarted { call_id, tool } => {
                    let started = (Instant::now(), SystemTime::now());
                    log.running.insert((call_id.clone(), tool.clone()), started);
                }
                Event::ToolCallFinished { call_id, tool, .. } => log.end(call_id, tool, None),
                Event::ToolCallFailed {
                    call_id,
                    tool,
                    error,
                } => log.end(call_id, tool, Some(error.clone())),
                _ => {}
            }
        });
        Calls {
            log,
            _subscription: subscription,
        }
    }

    /// The running calls, then the finished ones, newest first.
    pub(super) fn recent(&self) -> Vec<Call> {
        let log = self.log.lock();
        let mut running: Vec<Call> = log
            .running
            .iter()
            .map(|((_, tool), (_, at))| Call {
                tool: tool.clone(),
                at: *at,
                outcome: None,
            })
            .collect();
        running.sort_by(|a, b| b.at.cmp(&a.at).then_with(|| a.tool.cmp(&b.tool)));
        running.extend(log.done.iter().rev().cloned());
        running
    }
}

impl Log {
    fn end(&mut self, call_id: &str, tool: &str, error: Option<String>) {
        let key = (call_id.to_string(), tool.to_string());
        // A call whose start was missed (before the page followed the bus) has no duration
        // to tell: it is left out rather than shown with a made-up one.
        let Some((started, at)) = self.running.remove(&key) else {
            return;
        };
        if self.done.len() == KEEP {
            self.done.pop_front();
        }
        self.done.push_back(Call {
            tool: tool.to_string(),
            at,
            outcome: Some((started.elapsed(), error)),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_running_and_finished_calls_newest_first() {
        let bus = EventBus::new();
        let calls = Calls::follow(&bus);
        let started = |id: &str, tool: &str| Event::ToolCallStarted {
            call_id: id.into(),
            tool: tool.into(),
        };
        bus.emit(&started("1", "fs/read"));
        bus.emit(&started("2", "time/now"));
        bus.emit(&Event::ToolCallFailed {
            call_id: "1".into(),
            tool: "fs/read".into(),
            error: "no such file".into(),
        });
        let recent = calls.recent();
        assert_eq!(recent.len(), 2);
        assert_eq!(
            (recent[0].tool.as_str(), &recent[0].outcome),
            ("time/now", &None)
        );
        assert_eq!(recent[1].tool, "fs/read");
        let (_, error) = recent[1].outcome.clone().expect("finished");
        assert_eq!(error.as_deref(), Some("no such file"));
        // A finish without its start is not shown.
        bus.emit(&Event::ToolCallFinished {
            call_id: "9".into(),
            tool: "x/y".into(),
            elapsed: Duration::ZERO,
        });
        assert_eq!(calls.recent().len(), 2);
        for i in 0..KEEP + 5 {
            bus.emit(&started(&i.to_string(), "t/t"));
            bus.emit(&Event::ToolCallFinished {
                call_id: i.to_string(),
                tool: "t/t".into(),
                elapsed: Duration::ZERO,
            });
        }
        assert_eq!(
            calls.recent().len(),
            KEEP + 1,
            "the running one and the last KEEP"
        );
    }
}
