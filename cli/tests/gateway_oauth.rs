//! Upstream OAuth 2.1 through `capstore auth` and `capstore serve`, against the official MCP
//! Python SDK's authorization server and OAuth-protected MCP server (tests/gateway/
//! oauth_server.py, on loopback, access tokens that live 6 s): sign-in through the loopback
//! redirect, calls, a refresh before expiry, a 5xx during a refresh, a revoked refresh token,
//! and no token anywhere it must not be. Two gateways of one `--state` share one sign-in and
//! one token: a refresh by one is the other's token too.

#[path = "common/gateway.rs"]
mod gateway;
#[path = "../../tests/pg/mod.rs"]
mod pg;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use gateway::HttpGateway;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn installed(path: &str) -> PathBuf {
    let full = root().join(".test-deps").join(path);
    assert!(
        full.exists(),
        "{} is missing: run `bash scripts/test-deps.sh` (the README's test command does)",
        full.display()
    );
    full
}

/// The Python authorization server and MCP server, killed when dropped.
struct OAuthServer {
    child: Child,
    port: u16,
}

impl OAuthServer {
    fn start() -> OAuthServer {
        let mut child = Command::new(installed("venv/bin/python"))
            .arg(root().join("tests/gateway/oauth_server.py"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the OAuth test server starts");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the OAuth test server says where it listens");
        let port = line
            .strip_prefix("listening ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("`listening PORT`, not {line:?}"));
        OAuthServer { child, port }
    }

    fn post(&self, path: &str) -> Value {
        let (head, body) = http("POST", &format!("http://127.0.0.1:{}{path}", self.port));
        assert!(head.starts_with("HTTP/1.1 200"), "{head}\n{body}");
        serde_json::from_str(&body).expect("JSON")
    }

    fn get(&self, path: &str) -> Value {
        let (head, body) = http("GET", &format!("http://127.0.0.1:{}{path}", self.port));
        assert!(head.starts_with("HTTP/1.1 200"), "{head}\n{body}");
        serde_json::from_str(&body).expect("JSON")
    }
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `METHOD url` (an `http://127.0.0.1:PORT/...` address) with `headers`: the reply's head and
/// body (CRLFs as LFs; a chunked body is left as it came).
fn http_with(method: &str, url: &str, headers: &[(&str, &str)]) -> (String, String) {
    let rest = url.strip_prefix("http://").expect("an http:// URL");
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let mut stream = std::net::TcpStream::connect(authority).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nContent-Length: 0\r\n"
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).expect("send");
    let mut reply = String::new();
    stream.read_to_string(&mut reply).expect("read");
    let reply = reply.replace("\r\n", "\n");
    let (head, body) = reply.split_once("\n\n").unwrap_or((&reply, ""));
    (head.to_string(), body.to_string())
}

fn http(method: &str, url: &str) -> (String, String) {
    http_with(method, url, &[])
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim()
            .eq_ignore_ascii_case(name)
            .then_some(value.trim())
    })
}

/// `capstore auth SERVER --mcp-config CONFIG EXTRA...`, driven as a person would: the printed
/// address opened (the test authorization server approves at once and redirects), the redirect
/// followed to capstore's loopback listener. Its stdout and stderr.
fn sign_in(server: &str, config: &Path, extra: &[&str]) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_capstore"))
        .args(["auth", server, "--mcp-config"])
        .arg(config)
        .args(["--wait", "60"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("capstore auth starts");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut url = String::new();
    stdout.read_line(&mut url).expect("the address");
    let url = url.trim().to_string();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.contains("/authorize?"),
        "{url}"
    );
    assert!(
        url.contains("code_challenge_method=S256") && url.contains("redirect_uri="),
        "PKCE and a loopback redirect: {url}"
    );
    let (head, body) = http("GET", &url);
    assert!(head.starts_with("HTTP/1.1 302"), "{head}\n{body}");
    let redirect = header(&head, "location").expect("a redirect").to_string();
    assert!(
        redirect.starts_with("http://127.0.0.1:") && redirect.contains("/callback?code="),
        "{redirect}"
    );
    let (head, body) = http("GET", &redirect);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}\n{body}");
    assert!(body.contains("Signed in to docs"), "{body}");
    let mut err = String::new();
    let status = child.wait().expect("capstore auth ends");
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("stderr");
    assert!(status.success(), "{err}");
    assert!(err.contains("signed in to `docs`"), "{err}");
    format!("{url}\n{redirect}\n{err}")
}

