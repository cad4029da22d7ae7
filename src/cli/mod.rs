//! Argument dispatch for the `capstore` binary. Arguments are parsed by hand: four commands
//! with a few flags each do not need a parser crate in every user's build.

/// Writes one line of the command's output (see [`flush_output`]).
macro_rules! say {
    () => {
        $crate::cli::push_output(String::from("\n"))
    };
    ($($arg:tt)*) => {
        $crate::cli::push_output(format!("{}\n", format_args!($($arg)*)))
    };
}

mod approve;
mod args;
mod call;
mod eval;
mod explain;
mod hybrid;
mod select;
mod serve;
mod source;
mod stats;
mod synth;

use std::cell::RefCell;
use std::io::Write;
use std::process::ExitCode;

pub(crate) const HELP: &str = "\
capstore: an agent's tools in a snapshot-versioned store, selected by BM25

USAGE:
    capstore select \"MESSAGE\" [SOURCE] [--max-tools N] [--explain] [--json [--provider P] [--defer]]
                    [--embedder DIR [--lexical-weight W] [--depth N] [--vector-cache FILE]]
    capstore explain TOOL \"MESSAGE\" [SOURCE]
    capstore stats [SOURCE]
    capstore call TOOL ['JSON-ARGS'] [SOURCE]
    capstore serve --mcp-config FILE [--mode search|all] [--http ADDR] [OPTIONS]
    capstore approve [TOOL... | --all] --mcp-config FILE
    capstore eval --tools FILE --queries FILE [OPTIONS]   (see `capstore eval --help`)

SOURCE (default: the catalog bundled in the crate, catalog/default.json):
    --catalog FILE            a capstore catalog file (format capstore.catalog/v1) instead
    --mcp SERVER=FILE         an MCP tools/list result for SERVER; repeatable. With --mcp and
                              no --catalog, only the MCP tools are loaded
    --mcp-config FILE         connect to the MCP servers of an mcpServers configuration
                              (Claude Desktop, Claude Code's .mcp.json, Cursor) and load
                              their tools live; a server that fails is named on stderr and
                              left out
    --bundled                 also load the bundled catalog with --catalog, --mcp or
                              --mcp-config
    --call-timeout SECS       give up on a live server's tool call after SECS (default 60)

SELECT:
    --max-tools N             send at most N tools (default 11)
    --explain                 show each term's BM25 contribution
    --json                    print the provider request's `tools` JSON instead of the table
    --provider P              openai (chat completions, default), openai-responses, anthropic
    --defer                   with anthropic: the whole catalog, unselected tools marked
                              \"defer_loading\": true (for Anthropic's hosted tool search)
    --embedder DIR            hybrid retrieval: BM25 fused with all-MiniLM-L6-v2 read from DIR
                              (config.json, tokenizer.json, model.safetensors;
                              scripts/minilm.sh fetches them); embeds every tool first
    --lexical-weight W        one share of BM25 in the fused score, 0 to 1 (default: 0.2 to
                              0.85, following how much of the message BM25 matches and how
                              clearly the embedder singles one tool out)
    --depth N                 how many of each ranking's best are fused (default 40)
    --vector-cache FILE       keep the tools' vectors in FILE (created if missing): the next
                              run embeds only the tools whose text changed. The message is
                              not written to it

EXPLAIN: why TOOL (qualified `source/name`, or its exported name) was or was not selected.
STATS:   what the catalog holds and what its index costs.
CALL:    run TOOL with JSON-ARGS (default {}) and print its result as JSON; with
         --mcp-config, on its server.
SERVE:   an MCP server in front of the configured servers, for any MCP client.
    --mode search             (default) offer search_tools and call_tool, plus pinned tools
    --mode all                offer every upstream tool under its exported name
    --http ADDR               Streamable HTTP at http://ADDR/mcp (loopback only) instead of stdio,
                              and an admin page at http://ADDR/ whose address with its token
                              is printed on stderr (port 0: a free port)
    --pin TOOL                also offer TOOL directly in search mode; repeatable
    --max-results N           at most N tools per search_tools answer (default 8)
    --hold-new-tools          quarantine tools a known server adds, until approved
    --no-quarantine           do not fingerprint tools (no rug-pull protection)
APPROVE: trust quarantined tools (a changed description or schema); no TOOL lists them.

    -h, --help                this help
";

thread_local! {
    static OUTPUT: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Appends to the command's output, written by [`flush_output`] when the command ends.
pub(crate) fn push_output(text: String) {
    OUTPUT.with(|out| out.borrow_mut().push_str(&text));
}

/// Writes the output gathered so far. `println!` panics when stdout is closed early
/// (`capstore select ... | head`); a closed pipe here just ends the output.
fn flush_output() -> Result<(), String> {
    let text = OUTPUT.with(|out| std::mem::take(&mut *out.borrow_mut()));
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("stdout: {e}")),
        _ => Ok(()),
    }
}

/// Runs the command line; errors print on stderr with exit status 2.
pub(crate) fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match dispatch(&args).and_then(|()| flush_output()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("capstore: {message}");
            ExitCode::from(2)
        }
    }
}

fn dispatch(args: &[String]) -> Result<(), String> {
    let rest = args.get(1..).unwrap_or_default();
    match args.first().map(String::as_str) {
        None | Some("-h" | "--help" | "help") => {
            push_output(HELP.to_string());
            Ok(())
        }
        Some("select") => select::run(rest),
        Some("explain") => explain::run(rest),
        Some("stats") => stats::run(rest),
        Some("call") => call::run(rest),
        Some("serve") => serve::run(rest),
        Some("approve") => approve::run(rest),
        Some("eval") => eval::run(rest),
        // Hidden: a benchmark tool, documented in BENCHMARKS.md, not in the help.
        Some("gen-catalog") => synth::run(rest),
        Some(other) => Err(format!("unknown command `{other}` (try `capstore --help`)")),
    }
}
