//! Record and replay: a model's replies kept on a tape once, then played back deterministically,
//! so that agent-loop tests need no network, no key and no luck.
//!
//! [`RecordingModel`] wraps any [`Model`] and appends each exchange to a JSONL tape;
//! [`ReplayModel`] answers from that tape, request by request, and fails loudly
//! ([`ModelErrorKind::ReplayDiverged`]) when the conversation is not the one recorded: the
//! message that differs, or the tools offered (a selection change is a divergence too).
//!
//! Each line of a tape is one [`TapeEntry`]: the request's number, its user turn, its key (a
//! stable 64-bit FNV-1a hash of the request's messages and tools as JSON, in hex), the request
//! itself, and the reply or the error. Cost: recording writes the whole request per step (the
//! conversation grows, so a tape is quadratic in its length); replaying holds the tape in memory.

use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::events::{TapeError, read_jsonl};

use super::model::{Message, Model, ModelError, ModelErrorKind, ModelReply, ModelRequest};

/// One exchange on a model tape.
///
/// ```
/// use capstore::agent::{ModelReply, TapeEntry};
/// let entry: TapeEntry = serde_json::from_str(
///     r#"{"request":1,"turn":1,"key":"00ff","messages":[],"tools":[],"reply":{"final":"hi"}}"#,
/// )?;
/// assert_eq!(entry.outcome(), Ok(ModelReply::Final("hi".into())));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TapeEntry {
    /// The request's number on the tape, from 1.
    pub request: usize,
    /// The user turn: how many user messages the request holds.
    pub turn: usize,
    /// [`request_key`] of the request.
    pub key: String,
    /// The conversation sent.
    pub messages: Vec<Message>,
    /// The tool definitions offered.
    pub tools: Vec<Value>,
    /// What the model answered, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<ModelReply>,
    /// How it failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ModelError>,
}

impl TapeEntry {
    /// The reply or the error, as the model gave it (a line with neither is malformed).
    ///
    /// ```
    /// # let entry: capstore::agent::TapeEntry = serde_json::from_str(
    /// #     r#"{"request":1,"turn":1,"key":"00ff","messages":[],"tools":[]}"#)?;
    /// assert!(entry.outcome().is_err());
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn outcome(&self) -> Result<ModelReply, ModelError> {
        match (&self.reply, &self.error) {
            (Some(reply), _) => Ok(reply.clone()),
            (None, Some(error)) => Err(error.clone()),
            (None, None) => Err(ModelError::new(
                ModelErrorKind::Malformed,
                format!(
                    "tape entry {} holds neither a reply nor an error",
                    self.request
                ),
            )),
        }
    }
}

/// The stable key of a request: FNV-1a (64-bit) of `{"messages": ..., "tools": ...}` as
/// compact JSON, in 16 hex digits. The same conversation and tools give the same key on every
/// machine and Rust version; the selection's reasons are not part of it.
///
/// ```
/// use std::sync::Arc;
/// use capstore::agent::{request_key, Message, ModelRequest};
/// let request = ModelRequest {
///     messages: vec![Message::User { text: "hi".into() }],
///     tools: vec![],
///     selection: Arc::default(),
/// };
/// assert_eq!(request_key(&request).len(), 16);
/// let mut other = request.clone();
/// other.tools.push(serde_json::json!({"name": "search"}));
/// assert_ne!(request_key(&request), request_key(&other));
/// ```
pub fn request_key(request: &ModelRequest) -> String {
    key_of(&request.messages, &request.tools)
}

fn key_of(messages: &[Message], tools: &[Value]) -> String {
    // Keys sorted whatever serde_json's features, so that a tape replays in any build.
    let text = crate::tools::canonical_json(&json!({ "messages": messages, "tools": tools }));
    format!("{:016x}", crate::fnv::fnv1a_64(text.as_bytes()))
}

fn user_turns(messages: &[Message]) -> usize {
    messages
        .iter()
        .filter(|m| matches!(m, Message::User { .. }))
        .count()
}