/// A call through the gateway's `call_tool`: `Ok(text)`, or `Err(the error's text)`.
fn call(runtime: &tokio::runtime::Runtime, mcp: &str, tool: &str) -> Result<String, String> {
    runtime.block_on(async {
        let client =
            ().serve(StreamableHttpClientTransport::from_uri(mcp.to_string()))
                .await
                .map_err(|e| format!("connect: {e}"))?;
        let mut params = CallToolRequestParams::new("call_tool");
        params.arguments = json!({"name": tool, "arguments": {}}).as_object().cloned();
        let reply = client.call_tool(params).await;
        let _ = client.cancel().await;
        let result = reply.map_err(|e| e.to_string())?;
        let text: Vec<String> = result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect();
        let text = text.join("\n");
        if result.is_error == Some(true) {
            Err(text)
        } else {
            Ok(text)
        }
    })
}

/// Calls `tool` until it succeeds (at most `within`): its text.
fn call_until_ok(
    runtime: &tokio::runtime::Runtime,
    gateway: &HttpGateway,
    tool: &str,
    within: Duration,
) -> String {
    let deadline = Instant::now() + within;
    loop {
        match call(runtime, &gateway.mcp, tool) {
            Ok(text) => return text,
            Err(error) if Instant::now() > deadline => {
                panic!("{tool} still fails: {error}\nstderr:\n{}", gateway.stderr())
            }
            Err(_) => std::thread::sleep(Duration::from_millis(500)),
        }
    }
}

/// The page's token, from the address the gateway printed.
fn page_token(gateway: &HttpGateway) -> String {
    gateway
        .page
        .split_once("token=")
        .map(|(_, t)| t.to_string())
        .expect("token")
}

fn scrape(gateway: &HttpGateway) -> String {
    let bearer = format!("Bearer {}", page_token(gateway));
    let url = format!("http://127.0.0.1:{}/metrics", gateway.port);
    let (head, body) = http_with("GET", &url, &[("Authorization", &bearer)]);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}\n{body}");
    body
}

fn metric(metrics: &str, series: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}

/// The page's servers section (the live update's HTML), signed in with the page's token.
fn page_servers(gateway: &HttpGateway) -> String {
    let base = format!("http://127.0.0.1:{}", gateway.port);
    let (head, _) = http("GET", &format!("{base}/?token={}", page_token(gateway)));
    let cookie = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("set-cookie: ")
                .map(str::to_string)
        })
        .and_then(|c| c.split(';').next().map(str::to_string))
        .expect("the page's cookie");
    let (head, live) = http_with("GET", &format!("{base}/admin/live"), &[("Cookie", &cookie)]);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let live: Value = serde_json::from_str(
        live.trim()
            .lines()
            .find(|l| l.starts_with('{'))
            .unwrap_or(&live),
    )
    .expect("JSON");
    live["servers"].as_str().expect("servers").to_string()
}

/// What the token file holds for `server` (the test reads it; capstore never prints it).
fn stored(config: &Path, server: &str) -> Value {
    let path = capstore::mcp::live::oauth::tokens_path(config);
    let text = std::fs::read_to_string(path).expect("the token file");
    serde_json::from_str::<Value>(&text).expect("JSON")["servers"][server].clone()
}

