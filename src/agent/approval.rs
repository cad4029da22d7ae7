//! Approval: tool calls that wait for a person before they run.
//!
//! An [`ApprovalPolicy`] says which tools need approval (by key, by tag, or by MCP's
//! `destructiveHint` annotation). [`Approvals`] is the desk where their calls wait: the agent
//! opens a [`Ticket`] per call, emits [`Event::ToolCallPending`](crate::Event::ToolCallPending),
//! and the call proceeds when someone calls [`Approvals::approve`] or [`Approvals::reject`], from
//! any thread or task, or is refused when the timeout passes. A ticket is decided exactly once:
//! whichever of approve, reject or the timeout comes first wins, and the others are told so.
//!
//! Cost: nothing for calls that need no approval (one policy check); for one that does, a map
//! entry and a channel until it is decided. Waiting uses Tokio's timer, so
//! [`Agent::run_turn`](super::Agent::run_turn) with approvals must run on a Tokio runtime with
//! time enabled (as `#[tokio::main]` and `#[tokio::test]` give). For decisions that come much
//! later, [`Agent::start_turn`](super::Agent::start_turn) suspends the turn instead of waiting.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::events::Ticket;
use crate::tools::Tool;

/// Which tools need a person's approval before they run. The default needs none; turn on
/// [`destructive`](Self::destructive) for the usual set.
///
/// ```
/// use capstore::agent::ApprovalPolicy;
/// use capstore::Tool;
/// use serde_json::json;
///
/// let policy = ApprovalPolicy::destructive().with_key("payments/refund");
/// let rm = Tool::new("delete_file", "Delete a file").with_annotations(json!({"destructiveHint": true}));
/// assert!(policy.requires("fs/delete_file", Some(&rm)));
/// assert!(policy.requires("fs/write_file", Some(&Tool::new("write_file", "").with_tags(["write"]))));
/// assert!(policy.requires("payments/refund", None));
/// assert!(!policy.requires("fs/read_file", Some(&Tool::new("read_file", "Read a file"))));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalPolicy {
    /// Qualified names of tools that need approval.
    #[serde(default)]
    pub keys: BTreeSet<String>,
    /// Tools with any of these tags need approval.
    #[serde(default)]
    pub tags: BTreeSet<String>,
    /// Tools whose MCP annotations say `"destructiveHint": true` (and not
    /// `"readOnlyHint": true`) need approval. MCP's own default for a tool without the hint is
    /// "may be destructive"; capstore asks for the hint to be stated, or every un-annotated tool
    /// would wait for a person.
    #[serde(default)]
    pub destructive_hint: bool,
}

impl ApprovalPolicy {
    /// The usual set: tools tagged `write` (as the bundled catalog tags what changes things) and
    /// tools MCP servers mark `destructiveHint`.
    ///
    /// ```
    /// let policy = capstore::agent::ApprovalPolicy::destructive();
    /// assert!(policy.destructive_hint && policy.tags.contains("write"));
    /// ```
    pub fn destructive() -> Self {
        ApprovalPolicy {
            keys: BTreeSet::new(),
            tags: BTreeSet::from(["write".to_string()]),
            destructive_hint: true,
        }
    }

    /// Also needs approval for the tool with this qualified name.
    ///
    /// ```
    /// let policy = capstore::agent::ApprovalPolicy::default().with_key("mail/send_email");
    /// assert!(policy.requires("mail/send_email", None));
    /// ```
    pub fn with_key(mut self, key: impl Into<String>) -> Self {
        self.keys.insert(key.into());
        self
    }

    /// Also needs approval for tools with this tag.
    ///
    /// ```
    /// use capstore::{agent::ApprovalPolicy, Tool};
    /// let policy = ApprovalPolicy::default().with_tag("payments");
    /// assert!(policy.requires("pay", Some(&Tool::new("pay", "").with_tags(["payments"]))));
    /// ```
    pub fn with_tag(mut self, tag: impl Into<String>) -> Self {
        self.tags.insert(tag.into());
        self
    }

    /// Whether a call to `key` (whose record is `tool`, when registered) needs approval.
    ///
    /// ```
    /// assert!(!capstore::agent::ApprovalPolicy::default().requires("anything", None));
    /// ```
    pub fn requires(&self, key: &str, tool: Option<&Tool>) -> bool {
        if self.keys.contains(key) {
            return true;
        }
        let Some(tool) = tool else {
            return false;
        };
        if tool.tags.iter().any(|t| self.tags.contains(t)) {
            return true;
        }
        let hint = |name: &str| tool.annotations.get(name).and_then(|v| v.as_bool());
        self.destructive_hint
            && hint("destructiveHint") == Some(true)
            && hint("readOnlyHint") != Some(true)
    }
}

