//! `capstore usage`: what the agent's calls taught, tool by tool: how often each was called,
//! how often it was called when offered, and its strongest companions.

use std::path::PathBuf;

use capstore::usage::{Usage, read_file, usage_path};

use super::args::{Args, count, unknown};

pub(crate) struct UsageArgs {
    file: PathBuf,
    tool: Option<String>,
    top: usize,
    json: bool,
}

/// The arguments of a `usage` command line; `None` for `--help`.
pub(crate) fn parse(args: &[String]) -> Result<Option<UsageArgs>, String> {
    let (mut file, mut config, mut tool, mut top, mut json) = (None, None, None, 20, false);
    let mut it = Args::new(args);
    while let Some(arg) = it.next() {
        match arg {
            "-h" | "--help" => return Ok(None),
            "--usage" => file = Some(PathBuf::from(it.value(arg)?)),
            "--mcp-config" => config = Some(PathBuf::from(it.value(arg)?)),
            "--tool" => tool = Some(it.value(arg)?.to_string()),
            "--top" => top = count(arg, it.value(arg)?, 1, 1_000_000)?,
            "--json" => json = true,
            flag => return Err(unknown("usage", flag)),
        }
    }
    let file = match (file, config) {
        (Some(file), None) => file,
        (None, Some(config)) => usage_path(&config),
        _ => {
            return Err(
                "usage: give the usage file (--usage FILE) or the gateway's configuration \
                 (--mcp-config FILE, whose usage is FILE.usage.json)"
                    .into(),
            );
        }
    };
    Ok(Some(UsageArgs {
        file,
        tool,
        top,
        json,
    }))
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let Some(args) = parse(args)? else {
        super::push_output(super::HELP.to_string());
        return Ok(());
    };
    let mut rows = read_file(&args.file).map_err(|e| e.to_string())?;
    if let Some(tool) = &args.tool {
        rows.retain(|u| u.tool == *tool);
        if rows.is_empty() {
            return Err(format!(
                "usage: nothing learned about `{tool}` in {}",
                args.file.display()
            ));
        }
    }
    // The most called first; ties by name.
    rows.sort_by(|a, b| b.turns.cmp(&a.turns).then_with(|| a.tool.cmp(&b.tool)));
    let learned = rows.len();
    rows.truncate(args.top);
    if args.json {
        let text = serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?;
        say!("{text}");
        return Ok(());
    }
    say!(
        "{}: {learned} tools learned about; the {} most called:",
        args.file.display(),
        rows.len()
    );
    say!(
        "{:<40} {:>6} {:>6} {:>12}  companions (mostly called before or after it, turns together / its turns)",
        "tool",
        "turns",
        "calls",
        "when offered"
    );
    for usage in &rows {
        say!(
            "{:<40} {:>6} {:>6} {:>12}  {}",
            usage.tool,
            usage.turns,
            usage.calls,
            format!("{}/{}", usage.sent_and_called, usage.sent),
            companions(usage)
        );
    }
    Ok(())
}

/// A row's companions in words, strongest first: `fs/cd (before it, 9/10)`.
fn companions(usage: &Usage) -> String {
    let listed: Vec<String> = usage
        .companions
        .iter()
        .filter(|c| c.together > 0)
        .take(5)
        .map(|c| {
            let how = if c.before * 2 >= c.together {
                "before it"
            } else {
                "after it"
            };
            format!("{} ({how}, {}/{})", c.tool, c.together, usage.turns)
        })
        .collect();
    if listed.is_empty() {
        "-".into()
    } else {
        listed.join(", ")
    }
}