#[test]
fn an_oauth_server_is_signed_in_to_refreshed_kept_through_a_5xx_and_asks_for_sign_in_when_revoked()
{
    let dir = std::env::temp_dir().join(format!("capstore-gw-oauth-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let upstream = OAuthServer::start();
    let url = format!("http://127.0.0.1:{}/mcp", upstream.port);
    let config = dir.join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {
            "docs": {"url": url, "oauth": true},
            "plain": {"url": url}
        }})
        .to_string(),
    )
    .expect("config");
    let command = format!("capstore auth docs --mcp-config {}", config.display());
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let mut errors = Vec::new();

    // Before sign-in: the gateway serves; `docs` needs sign-in and says how; `plain` (the same
    // server without "oauth") says to add it.
    let gateway = HttpGateway::start(&config, "127.0.0.1:0", &[]);
    let servers = page_servers(&gateway);
    assert!(
        servers.contains("needs sign-in") && servers.contains(&command),
        "{servers}"
    );
    let stderr = gateway.stderr();
    assert!(
        stderr.contains("`plain` needs sign-in") && stderr.contains("\"oauth\": true"),
        "{stderr}"
    );
    let metrics = scrape(&gateway);
    assert_eq!(
        metric(
            &metrics,
            r#"capstore_gateway_upstream_state{server="docs",state="needs_sign_in"}"#
        ),
        1.0,
        "{metrics}"
    );

    // Sign-in through the loopback redirect; the token file is private.
    let auth_output = sign_in("docs", &config, &[]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let path = capstore::mcp::live::oauth::tokens_path(&config);
        let mode = std::fs::metadata(&path).expect("file").permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }
    let state = upstream.get("/test/state");
    assert_eq!(
        (&state["registered"], &state["codes_exchanged"]),
        (&json!(1), &json!(1)),
        "{state}"
    );

    // The running gateway sees the new token, connects, and the call goes through.
    let first = call_until_ok(&runtime, &gateway, "docs/whoami", Duration::from_secs(30));
    assert_eq!(first, "token #1");

    // Past the refresh point (half of a 6 s token): refreshed before expiry, across a call.
    std::thread::sleep(Duration::from_secs(4));
    let second = call(&runtime, &gateway.mcp, "docs/whoami").expect("refreshed");
    assert_eq!(second, "token #2");
    let metrics = scrape(&gateway);
    assert!(
        metric(
            &metrics,
            r#"capstore_gateway_token_refreshes_total{server="docs",outcome="ok"}"#
        ) >= 1.0,
        "{metrics}"
    );

    // The authorization server answers 503: the call fails with a typed error, the server stays
    // signed in and the token stays stored; once it recovers, the next call goes through.
    upstream.post("/test/fail-refresh?count=1000");
    std::thread::sleep(Duration::from_secs(4));
    let failed = call(&runtime, &gateway.mcp, "docs/whoami").expect_err("refresh fails");
    assert!(
        failed.contains("could not be refreshed") && failed.contains("the token is kept"),
        "{failed}"
    );
    errors.push(failed);
    let kept = stored(&config, "docs");
    assert!(kept["token_response"]["refresh_token"].is_string(), "kept");
    let metrics = scrape(&gateway);
    assert!(
        metric(
            &metrics,
            r#"capstore_gateway_token_refreshes_total{server="docs",outcome="error"}"#
        ) >= 1.0,
        "{metrics}"
    );
    assert_eq!(
        metric(
            &metrics,
            r#"capstore_gateway_upstream_signed_in{server="docs"}"#
        ),
        1.0,
        "{metrics}"
    );
    assert_eq!(
        metric(
            &metrics,
            r#"capstore_gateway_upstream_state{server="docs",state="ready"}"#
        ),
        1.0,
        "{metrics}"
    );
    let servers = page_servers(&gateway);
    assert!(servers.contains("token kept"), "{servers}");
    upstream.post("/test/fail-refresh?count=0");
    let after = call(&runtime, &gateway.mcp, "docs/whoami").expect("recovered");
    assert!(after.starts_with("token #"), "{after}");
    assert!(upstream.get("/test/state")["refresh_faults"].as_u64() >= Some(1));

    // The refresh token is revoked: at the next refresh the server needs sign-in; its tool
    // fails at once with the command to run, and a search says it is not runnable.
    upstream.post("/test/revoke-refresh");
    std::thread::sleep(Duration::from_secs(4));
    let refused = call(&runtime, &gateway.mcp, "docs/whoami").expect_err("refused");
    assert!(
        refused.contains("needs sign-in") && refused.contains(&command),
        "{refused}"
    );
    errors.push(refused.clone());
    let again = call(&runtime, &gateway.mcp, "docs/whoami").expect_err("still refused");
    assert!(again.contains(&command), "{again}");
    errors.push(again);
    let found = runtime.block_on(async {
        let client =
            ().serve(StreamableHttpClientTransport::from_uri(gateway.mcp.clone()))
                .await
                .expect("connect");
        let mut params = CallToolRequestParams::new("search_tools");
        params.arguments = json!({"query": "which token"}).as_object().cloned();
        let reply = client.call_tool(params).await.expect("search");
        let _ = client.cancel().await;
        reply.structured_content.expect("structured")
    });
    let whoami = found["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "docs/whoami"))
        .unwrap_or_else(|| panic!("docs/whoami is still listed: {found}"));
    assert_eq!(whoami["runnable"], json!(false), "{whoami}");
    let why = whoami["unavailable"]["why"].as_str().unwrap_or_default();
    assert!(why.contains(&command), "{whoami}");
    let metrics = scrape(&gateway);
    assert!(
        metric(
            &metrics,
            r#"capstore_gateway_token_refreshes_total{server="docs",outcome="rejected"}"#
        ) >= 1.0,
        "{metrics}"
    );
    assert_eq!(
        metric(
            &metrics,
            r#"capstore_gateway_upstream_state{server="docs",state="needs_sign_in"}"#
        ),
        1.0,
        "{metrics}"
    );
    let servers = page_servers(&gateway);
    assert!(
        servers.contains("needs sign-in") && servers.contains(&command),
        "{servers}"
    );

    // No token, access or refresh, in the gateway's stderr, the page, the metrics, the errors
    // or what `capstore auth` printed.
    let tokens: Vec<String> = upstream
        .get("/test/tokens")
        .as_array()
        .expect("tokens")
        .iter()
        .filter_map(|t| t.as_str().map(str::to_string))
        .collect();
    assert!(tokens.len() >= 6, "{tokens:?}");
    let seen = [
        gateway.stderr(),
        page_servers(&gateway),
        scrape(&gateway),
        errors.join("\n"),
        auth_output,
    ]
    .join("\n");
    for token in &tokens {
        assert!(!seen.contains(token.as_str()), "a token was shown: {seen}");
    }
    drop(gateway);
    let _ = std::fs::remove_dir_all(&dir);
}

