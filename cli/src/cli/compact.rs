//! `capstore compact --state URL`: folds a shared catalog's log in PostgreSQL into its snapshot
//! row (`capstore::sync::compact`), so that new replicas start from the snapshot.

use capstore::sync::{SyncOptions, compact};

use super::args::{Args, unknown};

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        super::push_output(super::HELP.to_string());
        return Ok(());
    }
    let mut url = None;
    let mut options = SyncOptions::default();
    let mut it = Args::new(args);
    while let Some(arg) = it.next() {
        match arg {
            "--state" => url = Some(it.value(arg)?.to_string()),
            "--namespace" => {
                options = options
                    .with_namespace(it.value(arg)?)
                    .map_err(|e| format!("--namespace: {e}"))?;
            }
            other => return Err(unknown("compact", other)),
        }
    }
    let url = url.ok_or("compact: give the PostgreSQL URL with --state postgres://...")?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("compact: cannot start the runtime: {e}"))?;
    let version = runtime
        .block_on(compact(&url, &options))
        .map_err(|e| format!("compact: {e}"))?;
    say!("compacted: the snapshot holds version {version}; the log keeps what comes after");
    Ok(())
}