/// A person's decision on a pending call.
///
/// ```
/// use capstore::agent::Decision;
/// let no = Decision::Reject { reason: "not today".into() };
/// assert_eq!(serde_json::to_value(&no)?, serde_json::json!({"reject": {"reason": "not today"}}));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Run the call.
    Approve,
    /// Do not run it; the model is told, with the reason.
    Reject {
        /// Why, in words the model will read.
        reason: String,
    },
}

/// Why [`Approvals::approve`] or [`Approvals::reject`] did nothing.
///
/// ```
/// use capstore::agent::{ApprovalError, Approvals, Ticket};
/// let err = Approvals::default().approve(Ticket(9)).unwrap_err();
/// assert_eq!(err, ApprovalError::NotPending { ticket: Ticket(9) });
/// assert_eq!(err.to_string(), "ticket #9 is not pending (unknown, already decided, or timed out)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalError {
    /// No call waits on this ticket: it was never issued, was decided already, or timed out.
    NotPending {
        /// The ticket.
        ticket: Ticket,
    },
    /// The turn that waited on this ticket was dropped before the decision arrived; the call
    /// will not run.
    Abandoned {
        /// The ticket.
        ticket: Ticket,
    },
}

impl fmt::Display for ApprovalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApprovalError::NotPending { ticket } => write!(
                f,
                "ticket {ticket} is not pending (unknown, already decided, or timed out)"
            ),
            ApprovalError::Abandoned { ticket } => {
                write!(f, "ticket {ticket}: the turn waiting on it was dropped")
            }
        }
    }
}

impl std::error::Error for ApprovalError {}

/// What became of a ticket, as the waiting turn sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    Run,
    Refuse(String),
}

impl From<Decision> for Verdict {
    fn from(d: Decision) -> Self {
        match d {
            Decision::Approve => Verdict::Run,
            Decision::Reject { reason } => {
                Verdict::Refuse(format!("rejected by a person: {reason}"))
            }
        }
    }
}

struct Desk {
    policy: ApprovalPolicy,
    timeout: Duration,
    next: AtomicU64,
    waiting: Mutex<HashMap<Ticket, oneshot::Sender<Decision>>>,
}

/// The approval desk: the policy, the timeout, and the calls waiting. Cheap to clone (clones
/// share the desk), `Send + Sync`: give the agent one clone and your approver (a UI, a chat
/// bot, a test) another.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use capstore::agent::{ApprovalPolicy, Approvals};
/// use capstore::{Event, EventBus};
///
/// let approvals = Approvals::new(ApprovalPolicy::destructive()).with_timeout(Duration::from_secs(60));
/// let bus = EventBus::new();
/// let desk = approvals.clone();
/// // A person who approves everything, as soon as it is asked.
/// let _approver = bus.subscribe(move |event| {
///     if let Event::ToolCallPending { ticket, .. } = event {
///         let desk = desk.clone();
///         let ticket = *ticket;
///         std::thread::spawn(move || desk.approve(ticket));
///     }
/// });
/// // Agent::new(store, model).with_approvals(approvals).with_events(bus) ...
/// assert!(approvals.pending().is_empty());
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Approvals {
    desk: Arc<Desk>,
}

impl Default for Approvals {
    fn default() -> Self {
        Approvals::new(ApprovalPolicy::default())
    }
}

impl fmt::Debug for Approvals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Approvals")
            .field("policy", &self.desk.policy)
            .field("timeout", &self.desk.timeout)
            .field("pending", &self.pending())
            .finish()
    }
}

