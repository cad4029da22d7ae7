//! Argument dispatch for the `capstore` binary. Arguments are parsed by hand: a handful of
//! commands with a few flags each do not need a parser crate in every user's build.

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
mod auth;
mod call;
mod clients;
mod compact;
mod eval;
mod explain;
mod hybrid;
mod select;
mod serve;
mod source;
mod state;
mod stats;
mod sweep;
mod synth;
mod usage;

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
    capstore approve [TOOL... | --all] (--mcp-config FILE | --state URL [--namespace NS])
    capstore auth SERVER --mcp-config FILE [--port N] [--wait SECONDS] [--state URL [--namespace NS]]
    capstore clients [list | add NAME [--server S]... [--tool PATTERN]... [--deny-tag T]... | revoke NAME]
                     (--mcp-config FILE | --state URL [--namespace NS])
    capstore eval --tools FILE --queries FILE [OPTIONS]   (see `capstore eval --help`)
    capstore compact --state URL [--namespace NS]
    capstore usage (--usage FILE | --mcp-config FILE) [--tool TOOL] [--top N] [--json]

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
    --connect-timeout SECS    give up on starting a live server and its initialize after SECS
                              (default 30)
    --max-pages N             read at most N tools/list pages from one server (default 1000)
    --max-server-tools N      accept at most N tools from one server (default 20000)
    --max-tool-bytes N        drop a tool whose definition is over N bytes (default 65536)
    --no-quarantine           do not fingerprint live tools (no rug-pull protection)
    --hold-new-tools          quarantine tools a known server adds, until approved
                              (live tools are checked against <config>.quarantine.json, the
                              trust file `capstore approve` edits, by every command)
    --usage FILE              what earlier calls taught (a usage file, as `capstore serve`
                              keeps in <config>.usage.json): tools come with the tools they
                              were called with

SELECT:
    --max-tools N             send at most N tools (default 11)
    --explain                 show each term's BM25 contribution
    --json                    print the provider request's `tools` JSON instead of the table
    --provider P              openai (chat completions, default), openai-responses, anthropic
    --defer                   with anthropic or openai-responses: the provider's hosted tool
                              search tool, then the selected tools, then the rest of the
                              catalog marked \"defer_loading\": true; with anthropic also
                              \"betas\": the anthropic-beta header the request needs
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
                              is printed on stderr (port 0: a free port); requests whose Host
                              is not this listener, or whose Origin is not a loopback origin
                              of its port, are refused (403)
    --allow-origin ORIGIN     also accept requests from the web origin ORIGIN over --http
                              (https://app.example.com); repeatable. `null` is never accepted
    --admin-token-file FILE   the admin page's token (at least 32 letters, digits, - or _),
                              instead of a new one each start: also what GET /metrics asks
                              for (`Authorization: Bearer TOKEN`; Prometheus text format)
    --audit-arguments         audit a client's calls with their arguments (by default: who,
                              which tool and how it ended only)
    --otlp-endpoint URL       export each call's spans (client -> gateway -> upstream, in the
                              client's trace when it sends `traceparent`) to the OpenTelemetry
                              collector at URL over OTLP/HTTP (http://127.0.0.1:4318; spans go
                              to URL/v1/traces). Default: OTEL_EXPORTER_OTLP_ENDPOINT, if set
    --pin TOOL                also offer TOOL directly in search mode; repeatable
    --max-results N           at most N tools per search_tools answer (default 8)
    --state postgres://...    share the catalog with every gateway on that PostgreSQL (its
                              change log), and audit tool calls there; live servers' tools
                              stay local. --namespace NS: which shared catalog (default capstore).
                              The quarantine's trust state is shared there too, instead of the
                              trust file: approve with `capstore approve --state URL`
    The gateway learns from the calls it forwards (a session's run of calls is a turn): the
    tools called together come together in later searches. Kept in <config>.usage.json
    (--usage FILE to choose the file), or with --state in the shared log.
APPROVE: trust quarantined tools (a changed description or schema); no TOOL lists them.
         --mcp-config FILE edits that configuration's trust file; --state URL [--namespace NS]
         the trust state shared by the gateways of `serve --state URL` (one approval, all).
AUTH:    sign in to a Streamable HTTP server whose entry has \"oauth\": true (or
         {\"scopes\": [...]}), once: discovers its authorization server, registers capstore,
         prints the address to open (stdout), listens on 127.0.0.1 (--port N, default any
         free port) for the redirect (--wait SECONDS, default 300), and keeps the token beside
         the configuration (FILE.tokens.json, mode 0600), or with --state URL [--namespace NS]
         in the PostgreSQL every gateway of `serve --state URL` shares (one sign-in for all).
         `serve` refreshes it before it expires, one gateway at a time; a server whose refresh
         is refused shows as needing sign-in.
CLIENTS: who may use `serve --http`, each with a token and a scope (kept hashed beside the
         configuration, FILE.clients.json). With at least one client every MCP request must
         send `Authorization: Bearer TOKEN`, and sees and runs only its scope. With
         --state URL [--namespace NS] instead of --mcp-config, the clients shared by every
         gateway of `serve --state URL` (one add or revoke, all of them).
         clients [list] --mcp-config FILE
         clients add NAME --mcp-config FILE [--server S]... [--tool PATTERN]... [--deny-tag TAG]...
                                   prints the new token once (on stdout)
         clients revoke NAME --mcp-config FILE
USAGE:   what the calls taught, tool by tool: turns it was called in, calls, turns it was
         called of those it was offered, and its strongest companions (called before it, or
         with it, in how many of its turns); --usage FILE, or --mcp-config FILE for the usage
         `capstore serve` keeps beside that configuration.
COMPACT: fold a shared catalog's change log in PostgreSQL (postgres://...) into its snapshot
         row, which new replicas start from; --namespace NS names the catalog (default capstore).

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
        Some("auth") => auth::run(rest),
        Some("clients") => clients::run(rest),
        Some("eval") => eval::run(rest),
        Some("compact") => compact::run(rest),
        Some("usage") => usage::run(rest),
        // Hidden: a benchmark tool, documented in BENCHMARKS.md, not in the help.
        Some("gen-catalog") => synth::run(rest),
        Some(other) => Err(format!("unknown command `{other}` (try `capstore --help`)")),
    }
}

