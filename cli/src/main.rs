//! The `capstore` command line: `select`, `explain`, `stats` and `call` over the bundled catalog
//! (or your own catalog file, MCP tool lists and live servers), `serve` (the MCP gateway),
//! `approve`, and `eval` for selection quality. See `capstore --help`; the commands live in
//! `src/cli`, the only code that parses argv (ARCHITECTURE.md).

#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