/// With `--state`, one `capstore auth --state` signs every gateway in: both use the one token
/// kept in PostgreSQL (none in a file), a refresh by one is the other's next token (the
/// authorization server refreshes once), and calls on both at once past the refresh point all
/// succeed: refreshes take turns under the shared lock, so a rotated refresh token is never
/// spent twice.
#[test]
fn gateways_of_one_state_share_one_sign_in_and_its_refreshes() {
    let dir = std::env::temp_dir().join(format!("capstore-gw-oauth-state-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let upstream = OAuthServer::start();
    let url = format!("http://127.0.0.1:{}/mcp", upstream.port);
    let (pg_url, options) = (pg::url(), pg::options("oauth"));
    let state = [
        "--state",
        pg_url.as_str(),
        "--namespace",
        options.namespace.as_str(),
    ];
    let configs: Vec<PathBuf> = ["a", "b"]
        .iter()
        .map(|name| {
            let config = dir.join(name).join("mcp.json");
            std::fs::create_dir_all(config.parent().expect("dir")).expect("dir");
            std::fs::write(
                &config,
                json!({"mcpServers": {"docs": {"url": url, "oauth": true}}}).to_string(),
            )
            .expect("config");
            config
        })
        .collect();
    let extra = [&["--no-quarantine"][..], &state].concat();
    let gateways: Vec<HttpGateway> = configs
        .iter()
        .map(|config| HttpGateway::start(config, "127.0.0.1:0", &extra))
        .collect();
    // Before sign-in, the command named is the shared state's.
    let servers = page_servers(&gateways[0]);
    assert!(
        servers.contains("needs sign-in") && servers.contains("--state"),
        "{servers}"
    );

    let signed = sign_in("docs", &configs[0], &state);
    assert!(signed.contains("in the shared state"), "{signed}");
    for config in &configs {
        let file = capstore::mcp::live::oauth::tokens_path(config);
        assert!(
            !file.exists(),
            "no token file with --state: {}",
            file.display()
        );
    }
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    for gateway in &gateways {
        let first = call_until_ok(&runtime, gateway, "docs/whoami", Duration::from_secs(30));
        assert_eq!(first, "token #1", "one sign-in, one token, on both");
    }

    // Past the refresh point: A refreshes; B's next call uses A's new token.
    std::thread::sleep(Duration::from_secs(4));
    let a = call(&runtime, &gateways[0].mcp, "docs/whoami").expect("refreshed on A");
    let b = call(&runtime, &gateways[1].mcp, "docs/whoami").expect("A's token on B");
    assert_eq!((a.as_str(), b.as_str()), ("token #2", "token #2"));
    assert_eq!(
        upstream.get("/test/state")["refreshes"],
        json!(1),
        "refreshed once"
    );

    // Past it again, both at once, several calls each: every call succeeds (each refresh spent
    // a live refresh token), and the refreshes were few, not one per call.
    std::thread::sleep(Duration::from_secs(4));
    let results: Vec<Result<String, String>> = std::thread::scope(|scope| {
        let runs: Vec<_> = gateways
            .iter()
            .flat_map(|g| [g, g])
            .map(|gateway| {
                let runtime = &runtime;
                scope.spawn(move || call(runtime, &gateway.mcp, "docs/whoami"))
            })
            .collect();
        runs.into_iter().map(|r| r.join().expect("joins")).collect()
    });
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let refreshes = upstream.get("/test/state")["refreshes"]
        .as_u64()
        .expect("count");
    assert!((2..=3).contains(&refreshes), "{refreshes} refreshes");
    let last = call(&runtime, &gateways[1].mcp, "docs/whoami").expect("after");
    assert!(last.starts_with("token #"), "{last}");

    // No token in either gateway's stderr, nor in what `capstore auth` printed.
    let tokens: Vec<String> = upstream
        .get("/test/tokens")
        .as_array()
        .expect("tokens")
        .iter()
        .filter_map(|t| t.as_str().map(str::to_string))
        .collect();
    let seen = [gateways[0].stderr(), gateways[1].stderr(), signed].join("\n");
    for token in &tokens {
        assert!(!seen.contains(token.as_str()), "a token was shown: {seen}");
    }
    drop(gateways);
    let _ = std::fs::remove_dir_all(&dir);
}
