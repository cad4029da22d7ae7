//! The page's HTML: the shell and the live sections, each a string built with `format!`, every
//! piece of text that comes from a server, a tool or a person escaped by [`esc`] on the way in.
//! (Hostile servers write tool descriptions: nothing they send may become markup.)

use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use parking_lot::Mutex;

use serde_json::Value;

use crate::gateway::ClientRecord;
use crate::mcp::live::{AuthStatus, QuarantineReason, ServerState, ServerStatus};

use super::archive::{Definition, Held};
use super::calls::Call;
use super::diff::side_by_side;
use super::escape::esc;

/// `HH:MM:SS UTC`.
fn clock(at: SystemTime) -> String {
    let secs = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let day = secs % 86_400;
    format!(
        "{:02}:{:02}:{:02} UTC",
        day / 3600,
        day % 3600 / 60,
        day % 60
    )
}

/// How long ago, in the largest whole unit.
fn ago(at: SystemTime) -> String {
    let secs = at.elapsed().map_or(0, |d| d.as_secs());
    match secs {
        0..60 => format!("{secs} s ago"),
        60..3600 => format!("{} min ago", secs / 60),
        3600..86_400 => format!("{} h ago", secs / 3600),
        _ => format!("{} days ago", secs / 86_400),
    }
}

fn from_unix(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs)
}

/// The whole page, with the live sections as they are now.
pub(super) fn shell(
    mcp_url: &str,
    servers: &str,
    quarantine: &str,
    clients: &str,
    calls: &str,
) -> String {
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>capstore gateway</title>
<link rel="stylesheet" href="/admin/page.css">
<script src="/admin/page.js" defer></script>
</head>
<body>
<header>
<h1>capstore gateway</h1>
<p class="muted">MCP clients connect to <code>{mcp}</code> · <span id="live">live</span></p>
</header>
<main>
<section>
<h2>Servers</h2>
<div id="servers">{servers}</div>
</section>
<section>
<h2>Quarantine</h2>
<p id="decision" class="muted" role="status"></p>
<div id="quarantine">{quarantine}</div>
</section>
<section>
<h2>Search</h2>
<form id="search" autocomplete="off">
<input id="query" name="query" type="search" placeholder="what the model wants to do, in plain words">
<button type="submit">Search</button>
</form>
<div id="results"></div>
</section>
<section>
<h2>Clients</h2>
<div id="clients">{clients}</div>
</section>
<section>
<h2>Recent calls</h2>
<div id="calls">{calls}</div>
</section>
</main>
</body>
</html>
"#,
        mcp = esc(mcp_url),
    )
}