/// A [`Model`] that passes each request to `inner` and appends the exchange (errors included)
/// to a JSONL tape. A tape that cannot be written fails the step, so a recording is never
/// silently incomplete.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use capstore::agent::{Message, Model, ModelError, ModelReply, ModelRequest, RecordingModel, ReplayModel};
///
/// struct Hello;
/// impl Model for Hello {
///     async fn complete(&self, _: &ModelRequest) -> Result<ModelReply, ModelError> {
///         Ok(ModelReply::Final("hello".into()))
///     }
/// }
///
/// let path = std::env::temp_dir().join(format!("capstore-doc-model-tape-{}.jsonl", std::process::id()));
/// let request = ModelRequest {
///     messages: vec![Message::User { text: "hi".into() }],
///     tools: vec![],
///     selection: Default::default(),
/// };
/// RecordingModel::create(Hello, &path)?.complete(&request).await?;
/// let replay = ReplayModel::open(&path)?;
/// assert_eq!(replay.complete(&request).await?, ModelReply::Final("hello".into()));
/// # std::fs::remove_file(&path).ok();
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct RecordingModel<M> {
    inner: M,
    path: PathBuf,
    /// The tape and the number of the last request written.
    tape: Mutex<(File, usize)>,
}

impl<M: Model> RecordingModel<M> {
    /// Records `inner` to `path`, replacing any tape there.
    ///
    /// ```
    /// # struct M; impl capstore::agent::Model for M { async fn complete(&self, _: &capstore::agent::ModelRequest) -> Result<capstore::agent::ModelReply, capstore::agent::ModelError> { unimplemented!() } }
    /// assert!(capstore::agent::RecordingModel::create(M, "/no/such/dir/tape.jsonl").is_err());
    /// ```
    pub fn create(inner: M, path: impl AsRef<Path>) -> Result<Self, TapeError> {
        let path = path.as_ref().to_path_buf();
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&path)
            .map_err(|error| TapeError::Io {
                path: path.clone(),
                error,
            })?;
        Ok(RecordingModel {
            inner,
            path,
            tape: Mutex::new((file, 0)),
        })
    }

    /// The model recorded.
    ///
    /// ```
    /// # struct M; impl capstore::agent::Model for M { async fn complete(&self, _: &capstore::agent::ModelRequest) -> Result<capstore::agent::ModelReply, capstore::agent::ModelError> { unimplemented!() } }
    /// # let path = std::env::temp_dir().join(format!("capstore-doc-inner-{}.jsonl", std::process::id()));
    /// let recording = capstore::agent::RecordingModel::create(M, &path)?;
    /// let _model: &M = recording.inner();
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), capstore::events::TapeError>(())
    /// ```
    pub fn inner(&self) -> &M {
        &self.inner
    }
}

impl<M: Model> Model for RecordingModel<M> {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let reply = self.inner.complete(request).await;
        let mut tape = self.tape.lock();
        let entry = TapeEntry {
            request: tape.1 + 1,
            turn: user_turns(&request.messages),
            key: request_key(request),
            messages: request.messages.clone(),
            tools: request.tools.clone(),
            reply: reply.as_ref().ok().cloned(),
            error: reply.as_ref().err().cloned(),
        };
        let written = serde_json::to_vec(&entry)
            .map_err(std::io::Error::from)
            .and_then(|mut line| {
                line.push(b'\n');
                tape.0.write_all(&line)
            });
        if let Err(e) = written {
            return Err(ModelError::other(format!(
                "could not record to {}: {e}",
                self.path.display()
            )));
        }
        tape.1 += 1;
        reply
    }
}

/// A [`Model`] that answers from a tape [recorded](RecordingModel) earlier, in order: the n-th
/// request must be the tape's n-th (same [`request_key`]); otherwise it fails with
/// [`ModelErrorKind::ReplayDiverged`], saying which request and turn, and what differs. A
/// request that diverged does not advance the tape.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use capstore::agent::{Message, Model, ModelErrorKind, ModelRequest, ReplayModel};
/// let path = std::env::temp_dir().join(format!("capstore-doc-empty-tape-{}.jsonl", std::process::id()));
/// std::fs::write(&path, "")?;
/// let replay = ReplayModel::open(&path)?;
/// let request = ModelRequest { messages: vec![Message::User { text: "hi".into() }], tools: vec![], selection: Default::default() };
/// let err = replay.complete(&request).await.unwrap_err();
/// assert_eq!(err.kind, ModelErrorKind::ReplayDiverged { request: 1, turn: 1 });
/// assert!(err.message.contains("past the end of the tape"));
/// # std::fs::remove_file(&path).ok();
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct ReplayModel {
    path: PathBuf,
    entries: Vec<TapeEntry>,
    next: Mutex<usize>,
}

