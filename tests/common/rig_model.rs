//! A scripted rig completion model, for tests and the `rig_agent` example (no network): a
//! function of each request (its tools, its messages) decides the reply, and every request is
//! kept for the test to read.
//!
//! rig 0.44 has no completion-model trait to implement: a model is a `Model<Wire, Transport>`,
//! a wire (what to send and how to read the reply) bound to a transport (how it travels).
//! Here the wire passes the request through untouched and reads replies written as [`Say`]s,
//! and the transport is the script itself.

use std::sync::{Arc, Mutex};

use rig::completion::options::{Mapping, OptionFields, OptionMap};
use rig::completion::{Accepts, CompletionRequest, ReplayTarget};
use rig::driver::{Exchange, Model, Opened, Opening, Transport};
use rig::error::{EncodeError, ProviderError};
use rig::message::Api;
use rig::operation::{Block, CallFragment, Completion, Finish};
use rig::wire::document::{Reassemble, Serves};
use rig::wire::{Decoder, Descriptor, Flow, Mode, Out, Wire, WireEvent};
use serde_json::Value;

/// One part of a scripted reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Say {
    /// Answer text.
    Text(String),
    /// A call of the tool named `name` (as the request's tool definitions name it).
    Call {
        /// The tool's name.
        name: String,
        /// Its arguments.
        arguments: Value,
    },
}

type Brain = dyn Fn(&CompletionRequest) -> Vec<Say> + Send + Sync;

/// The script: what it answers each request, and the requests it was sent, in order. Clones
/// share both.
#[derive(Clone)]
pub struct ScriptedModel {
    brain: Arc<Brain>,
    requests: Arc<Mutex<Vec<CompletionRequest>>>,
}

impl ScriptedModel {
    /// A model that answers each request with what `brain` says for it.
    pub fn new(brain: impl Fn(&CompletionRequest) -> Vec<Say> + Send + Sync + 'static) -> Self {
        ScriptedModel {
            brain: Arc::new(brain),
            requests: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// The rig model to give an agent (`AgentBuilder::new(script.model())`).
    pub fn model(&self) -> Model<Scripted, ScriptedModel> {
        Model::new(Scripted, self.clone())
    }

    /// The requests the model was sent, in order.
    pub fn requests(&self) -> Vec<CompletionRequest> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// The scripted model's wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scripted;

impl ReplayTarget for Scripted {
    fn api(&self) -> Api {
        Api::from_static("scripted")
    }

    fn provider(&self) -> &str {
        "scripted"
    }

    fn model(&self) -> &str {
        "scripted"
    }

    fn accepts(&self, _model: &str) -> Accepts {
        Accepts::ALL
    }

    // A script takes every option and does nothing with it.
    fn map_options(&self, _request: &CompletionRequest, fields: OptionFields<'_>) -> OptionMap {
        let OptionFields {
            reasoning,
            cache,
            service_tier,
            verbosity,
            parallel_tool_calls,
            top_p,
            seed,
            stop,
        } = fields;
        let taken = |set: bool| match set {
            true => Mapping::Omit("a scripted model ignores options"),
            false => Mapping::Nothing,
        };
        OptionMap {
            reasoning: taken(reasoning.is_some()),
            cache: taken(cache.is_some()),
            service_tier: taken(service_tier.is_some()),
            verbosity: taken(verbosity.is_some()),
            parallel_tool_calls: taken(parallel_tool_calls.is_some()),
            top_p: taken(top_p.is_some()),
            seed: taken(seed.is_some()),
            stop: taken(!stop.is_empty()),
        }
    }

    // A script names no finish reason.
    fn states_finish_reason(&self) -> bool {
        false
    }
}

/// One frame of a scripted reply: a part, then the end.
pub enum Frame {
    /// A part of the reply.
    Say(Say),
    /// The end of the reply.
    End,
}

impl Wire for Scripted {
    type Op = Completion;
    type Payload = CompletionRequest;
    type Frame = Frame;
    type Decoder<'id> = Reader;
    type Reassembler = NoDocument;

    fn describe(&self) -> Descriptor<'_> {
        Descriptor::new("scripted").model("scripted").replay(self)
    }

    fn encode(
        &self,
        request: CompletionRequest,
        _mode: Mode,
    ) -> Result<CompletionRequest, EncodeError> {
        Ok(request)
    }

    fn decoder<'id>(&self) -> Self::Decoder<'id> {
        Reader { calls: 0 }
    }
}

/// Writes each scripted part into rig's reply.
pub struct Reader {
    calls: usize,
}

impl<'id> Decoder<'id, Completion, Frame> for Reader {
    type Event = Frame;

    fn classify(&self, frame: Frame) -> WireEvent<Frame> {
        WireEvent::Known(frame)
    }

    fn decode(
        &mut self,
        frame: Frame,
        mut out: Out<'id, Completion>,
    ) -> Result<Flow, ProviderError> {
        match frame {
            Frame::Say(Say::Text(text)) => {
                out.run(Block::Text, &text)?;
            }
            Frame::Say(Say::Call { name, arguments }) => {
                out.end_run()?;
                self.calls += 1;
                let id = format!("call-{}", self.calls);
                let index = out.fresh_index();
                out.fragment(
                    Some(index),
                    CallFragment {
                        id: Some(&id),
                        name: Some(&name),
                        arguments: None,
                    },
                )?;
                out.announce(index, arguments)?;
                out.finish(index)?;
            }
            Frame::End => {
                out.end_run()?;
                return Ok(out.end(Finish::default()));
            }
        }
        Ok(Flow::More)
    }
}

/// The scripted model keeps no provider document.
#[derive(Default)]
pub struct NoDocument;

impl Serves<Completion> for NoDocument {}

impl Reassemble<Frame> for NoDocument {
    fn absorb(&mut self, _frame: &Frame) {}

    fn finish(self) -> Value {
        Value::Null
    }
}

impl Transport<Scripted> for ScriptedModel {
    fn send(&self, request: CompletionRequest, _exchange: Exchange) -> Opening<Frame> {
        let says = (self.brain)(&request);
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(request);
        let frames = says.into_iter().map(Frame::Say).chain([Frame::End]);
        Opening::ready(Opened::new(futures::stream::iter(frames.map(Ok))))
    }
}
