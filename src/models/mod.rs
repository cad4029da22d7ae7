//! Model adapters (feature `models`): the [`Model`](crate::agent::Model) trait over the two APIs
//! most agents talk to.
//!
//! - [`OpenAiChat`]: OpenAI-compatible chat completions with tools (OpenAI, vLLM, Ollama,
//!   llama.cpp's server, LM Studio, OpenRouter): a base URL, a key from the environment, a model
//!   name.
//! - [`Anthropic`]: Anthropic's Messages API with tools.
//!
//! Both take the tool definitions the agent offers in any of capstore's
//! [provider shapes](crate::provider::Provider) and send them in their own; pair them with
//! [`Agent::with_provider`](crate::agent::Agent::with_provider) for the matching shape and the
//! conversion is a no-op. Failures are typed ([`ModelErrorKind`](crate::agent::ModelErrorKind)):
//! the HTTP status, a rate limit with the server's `retry-after`, a reply not shaped as
//! documented, an unreachable server. Every request is bounded by a timeout (two minutes unless
//! set). Neither retries: a rate limit is reported, for the caller to wait and try again.
//!
//! Cost: one HTTPS client (reqwest with rustls, already used by the live MCP client) per
//! adapter, and a JSON conversion of the conversation per step. Needs a Tokio runtime.
//!
//! ```no_run
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use capstore::agent::Agent;
//! use capstore::models::OpenAiChat;
//!
//! let store = capstore::Store::new(); // your tools
//! let agent = Agent::new(store, OpenAiChat::from_env()?);
//! let mut session = agent.session();
//! println!("{}", agent.run_turn(&mut session, "What can you do?").await?.answer);
//! # Ok(())
//! # }
//! ```

mod anthropic;
mod http;
mod openai;
mod tools;

pub use anthropic::Anthropic;
pub use openai::OpenAiChat;
