//! The recent calls, as the executor tells them on the gateway's event bus, with the client
//! that made each (its `GatewayCall` event), and the calls refused before they ran.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;

use crate::events::{Event, EventBus, EventSubscription};

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
    /// The client that made it, over HTTP with clients.
    pub(super) client: Option<String>,
    /// The call's id.
    pub(super) call_id: String,
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
                Event::GatewayCall {
                    client,
                    call_id,
                    tool,
                    outcome,
                    ..
                } => log.by_client(call_id, tool, client, outcome),
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
            .map(|((call_id, tool), (_, at))| Call {
                tool: tool.clone(),
                at: *at,
                outcome: None,
                client: None,
                call_id: call_id.clone(),
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
        self.push(Call {
            tool: tool.to_string(),
            at,
            outcome: Some((started.elapsed(), error)),
            client: None,
            call_id: call_id.to_string(),
        });
    }

    fn push(&mut self, call: Call) {
        if self.done.len() == KEEP {
            self.done.pop_front();
        }
        self.done.push_back(call);
    }

    /// A client's call ended: the call it ran is marked with the client; a call refused before
    /// it ran (no events of its own) is added as refused.
    fn by_client(&mut self, call_id: &str, tool: &str, client: &str, outcome: &str) {
        if let Some(call) = self
            .done
            .iter_mut()
            .rev()
            .find(|c| c.call_id == call_id && c.client.is_none())
            .filter(|_| outcome != "refused")
        {
            call.client = Some(client.to_string());
            return;
        }
        if outcome == "refused" {
            self.push(Call {
                tool: tool.to_string(),
                at: SystemTime::now(),
                outcome: Some((
                    Duration::ZERO,
                    Some("refused: held back, unknown, or outside the client's scope".into()),
                )),
                client: Some(client.to_string()),
                call_id: call_id.to_string(),
            });
        }
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
        // A client's call is marked with it; one refused before it ran is shown refused.
        bus.emit(&Event::GatewayCall {
            client: "ci".into(),
            call_id: "1".into(),
            tool: "fs/read".into(),
            outcome: "error".into(),
            arguments: None,
        });
        bus.emit(&Event::GatewayCall {
            client: "ci".into(),
            call_id: "7".into(),
            tool: "fs/delete".into(),
            outcome: "refused".into(),
            arguments: None,
        });
        let recent = calls.recent();
        assert_eq!(recent.len(), 3);
        assert_eq!(recent[1].tool, "fs/delete");
        assert_eq!(recent[1].client.as_deref(), Some("ci"));
        assert!(recent[1].outcome.as_ref().is_some_and(|(_, e)| e.is_some()));
        assert_eq!(
            (recent[2].tool.as_str(), recent[2].client.as_deref()),
            ("fs/read", Some("ci"))
        );
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