/// Parses a command line as [`dispatch`] would, without loading or running anything: the
/// argument parser alone, for the tests.
#[cfg(test)]
fn parse_only(args: &[String]) -> Result<(), String> {
    let rest = args.get(1..).unwrap_or_default();
    match args.first().map(String::as_str) {
        Some("select") => select::parse(rest).map(drop),
        Some("explain") => explain::parse(rest).map(drop),
        Some("stats") => stats::parse(rest).map(drop),
        Some("call") => call::parse(rest).map(drop),
        Some("serve") => serve::parse(rest).map(drop),
        Some("approve") => approve::parse(rest).map(drop),
        Some("auth") => auth::parse(rest).map(drop),
        Some("clients") => clients::parse(rest).map(drop),
        Some("eval") => eval::parse_eval(rest).map(drop),
        Some("gen-catalog") => synth::parse(rest).map(drop),
        Some("usage") => usage::parse(rest).map(drop),
        _ => Ok(()),
    }
}

#[cfg(test)]
#[allow(clippy::expect_used)] // A test fails by panicking.
mod tests {
    use super::parse_only;
    use proptest::prelude::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn durations_out_of_range_are_refused_by_name() {
        let commands: [&[&str]; 5] = [
            &["call", "t", "{}"],
            &["select", "a message"],
            &["serve"],
            &["stats"],
            &["explain", "t", "a message"],
        ];
        for command in commands {
            for flag in ["--call-timeout", "--connect-timeout"] {
                for bad in [
                    "1e20", "NaN", "nan", "inf", "-1", "0", "-0", "", "1e-300", "x",
                ] {
                    let mut args = argv(command);
                    args.extend(argv(&["--mcp-config", "f.json", flag, bad]));
                    let error = parse_only(&args).expect_err(bad);
                    assert!(
                        error.starts_with(&format!("{flag}: `{bad}` is not a number of seconds")),
                        "{command:?} {flag} {bad}: {error}"
                    );
                }
                let mut good = argv(command);
                good.extend(argv(&["--mcp-config", "f.json", flag, "0.5"]));
                assert_eq!(parse_only(&good), Ok(()), "{command:?} {flag} 0.5");
            }
        }
    }