impl ReplayModel {
    /// Loads the tape at `path`.
    ///
    /// ```
    /// assert!(capstore::agent::ReplayModel::open("/no/such/tape.jsonl").is_err());
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Self, TapeError> {
        let path = path.as_ref().to_path_buf();
        Ok(ReplayModel {
            entries: read_jsonl(&path)?,
            path,
            next: Mutex::new(0),
        })
    }

    /// How many requests the tape holds.
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("capstore-doc-len-{}.jsonl", std::process::id()));
    /// # std::fs::write(&path, "")?;
    /// assert_eq!(capstore::agent::ReplayModel::open(&path)?.len(), 0);
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the tape is empty.
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("capstore-doc-empty-{}.jsonl", std::process::id()));
    /// # std::fs::write(&path, "")?;
    /// assert!(capstore::agent::ReplayModel::open(&path)?.is_empty());
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many requests were answered so far; a test that ends with fewer than
    /// [`len`](Self::len) did not play the whole conversation.
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("capstore-doc-played-{}.jsonl", std::process::id()));
    /// # std::fs::write(&path, "")?;
    /// assert_eq!(capstore::agent::ReplayModel::open(&path)?.played(), 0);
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn played(&self) -> usize {
        *self.next.lock()
    }
}

impl Model for ReplayModel {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let mut next = self.next.lock();
        let number = *next + 1;
        let turn = user_turns(&request.messages);
        let diverged = |what: String| {
            ModelError::new(
                ModelErrorKind::ReplayDiverged {
                    request: number,
                    turn,
                },
                format!(
                    "replay of {} diverged at request {number} (user turn {turn}): {what}",
                    self.path.display()
                ),
            )
        };
        let Some(entry) = self.entries.get(*next) else {
            return Err(diverged(format!(
                "past the end of the tape ({} requests)",
                self.entries.len()
            )));
        };
        if entry.key != request_key(request) {
            return Err(diverged(difference(entry, request)));
        }
        *next += 1;
        entry.outcome()
    }
}

/// What differs between the recorded request and this one, in words.
fn difference(entry: &TapeEntry, request: &ModelRequest) -> String {
    let mut out = String::new();
    let names = |tools: &[Value]| -> Vec<String> { tools.iter().map(tool_name).collect() };
    let (taped, sent) = (names(&entry.tools), names(&request.tools));
    if taped != sent {
        let added: Vec<&String> = sent.iter().filter(|n| !taped.contains(n)).collect();
        let removed: Vec<&String> = taped.iter().filter(|n| !sent.contains(n)).collect();
        let _ = write!(
            out,
            "the tools offered differ (added {added:?}, removed {removed:?}; tape {taped:?}, now {sent:?}); "
        );
    } else if entry.tools != request.tools {
        let at = entry
            .tools
            .iter()
            .zip(&request.tools)
            .position(|(a, b)| a != b);
        let _ = write!(
            out,
            "the definition of tool {} differs; ",
            at.map_or_else(|| "?".into(), |i| sent[i].clone())
        );
    }
    let pairs = entry.messages.iter().zip(&request.messages);
    if let Some((i, (taped, sent))) = pairs.enumerate().find(|(_, (a, b))| a != b) {
        let _ = write!(
            out,
            "message {} differs (tape {}, now {}); ",
            i + 1,
            brief(taped),
            brief(sent)
        );
    } else if entry.messages.len() != request.messages.len() {
        let _ = write!(
            out,
            "the tape has {} messages, the request {}; ",
            entry.messages.len(),
            request.messages.len()
        );
    }
    if out.is_empty() {
        // Same content in another JSON rendering (the tape was edited by hand).
        out.push_str("the request's key differs from the tape's");
    }
    out.trim_end_matches("; ").to_string()
}

fn tool_name(tool: &Value) -> String {
    let name = tool["function"]["name"].as_str().or(tool["name"].as_str());
    name.unwrap_or("?").to_string()
}

fn brief(message: &Message) -> String {
    let text = serde_json::to_string(message).unwrap_or_default();
    match text.char_indices().nth(160) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}