impl Approvals {
    /// A desk for `policy`, with a five-minute timeout.
    ///
    /// ```
    /// let approvals = capstore::agent::Approvals::new(capstore::agent::ApprovalPolicy::destructive());
    /// assert_eq!(approvals.timeout(), std::time::Duration::from_secs(300));
    /// ```
    pub fn new(policy: ApprovalPolicy) -> Self {
        Approvals {
            desk: Arc::new(Desk {
                policy,
                timeout: Duration::from_secs(300),
                next: AtomicU64::new(1),
                waiting: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// How long a call waits before it is refused. Set it before cloning: clones made earlier
    /// keep the old desk.
    ///
    /// ```
    /// use std::time::Duration;
    /// let approvals = capstore::agent::Approvals::default().with_timeout(Duration::from_secs(5));
    /// assert_eq!(approvals.timeout(), Duration::from_secs(5));
    /// ```
    pub fn with_timeout(self, timeout: Duration) -> Self {
        Approvals {
            desk: Arc::new(Desk {
                policy: self.desk.policy.clone(),
                timeout,
                next: AtomicU64::new(self.desk.next.load(Ordering::Relaxed)),
                waiting: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The policy.
    ///
    /// ```
    /// assert_eq!(*capstore::agent::Approvals::default().policy(), capstore::agent::ApprovalPolicy::default());
    /// ```
    pub fn policy(&self) -> &ApprovalPolicy {
        &self.desk.policy
    }

    /// The timeout.
    ///
    /// ```
    /// assert!(capstore::agent::Approvals::default().timeout().as_secs() > 0);
    /// ```
    pub fn timeout(&self) -> Duration {
        self.desk.timeout
    }

    /// The tickets waiting for a decision, ascending.
    ///
    /// ```
    /// assert!(capstore::agent::Approvals::default().pending().is_empty());
    /// ```
    pub fn pending(&self) -> Vec<Ticket> {
        let mut tickets: Vec<Ticket> = self.desk.waiting.lock().keys().copied().collect();
        tickets.sort_unstable();
        tickets
    }

    /// Lets the call waiting on `ticket` run. Fails if nothing waits on it (see
    /// [`ApprovalError`]); then the call was not run on account of this approval.
    ///
    /// ```
    /// use capstore::agent::{Approvals, Ticket};
    /// assert!(Approvals::default().approve(Ticket(1)).is_err());
    /// ```
    pub fn approve(&self, ticket: Ticket) -> Result<(), ApprovalError> {
        self.decide(ticket, Decision::Approve)
    }

    /// Refuses the call waiting on `ticket`; the model gets a tool result saying it was rejected,
    /// with `reason`.
    ///
    /// ```
    /// use capstore::agent::{Approvals, Ticket};
    /// assert!(Approvals::default().reject(Ticket(1), "no").is_err());
    /// ```
    pub fn reject(&self, ticket: Ticket, reason: impl Into<String>) -> Result<(), ApprovalError> {
        self.decide(
            ticket,
            Decision::Reject {
                reason: reason.into(),
            },
        )
    }

    /// Applies `decision` to `ticket`.
    ///
    /// ```
    /// use capstore::agent::{Approvals, Decision, Ticket};
    /// assert!(Approvals::default().decide(Ticket(1), Decision::Approve).is_err());
    /// ```
    pub fn decide(&self, ticket: Ticket, decision: Decision) -> Result<(), ApprovalError> {
        // Removing the sender under the lock is what makes the decision single: approve,
        // reject and the timeout all race for this one removal.
        let sender = self.desk.waiting.lock().remove(&ticket);
        let sender = sender.ok_or(ApprovalError::NotPending { ticket })?;
        sender
            .send(decision)
            .map_err(|_| ApprovalError::Abandoned { ticket })
    }

    /// A fresh ticket, not registered for waiting (for suspended turns).
    pub(crate) fn issue(&self) -> Ticket {
        Ticket(self.desk.next.fetch_add(1, Ordering::Relaxed))
    }

    /// Opens a ticket to wait on; the wait's deadline starts now.
    pub(crate) fn open(&self) -> Waiting {
        let ticket = self.issue();
        let (tx, rx) = oneshot::channel();
        self.desk.waiting.lock().insert(ticket, tx);
        Waiting {
            desk: Arc::clone(&self.desk),
            ticket,
            rx,
            deadline: Instant::now() + self.desk.timeout,
        }
    }
}

/// One open ticket. Dropping it (the turn was dropped) withdraws the ticket, so nothing waits
/// on it and a late approval is told [`ApprovalError::NotPending`].
pub(crate) struct Waiting {
    desk: Arc<Desk>,
    pub ticket: Ticket,
    rx: oneshot::Receiver<Decision>,
    deadline: Instant,
}

impl Waiting {
    /// Waits for the decision, or the deadline.
    pub async fn verdict(mut self) -> Verdict {
        if let Ok(Ok(decision)) = tokio::time::timeout_at(self.deadline, &mut self.rx).await {
            return decision.into();
        }
        // Timed out, unless a decision won the removal meanwhile.
        if self.desk.waiting.lock().remove(&self.ticket).is_some() {
            return Verdict::Refuse(format!(
                "not approved within {:?}: the call did not run",
                self.desk.timeout
            ));
        }
        match self.rx.try_recv() {
            Ok(decision) => decision.into(),
            Err(_) => Verdict::Refuse("the approval was withdrawn: the call did not run".into()),
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.desk.waiting.lock().remove(&self.ticket);
    }
}
