//! `capstore call TOOL 'JSON-ARGS'`: run one tool through the executor and print its result.

use capstore::{Executor, ToolCall, UnselectedCallPolicy};
use serde_json::Value;

use super::args::{SourceArgs, sources_and_words};
use super::source;

/// The sources, the tool and its arguments of a `call` command line.
pub(crate) fn parse(args: &[String]) -> Result<(SourceArgs, String, Value), String> {
    let (sources, words) = sources_and_words("call", args)?;
    let (tool, arguments) = match words.as_slice() {
        [tool] => (*tool, Value::Object(Default::default())),
        [tool, json] => (
            *tool,
            serde_json::from_str(json).map_err(|e| format!("call: JSON-ARGS: {e}"))?,
        ),
        _ => {
            return Err(
                "call: usage: capstore call TOOL ['JSON-ARGS'] --mcp-config FILE \
                 (e.g. capstore call time/get_current_time '{\"timezone\": \"UTC\"}' --mcp-config .mcp.json)"
                    .into(),
            );
        }
    };
    Ok((sources, tool.to_string(), arguments))
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        super::push_output(super::HELP.to_string());
        return Ok(());
    }
    let (mut sources, tool, arguments) = parse(args)?;
    let tool = tool.as_str();
    sources.only_server_of = Some(tool.to_string());
    let loaded = source::load(&sources)?;
    let key = match source::resolve_tool(&loaded.store.snapshot(), "call", tool) {
        Ok(key) => key,
        Err(error) => {
            return Err(loaded
                .live
                .as_ref()
                .zip(sources.mcp_config.as_deref())
                .and_then(|(live, config)| live.held_error("call", tool, config))
                .unwrap_or(error));
        }
    };
    // Calling one tool by hand: it need not have been selected.
    let executor = Executor::new(loaded.store.clone()).with_policy(UnselectedCallPolicy::Allow);
    let execution = executor.execute(ToolCall::new("cli", key.as_str(), arguments), &[]);
    let result = match &loaded.live {
        Some(live) => live.runtime.block_on(execution),
        None => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the async runtime: {e}"))?
            .block_on(execution),
    };
    let output = result.map_err(|e| match e {
        capstore::ExecError::NoHandler { tool } => format!(
            "call: `{tool}` has no handler here: catalog tools are descriptions only; \
             tools of --mcp-config servers run on their server"
        ),
        other => other.to_string(),
    })?;
    let text = serde_json::to_string_pretty(&output.output).map_err(|e| e.to_string())?;
    say!("{text}");
    Ok(())
}
