//! The `capstore` command line: `select`, `explain` and `stats` over the bundled catalog (or
//! your own catalog file and MCP tool lists), and `eval` for selection quality. See
//! `capstore --help`.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