/// The servers' table; `None` when no hub is followed.
pub(super) fn servers(statuses: Option<&[ServerStatus]>) -> String {
    let Some(statuses) = statuses else {
        return r#"<p class="muted">No live servers are followed.</p>"#.into();
    };
    if statuses.is_empty() {
        return r#"<p class="muted">The configuration has no servers.</p>"#.into();
    }
    let mut rows = String::new();
    for s in statuses {
        // A server being tried again after a failure is still down (`down_since` says since
        // when); "connecting" is the first attempt only.
        let (class, state) = match s.state {
            ServerState::Ready => ("up", "up"),
            ServerState::Connecting if s.down_since.is_none() && s.last_error.is_none() => {
                ("connecting", "connecting")
            }
            ServerState::Connecting | ServerState::Reconnecting => ("down", "down"),
            ServerState::Stopped => ("stopped", "stopped"),
            ServerState::SignInRequired => ("down", "needs sign-in"),
        };
        let since = match s.down_since {
            Some(at) => format!(r#"{}<div class="muted">{}</div>"#, clock(at), ago(at)),
            None => String::new(),
        };
        let mut detail = String::new();
        if s.state != ServerState::Ready
            && let Some(error) = &s.last_error
        {
            detail.push_str(&format!(r#"<div class="reason">{}</div>"#, esc(error)));
        }
        if let Some(info) = &s.server_info {
            detail.push_str(&format!(r#"<div class="muted">{}</div>"#, esc(info)));
        }
        if let Some(auth) = &s.auth {
            detail.push_str(&sign_in(s.state, auth));
        }
        if !s.stderr.is_empty() {
            detail.push_str(&format!(
                "<details><summary>stderr ({} lines)</summary><pre>{}</pre></details>",
                s.stderr.len(),
                esc(&s.stderr.join("\n"))
            ));
        }
        rows.push_str(&format!(
            r#"<tr data-server="{name}"><td><b>{name}</b></td><td><span class="state {class}">{state}</span></td><td>{since}</td><td class="num">{tools}</td><td class="num">{reconnects}</td><td>{detail}</td></tr>"#,
            name = esc(&s.name),
            tools = s.tools,
            reconnects = s.connects.saturating_sub(1),
        ));
    }
    format!(
        "<table><thead><tr><th>Server</th><th>State</th><th>Down since</th><th>Tools</th>\
         <th>Reconnects</th><th>Detail</th></tr></thead><tbody>{rows}</tbody></table>"
    )
}

/// An OAuth server's sign-in: the command to run when it needs one, its refreshes otherwise.
/// Never a token (the status holds none).
fn sign_in(state: ServerState, auth: &AuthStatus) -> String {
    let r = auth.refreshes;
    let mut out = if state == ServerState::SignInRequired || !auth.signed_in {
        format!(
            r#"<div class="reason">Sign in with <code class="sign-in">{}</code></div>"#,
            esc(&auth.sign_in_command)
        )
    } else {
        r#"<div class="muted">OAuth: signed in</div>"#.to_string()
    };
    out.push_str(&format!(
        r#"<div class="muted">token refreshes: {} ok, {} failed, {} refused</div>"#,
        r.ok, r.error, r.rejected
    ));
    if let Some(error) = &auth.last_refresh_error {
        out.push_str(&format!(
            r#"<div class="reason">last refresh failed: {} (token kept)</div>"#,
            esc(error)
        ));
    }
    out
}

/// One held tool, as the quarantine section shows it.
pub(super) struct HeldTool {
    pub(super) key: String,
    pub(super) reason: QuarantineReason,
    /// The fingerprint held back (what Approve trusts).
    pub(super) pending: String,
    /// The trusted fingerprint, if any was ever trusted.
    pub(super) trusted: Option<String>,
    pub(super) approved: Option<Definition>,
    pub(super) new: Option<Definition>,
    pub(super) kept: Option<Held>,
}

/// The held tools' rendered diffs, kept while the definitions compared stay the same: a diff
/// can take millions of comparisons (up to the diff's bound), and the page renders the
/// quarantine once a second. Holds the diffs of the tools held at the last render only.
#[derive(Default)]
pub(super) struct Diffs(Mutex<HashMap<String, Arc<str>>>);

/// The quarantine section: each held tool with its diff and buttons.
pub(super) fn quarantine(
    held: Result<Vec<HeldTool>, String>,
    note: Option<&str>,
    diffs: &Diffs,
) -> String {
    // Only the diffs of the tools held now are kept.
    let mut kept = diffs.0.lock();
    let mut previous = std::mem::take(&mut *kept);
    let mut out = String::new();
    if let Some(note) = note {
        out.push_str(&format!(r#"<p class="reason">{}</p>"#, esc(note)));
    }
    let held = match held {
        Ok(held) => held,
        Err(error) => {
            out.push_str(&format!(
                r#"<p class="reason">The trust file cannot be read, so every upstream tool is held: {}</p>"#,
                esc(&error)
            ));
            return out;
        }
    };
    if held.is_empty() {
        out.push_str(r#"<p class="muted" id="nothing-held">Nothing is held.</p>"#);
        return out;
    }
    for tool in &held {
        let print = |d: &Option<Definition>| d.as_ref().map(|d| d.fingerprint.clone());
        // Everything `definitions` reads.
        let id = format!(
            "{}\n{:?}\n{:?}\n{:?}\n{:?}",
            tool.key,
            tool.reason,
            tool.trusted,
            print(&tool.approved),
            print(&tool.new)
        );
        let diff = previous
            .remove(&id)
            .unwrap_or_else(|| definitions(tool).into());
        out.push_str(&held_tool(tool, &diff));
        kept.insert(id, diff);
    }
    out
}

/// One held tool: its summary, its definitions (`diff`, from [`definitions`]) and buttons.
fn held_tool(tool: &HeldTool, diff: &str) -> String {
    let why = match tool.reason {
        QuarantineReason::Changed => "its definition changed since it was approved",
        QuarantineReason::New => "a new tool of a known server",
    };
    let kept = match &tool.kept {
        Some(kept) if kept.fingerprint == tool.pending => format!(
            r#" <span class="kept">kept held at {}</span>"#,
            clock(from_unix(kept.at))
        ),
        _ => String::new(),
    };
    format!(
        r#"<details class="held" data-key="{key}"><summary><b>{key}</b> <span class="muted">{why}</span>{kept}</summary>
{diff}
<p class="muted">Fingerprints: approved {trusted}, new {pending}</p>
<div class="actions"><button type="button" class="approve" data-action="approve" data-tool="{key}" data-fingerprint="{pending_attr}">Approve</button> <button type="button" class="hold" data-action="hold" data-tool="{key}" data-fingerprint="{pending_attr}">Keep held</button></div>
</details>"#,
        key = esc(&tool.key),
        trusted = tool.trusted.as_deref().map_or("none".into(), short),
        pending = short(&tool.pending),
        pending_attr = esc(&tool.pending),
    )
}

/// A held tool's approved and new description and schema, side by side.
fn definitions(tool: &HeldTool) -> String {
    let missing_old = match (&tool.trusted, tool.reason) {
        (None, _) | (_, QuarantineReason::New) => "(nothing was approved before: a new tool)",
        _ => {
            "(the approved text was not recorded: it was approved before this gateway kept definitions)"
        }
    };
    let (old_text, old_schema) = tool.approved.as_ref().map_or((None, None), |d| {
        (Some(d.description.as_str()), Some(pretty(&d.input_schema)))
    });
    let (new_text, new_schema) = tool.new.as_ref().map_or((None, None), |d| {
        (Some(d.description.as_str()), Some(pretty(&d.input_schema)))
    });
    let description = columns(old_text, new_text, true, missing_old);
    let schema = columns(
        old_schema.as_deref(),
        new_schema.as_deref(),
        false,
        missing_old,
    );
    format!("<h3>Description</h3>{description}\n<h3>Input schema</h3>{schema}")
}

fn short(fingerprint: &str) -> String {
    format!(
        "<code>{}</code>",
        esc(fingerprint.get(..12).unwrap_or(fingerprint))
    )
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// Approved on the left, new on the right, the differences marked.
fn columns(old: Option<&str>, new: Option<&str>, words: bool, missing_old: &str) -> String {
    let (left, right) = match (old, new) {
        (Some(old), Some(new)) => side_by_side(old, new, words),
        (None, Some(new)) => (
            format!(r#"<span class="muted">{}</span>"#, esc(missing_old)),
            format!("<ins>{}</ins>", esc(new)),
        ),
        (old, None) => (
            old.map(esc)
                .unwrap_or_else(|| format!(r#"<span class="muted">{}</span>"#, esc(missing_old))),
            r#"<span class="muted">(its server does not offer it now)</span>"#.into(),
        ),
    };
    format!(
        r#"<div class="diff"><div class="old"><div class="label">approved</div><pre>{left}</pre></div><div class="new"><div class="label">new</div><pre>{right}</pre></div></div>"#
    )
}

/// What `search_tools` answered, as the page shows it.
pub(super) fn search(query: &str, answer: Result<Value, String>) -> String {
    let answer = match answer {
        Ok(answer) => answer,
        Err(error) => return format!(r#"<p class="reason">{}</p>"#, esc(&error)),
    };
    let mut out = format!(
        r#"<p class="muted">search_tools for <q>{}</q>:</p>"#,
        esc(query)
    );
    for key in ["quarantined", "note"] {
        if let Some(text) = answer[key].as_str() {
            out.push_str(&format!(r#"<p class="reason">{}</p>"#, esc(text)));
        }
    }
    let mut items = String::new();
    for tool in answer["tools"].as_array().into_iter().flatten() {
        let text = |key: &str| tool[key].as_str().unwrap_or("").to_string();
        let mut description = text("description");
        if description.chars().count() > 300 {
            description = description.chars().take(300).collect::<String>() + "…";
        }
        let words = |key: &str| -> Vec<String> {
            let list = tool[key].as_array().into_iter().flatten();
            list.filter_map(Value::as_str).map(str::to_string).collect()
        };
        let why = words("why");
        let goes_with = words("goes_with");
        let goes_with = if goes_with.is_empty() {
            String::new()
        } else {
            format!(
                r#"<div class="why">goes with: {}</div>"#,
                esc(&goes_with.join("; "))
            )
        };
        let runnable = if tool["runnable"] == Value::Bool(true) {
            ""
        } else {
            r#" <span class="state stopped">not runnable here</span>"#
        };
        items.push_str(&format!(
            r#"<li><b class="tool">{name}</b> <span class="muted">on {server} · score {score:.2}</span>{runnable}<div>{description}</div><div class="why">why: {why}</div>{goes_with}</li>"#,
            name = esc(&text("name")),
            server = esc(&text("server")),
            score = tool["score"].as_f64().unwrap_or(0.0),
            description = esc(&description),
            why = esc(&why.join("; ")),
        ));
    }
    if !items.is_empty() {
        out.push_str(&format!(r#"<ol class="results">{items}</ol>"#));
    }
    out
}

/// The recent calls' table.
pub(super) fn calls(calls: &[Call]) -> String {
    if calls.is_empty() {
        return r#"<p class="muted">No calls yet.</p>"#.into();
    }
    let mut rows = String::new();
    for call in calls {
        let (server, _) = call.tool.split_once('/').unwrap_or(("", &call.tool));
        let client = call.client.as_deref().unwrap_or("");
        let (class, status, took, error) = match &call.outcome {
            None => ("connecting", "running", String::new(), ""),
            Some((took, None)) => (
                "up",
                "ok",
                format!("{:.0} ms", took.as_secs_f64() * 1e3),
                "",
            ),
            Some((took, Some(error))) => (
                "down",
                "failed",
                format!("{:.0} ms", took.as_secs_f64() * 1e3),
                error.as_str(),
            ),
        };
        rows.push_str(&format!(
            r#"<tr><td>{at}</td><td><b class="tool">{tool}</b></td><td>{server}</td><td>{client}</td><td><span class="state {class}">{status}</span></td><td class="num">{took}</td><td class="reason">{error}</td></tr>"#,
            at = clock(call.at),
            tool = esc(&call.tool),
            server = esc(server),
            client = esc(client),
            error = esc(error),
        ));
    }
    format!(
        "<table><thead><tr><th>Started</th><th>Tool</th><th>Server</th><th>Client</th>\
         <th>Status</th><th>Duration</th><th>Error</th></tr></thead><tbody>{rows}</tbody></table>"
    )
}

/// The clients of `capstore clients`, each with its scope; with none, whether requests need a
/// token (none left after a revocation: every request is refused).
pub(super) fn clients(clients: &[ClientRecord], asks_tokens: bool) -> String {
    if clients.is_empty() && asks_tokens {
        return r#"<p class="muted">No clients left: every MCP request is refused until <code>capstore clients add NAME</code> makes one.</p>"#.into();
    }
    if clients.is_empty() {
        return r#"<p class="muted">No clients: MCP requests need no token (one person on loopback). <code>capstore clients add NAME</code> makes one.</p>"#.into();
    }
    let rows: String = clients
        .iter()
        .map(|c| {
            format!(
                r#"<tr><td><b>{name}</b></td><td>{scope}</td></tr>"#,
                name = esc(&c.name),
                scope = esc(&c.scope.to_string())
            )
        })
        .collect();
    format!(
        "<table><thead><tr><th>Client</th><th>May use</th></tr></thead><tbody>{rows}</tbody></table>"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_text_never_becomes_markup() {
        let hostile = r#"<script>alert(1)</script><img src=x onerror="alert(2)">'"&"#;
        assert_eq!(
            esc(hostile),
            "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=&quot;alert(2)&quot;&gt;&#39;&quot;&amp;"
        );
        let answer = serde_json::json!({"tools": [{
            "name": "s/<b>x</b>", "server": "<i>s</i>", "description": hostile,
            "score": 1.0, "why": ["BM25 2.50"], "goes_with": ["fs/cd (before it, in 9 of its 10 turns)"], "runnable": true}]});
        let html = search("<q>", Ok(answer));
        assert!(!html.contains("<script>") && !html.contains("<img") && !html.contains("<i>"));
        assert!(html.contains("why: BM25 2.50"), "{html}");
        assert!(
            html.contains("goes with: fs/cd (before it, in 9 of its 10 turns)"),
            "{html}"
        );
        let call = Call {
            tool: "s/<b>".into(),
            at: SystemTime::now(),
            outcome: Some((std::time::Duration::from_millis(12), Some(hostile.into()))),
            client: Some("<i>ci</i>".into()),
            call_id: "1".into(),
        };
        let html = calls(&[call]);
        assert!(!html.contains("<script>") && html.contains("12 ms") && html.contains("failed"));
        assert!(html.contains("&lt;i&gt;ci&lt;/i&gt;"), "{html}");
    }

    fn held(new: &str) -> HeldTool {
        let definition = |print: &str, description: &str| Definition {
            fingerprint: print.into(),
            description: description.into(),
            input_schema: serde_json::json!({"type": "object"}),
            first_seen: 0,
        };
        HeldTool {
            key: "s/echo".into(),
            reason: QuarantineReason::Changed,
            pending: new.into(),
            trusted: Some("v1".into()),
            approved: Some(definition("v1", "Echo a message back")),
            new: Some(definition(new, &format!("Echo it <script>{new}</script>"))),
            kept: None,
        }
    }

    #[test]
    fn a_held_tools_diff_is_escaped_and_kept_while_it_is_held() {
        let diffs = Diffs::default();
        let html = quarantine(Ok(vec![held("v2")]), None, &diffs);
        assert!(
            html.contains("&lt;script&gt;v2") && !html.contains("<script>"),
            "{html}"
        );
        assert!(html.contains(r#"data-fingerprint="v2""#), "{html}");
        let first = Arc::clone(diffs.0.lock().values().next().expect("kept"));
        quarantine(Ok(vec![held("v2")]), None, &diffs);
        let again = Arc::clone(diffs.0.lock().values().next().expect("kept"));
        assert!(
            Arc::ptr_eq(&first, &again),
            "the same diff, not computed again"
        );
        // Changed again: a new diff, and the old one is not kept.
        let html = quarantine(Ok(vec![held("v3")]), None, &diffs);
        assert!(html.contains("&lt;script&gt;v3"), "{html}");
        assert_eq!(diffs.0.lock().len(), 1);
        quarantine(Ok(Vec::new()), None, &diffs);
        assert!(diffs.0.lock().is_empty(), "nothing held, nothing kept");
    }

    #[test]
    fn clock_and_ago_read_plainly() {
        assert_eq!(clock(from_unix(86_400 + 3661)), "01:01:01 UTC");
        let earlier = SystemTime::now() - std::time::Duration::from_secs(125);
        assert_eq!(ago(earlier), "2 min ago");
    }
}
