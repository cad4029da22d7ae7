//! A call's events: started when the call begins, exactly one of finished or failed when it
//! ends, whatever way it ends (a dropped, cancelled call included).

use std::time::Duration;

use crate::events::{Event, EventBus};

use super::error::ExecError;

/// Emits one call's events. If dropped before [`finished`](Self::finished) or
/// [`failed`](Self::failed) (the call's future was dropped, e.g. by a timeout), it emits
/// `ToolCallFailed` from its destructor, so subscribers never see a call that never ends.
pub(crate) struct CallReport {
    target: Option<Target>,
}

struct Target {
    bus: EventBus,
    call_id: String,
    tool: String,
}

impl CallReport {
    /// Emits `ToolCallStarted` (when there is a bus).
    pub fn start(bus: Option<&EventBus>, call_id: &str, tool: &str) -> Self {
        let target = bus.map(|bus| Target {
            bus: bus.clone(),
            call_id: call_id.to_string(),
            tool: tool.to_string(),
        });
        if let Some(t) = &target {
            t.bus.emit(&Event::ToolCallStarted {
                call_id: t.call_id.clone(),
                tool: t.tool.clone(),
            });
        }
        CallReport { target }
    }

    /// Emits `ToolCallFinished`.
    pub fn finished(mut self, elapsed: Duration) {
        if let Some(t) = self.target.take() {
            t.bus.emit(&Event::ToolCallFinished {
                call_id: t.call_id,
                tool: t.tool,
                elapsed,
            });
        }
    }

    /// Emits `HookDenied` when a hook denied the call, then `ToolCallFailed`.
    pub fn failed(mut self, error: &ExecError) {
        let Some(t) = self.target.take() else {
            return;
        };
        if let ExecError::HookDenied { hook, reason, .. } = error {
            t.bus.emit(&Event::HookDenied {
                call_id: t.call_id.clone(),
                hook: hook.clone(),
                tool: t.tool.clone(),
                reason: reason.clone(),
            });
        }
        t.bus.emit(&Event::ToolCallFailed {
            call_id: t.call_id,
            tool: t.tool,
            error: error.to_string(),
        });
    }
}

impl Drop for CallReport {
    fn drop(&mut self) {
        if let Some(t) = self.target.take() {
            t.bus.emit(&Event::ToolCallFailed {
                call_id: t.call_id,
                tool: t.tool,
                error: "cancelled: the call was dropped before it finished".to_string(),
            });
        }
    }
}