    #[test]
    fn counts_and_weights_out_of_range_are_refused_by_name() {
        let cases: &[(&[&str], &str)] = &[
            (&["select", "m", "--max-tools", "0"], "--max-tools"),
            (
                &["select", "m", "--max-tools", "99999999999999999999999"],
                "--max-tools",
            ),
            (&["select", "m", "--max-tools", "-3"], "--max-tools"),
            (
                &["select", "m", "--lexical-weight", "NaN"],
                "--lexical-weight",
            ),
            (
                &["select", "m", "--lexical-weight", "1.5"],
                "--lexical-weight",
            ),
            (&["select", "m", "--depth", "0"], "--depth"),
            (
                &["serve", "--mcp-config", "f", "--max-results", "0"],
                "--max-results",
            ),
            (
                &["serve", "--mcp-config", "f", "--max-pages", "0"],
                "--max-pages",
            ),
            (
                &["serve", "--mcp-config", "f", "--max-server-tools", "-1"],
                "--max-server-tools",
            ),
            (
                &["serve", "--mcp-config", "f", "--max-tool-bytes", "1e9"],
                "--max-tool-bytes",
            ),
            (
                &["eval", "--tools", "t", "--queries", "q", "--k1", "inf"],
                "--k1",
            ),
            (
                &["eval", "--tools", "t", "--queries", "q", "--b", "NaN"],
                "--b",
            ),
            (
                &["eval", "--tools", "t", "--queries", "q", "--k", "0"],
                "--k",
            ),
            (&["eval", "--field-weight", "name=NaN"], "--field-weight"),
            (&["gen-catalog", "--tools", "1e20"], "--tools"),
        ];
        for (args, flag) in cases {
            let error = parse_only(&argv(args)).expect_err(&args.join(" "));
            assert!(error.starts_with(&format!("{flag}: ")), "{args:?}: {error}");
        }
    }

    fn word() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(vec![
                "select",
                "explain",
                "stats",
                "call",
                "serve",
                "approve",
                "auth",
                "clients",
                "--server",
                "--tool",
                "--deny-tag",
                "eval",
                "gen-catalog",
                "--catalog",
                "--mcp",
                "--mcp-config",
                "--bundled",
                "--call-timeout",
                "--connect-timeout",
                "--max-pages",
                "--max-server-tools",
                "--max-tool-bytes",
                "--no-quarantine",
                "--hold-new-tools",
                "--max-tools",
                "--explain",
                "--json",
                "--provider",
                "--defer",
                "--embedder",
                "--lexical-weight",
                "--depth",
                "--vector-cache",
                "--mode",
                "--http",
                "--pin",
                "--max-results",
                "--allow-origin",
                "--admin-token-file",
                "--otlp-endpoint",
                "--all",
                "--tools",
                "--queries",
                "--k",
                "--k1",
                "--b",
                "--field-weight",
                "--split",
                "--tools-per-skill",
                "--seed",
                "--help",
                "-h",
                "1e20",
                "NaN",
                "-inf",
                "-1",
                "0",
                "1",
                "0.5",
                "18446744073709551616",
                "",
                "=",
                "a=b",
                "=b",
                "a=",
                "127.0.0.1:0",
                "[::1]:8808",
                "0.0.0.0:1",
                "http://localhost:1",
                "null",
                "anthropic",
                "all",
                "search",
                "{}",
                "[",
                "\u{0}",
                "é/ü",
            ])
            .prop_map(str::to_string),
            "\\PC{0,12}",
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        /// Whatever the command line, parsing it answers (`Ok` or an error), never panics.
        #[test]
        fn no_argv_panics(args in prop::collection::vec(word(), 0..9)) {
            let _ = parse_only(&args);
        }
    }
}
