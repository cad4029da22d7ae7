//! The `capstore` command line: `select`, `explain` and `stats` over the bundled catalog (or
//! your own catalog file and MCP tool lists), and `eval` for selection quality. See
//! `capstore --help`.

#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
