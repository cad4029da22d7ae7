//! The last lines a stdio server wrote to its stderr, kept for error messages and
//! [`ServerStatus`](super::ServerStatus). Never forwarded to capstore's own stdout or stderr.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::io::AsyncReadExt;
use tokio::process::ChildStderr;
use tokio::sync::watch;

/// How many lines are kept: enough for a stack trace's head, little memory.
const KEPT_LINES: usize = 40;
/// Longer lines are cut: a server that writes megabytes without a new line costs no more.
const MAX_LINE: usize = 1_000;
/// How many of the last lines an error message quotes.
const QUOTED_LINES: usize = 5;

/// A bounded tail of a server's stderr, filled by a reader task per process.
pub(crate) struct StderrTail {
    lines: Mutex<VecDeque<String>>,
    /// How many readers have not reached the end of their stream yet.
    open: watch::Sender<usize>,
}

impl Default for StderrTail {
    fn default() -> Self {
        StderrTail {
            lines: Mutex::default(),
            open: watch::Sender::new(0),
        }
    }
}

impl StderrTail {
    /// Reads `pipe` to its end in a task, keeping the last lines.
    pub(crate) fn read(self: &Arc<Self>, mut pipe: ChildStderr) {
        let tail = Arc::clone(self);
        self.open.send_modify(|open| *open += 1);
        tokio::spawn(async move {
            let mut chunk = [0u8; 4096];
            let mut line = Vec::new();
            while let Ok(n @ 1..) = pipe.read(&mut chunk).await {
                for &byte in &chunk[..n] {
                    if byte == b'\n' {
                        tail.push(&line);
                        line.clear();
                    } else if line.len() < MAX_LINE {
                        line.push(byte);
                    }
                }
            }
            if !line.is_empty() {
                tail.push(&line);
            }
            tail.open.send_modify(|open| *open -= 1);
        });
    }

    fn push(&self, line: &[u8]) {
        let text = String::from_utf8_lossy(line).trim_end().to_string();
        if text.is_empty() {
            return;
        }
        let mut lines = self.lines.lock();
        if lines.len() == KEPT_LINES {
            lines.pop_front();
        }
        lines.push_back(text);
    }

    /// Waits (at most `limit`) for the readers to reach the end of their streams, so that the
    /// last words of a process that just exited are in the tail.
    pub(crate) async fn settle(&self, limit: Duration) {
        let mut open = self.open.subscribe();
        let _ = tokio::time::timeout(limit, open.wait_for(|&n| n == 0)).await;
    }

    /// The last few lines, joined by ` | `, or `None` if the server wrote nothing.
    pub(crate) fn quote(&self) -> Option<String> {
        let lines = self.lines.lock();
        let skip = lines.len().saturating_sub(QUOTED_LINES);
        let quoted: Vec<&str> = lines.iter().skip(skip).map(String::as_str).collect();
        (!quoted.is_empty()).then(|| quoted.join(" | "))
    }

    /// `reason`, followed by the quoted tail when the server wrote anything (the same words
    /// as a [`LiveError`](super::LiveError)'s stderr).
    pub(crate) fn annotate(&self, reason: String) -> String {
        match self.quote() {
            Some(tail) => format!("{reason}; its stderr ends with: {tail}"),
            None => reason,
        }
    }

    /// Every kept line, oldest first.
    pub(crate) fn lines(&self) -> Vec<String> {
        self.lines.lock().iter().cloned().collect()
    }
}
