//! One turn against a real model: OpenAI-compatible chat completions when `OPENAI_BASE_URL`
//! (or `OPENAI_API_KEY`) is set, Anthropic's Messages API when `ANTHROPIC_API_KEY` is.
//!
//! ```sh
//! OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen3:8b \
//!     cargo run --release --features models --example real_model
//! ANTHROPIC_API_KEY=sk-ant-... cargo run --release --features models --example real_model
//! ```
//!
//! Without either, it says what to set and exits 0.

use capstore::agent::{Agent, Model};
use capstore::exec::register_tool;
use capstore::models::{Anthropic, OpenAiChat};
use capstore::provider::Provider;
use capstore::{Store, Tool};
use serde_json::json;

const QUESTION: &str = "What is the weather in Oslo, and how much is 120 EUR in NOK?";

fn store() -> Result<Store, capstore::StoreError> {
    let store = Store::new();
    let city =
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    let money = json!({"type": "object", "properties": {
        "amount": {"type": "number"}, "from": {"type": "string"}, "to": {"type": "string"}
    }, "required": ["amount", "from", "to"]});
    store.write(|tx| {
        register_tool(
            tx,
            Tool::new("get_weather", "Current weather for a city").with_input_schema(city),
            |args| async move { Ok(json!({"city": args["city"], "sky": "clear", "celsius": 4})) },
        )?;
        register_tool(
            tx,
            Tool::new("convert_currency", "Convert an amount between currencies")
                .with_input_schema(money),
            |args| async move {
                let amount = args["amount"].as_f64().unwrap_or(0.0);
                Ok(json!({"amount": amount * 11.7, "currency": args["to"]}))
            },
        )
    })?;
    Ok(store)
}

async fn ask<M: Model>(model: M, provider: Provider) -> Result<(), Box<dyn std::error::Error>> {
    let agent = Agent::new(store()?, model).with_provider(provider);
    let mut session = agent.session();
    println!("user: {QUESTION}");
    let outcome = agent.run_turn(&mut session, QUESTION).await?;
    println!(
        "tools offered: {:?}",
        outcome.selection.keys().collect::<Vec<_>>()
    );
    println!("calls: {:?}", outcome.calls);
    println!("answer ({} model steps): {}", outcome.steps, outcome.answer);
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    if set("OPENAI_BASE_URL") || set("OPENAI_API_KEY") {
        let model = OpenAiChat::from_env()?;
        println!("model: {} at {}", model.model(), model.url());
        ask(model, Provider::OpenAiChat).await
    } else if set("ANTHROPIC_API_KEY") {
        let model = Anthropic::from_env()?;
        println!("model: {} at {}", model.model(), model.url());
        ask(model, Provider::Anthropic).await
    } else {
        println!(
            "This example runs one agent turn against a real model, and no model is configured.\n\
             Set OPENAI_BASE_URL (any OpenAI-compatible server: Ollama, vLLM, llama.cpp, LM Studio,\n\
             OpenRouter; OPENAI_API_KEY and OPENAI_MODEL as it needs) or OPENAI_API_KEY alone for\n\
             OpenAI, or ANTHROPIC_API_KEY (and ANTHROPIC_MODEL) for Anthropic, then run it again."
        );
        Ok(())
    }
}
