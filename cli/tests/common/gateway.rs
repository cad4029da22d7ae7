//! `capstore serve` processes for the command line's tests (each includes this file with
//! `#[path]`, and uses part of it), killed when dropped: [`GatewayProcess`] spoken to in
//! JSON-RPC lines over stdio, as an MCP client does (started, initialized, asked; its stderr
//! kept for messages), and [`HttpGateway`] serving `--http` on loopback.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long one request may wait for its answer.
const ANSWER_WITHIN: Duration = Duration::from_secs(60);

/// `capstore serve --mcp-config CONFIG`, run in the repository's root.
fn serve(config: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_capstore"));
    command
        .arg("serve")
        .arg("--mcp-config")
        .arg(config)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    command
}

/// A running `capstore serve --mcp-config CONFIG EXTRA...`.
pub struct GatewayProcess {
    child: Child,
    /// `None` once [`finish`](Self::finish) closed it.
    stdin: Option<ChildStdin>,
    /// Each stdout line: a JSON-RPC message, or the line that was not one.
    lines: mpsc::Receiver<Result<Value, String>>,
    next_id: i64,
    stderr: Arc<Mutex<String>>,
}

impl GatewayProcess {
    /// Starts the gateway in the crate's directory and completes the MCP handshake.
    pub fn start(config: &Path, extra: &[&str]) -> GatewayProcess {
        Self::start_with_env(config, extra, &[])
    }

    /// [`start`](Self::start), with `env` added to the gateway's environment.
    pub fn start_with_env(config: &Path, extra: &[&str], env: &[(&str, &str)]) -> GatewayProcess {
        let mut child = serve(config)
            .args(extra)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("capstore serve starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let stderr_pipe = child.stderr.take().expect("stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let message = serde_json::from_str(&line).map_err(|_| line);
                if tx.send(message).is_err() {
                    return;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr_pipe).lines().map_while(Result::ok) {
                let mut text = sink.lock().unwrap_or_else(|e| e.into_inner());
                text.push_str(&line);
                text.push('\n');
            }
        });
        let mut gateway = GatewayProcess {
            child,
            stdin: Some(stdin),
            lines,
            next_id: 0,
            stderr,
        };
        let init = gateway.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "capstore-tests", "version": "1"}}),
        );
        assert_eq!(
            init["result"]["serverInfo"]["name"],
            "capstore",
            "{init}\n{}",
            gateway.stderr()
        );
        gateway.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        gateway
    }

    /// What the gateway wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Its stderr once it holds `needle`, or as it is after `within`. A line the gateway wrote
    /// before an answer may still be in the pipe when the answer arrives: stderr is read by a
    /// thread of its own.
    pub fn stderr_once_it_holds(&self, needle: &str, within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            let text = self.stderr();
            if text.contains(needle) || Instant::now() >= deadline {
                return text;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Writes one message.
    pub fn send(&mut self, message: &Value) {
        self.send_line(&message.to_string());
    }

    /// Writes one line as it is (malformed input, for instance).
    pub fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        writeln!(stdin, "{line}").expect("write");
        stdin.flush().expect("flush");
    }

    /// Closes stdin, as a client that ends its session does, and waits (`within` at most)
    /// for the gateway to exit: whether it did, successfully.
    pub fn finish(&mut self, within: Duration) -> bool {
        drop(self.stdin.take());
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Sends a request with the next id and returns its answer (messages in between, such as
    /// notifications, are passed over).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.wait(|message| message["id"] == id)
    }

    /// Sends a request with the next id without waiting for its answer: the id.
    pub fn send_request(&mut self, method: &str, params: Value) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The next message that is `wanted`, passing over the others.
    pub fn wait(&self, wanted: impl Fn(&Value) -> bool) -> Value {
        loop {
            let message = match self.lines.recv_timeout(ANSWER_WITHIN) {
                Ok(Ok(message)) => message,
                Ok(Err(line)) => panic!("stdout holds only JSON-RPC: {line:?}"),
                Err(e) => panic!(
                    "no message wanted within {ANSWER_WITHIN:?} ({e}); stderr:\n{}",
                    self.stderr()
                ),
            };
            if wanted(&message) {
                return message;
            }
        }
    }

    /// `search_tools` for `query`: the answer's structured content.
    pub fn search(&mut self, query: &str) -> Value {
        let reply = self.request(
            "tools/call",
            json!({"name": "search_tools", "arguments": {"query": query}}),
        );
        reply["result"]["structuredContent"].clone()
    }

    /// The names `search_tools` finds for `query` (at most `limit`).
    pub fn search_names(&mut self, query: &str, limit: u64) -> Vec<String> {
        let reply = self.request(
            "tools/call",
            json!({"name": "search_tools", "arguments": {"query": query, "limit": limit}}),
        );
        reply["result"]["structuredContent"]["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Calls upstream `tool` through `call_tool` (search mode): the whole answer.
    pub fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request(
            "tools/call",
            json!({"name": "call_tool", "arguments": {"name": tool, "arguments": arguments}}),
        )
    }
}

/// A running `capstore serve --mcp-config CONFIG --http ADDR EXTRA...`, once it has printed
/// where it serves (with `ADDR` `127.0.0.1:0`, the port the system gave it).
pub struct HttpGateway {
    child: Child,
    /// Everything it wrote to stderr so far.
    stderr: Arc<Mutex<String>>,
    /// `http://127.0.0.1:PORT/mcp`.
    pub mcp: String,
    /// The admin page's address, with its token.
    pub page: String,
    /// The port it serves on.
    pub port: u16,
}

impl HttpGateway {
    /// Starts the gateway in the crate's directory and waits (60 s at most) for both addresses
    /// on its stderr: the MCP endpoint, then the page on the same port.
    pub fn start(config: &Path, addr: &str, extra: &[&str]) -> HttpGateway {
        Self::start_with_env(config, addr, extra, &[])
    }

    /// [`start`](Self::start), with `env` added to the gateway's environment.
    pub fn start_with_env(
        config: &Path,
        addr: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> HttpGateway {
        let mut child = serve(config)
            .args(["--http", addr])
            .args(extra)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("capstore serve starts");
        let stderr = BufReader::new(child.stderr.take().expect("stderr"));
        let (tx, lines) = mpsc::channel();
        let kept = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&kept);
        std::thread::spawn(move || {
            // Read to the end, so the gateway never writes to a closed pipe.
            for line in stderr.lines().map_while(Result::ok) {
                let mut text = sink.lock().unwrap_or_else(|e| e.into_inner());
                text.push_str(&line);
                text.push('\n');
                drop(text);
                let _ = tx.send(line);
            }
        });
        let (mut mcp, mut page, mut seen) = (None, None, String::new());
        let deadline = Instant::now() + Duration::from_secs(60);
        while page.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(line) = lines.recv_timeout(left) else {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the gateway printed no page address within 60 s; stderr:\n{seen}");
            };
            if let Some(url) = line.strip_prefix("serving MCP at ") {
                mcp = Some(url.to_string());
            }
            if let Some(url) = line.strip_prefix("admin page at ") {
                page = Some(url.to_string());
            }
            seen.push_str(&line);
            seen.push('\n');
        }
        let (mcp, page) = (mcp.expect("the MCP address first"), page.expect("page"));
        let port = mcp
            .strip_prefix("http://127.0.0.1:")
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("an address on 127.0.0.1: {mcp}"));
        assert!(
            page.starts_with(&format!("http://127.0.0.1:{port}/?token=")),
            "{page}"
        );
        HttpGateway {
            child,
            stderr: kept,
            mcp,
            page,
            port,
        }
    }
}

impl HttpGateway {
    /// What the gateway wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for HttpGateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of a `tools/call` answer's content (or its JSON-RPC error's message).
pub fn text_of(reply: &Value) -> String {
    if let Some(message) = reply["error"]["message"].as_str() {
        return message.to_string();
    }
    reply["result"]["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

impl Drop for GatewayProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 request to `127.0.0.1:port` (the connection closed after it): the reply's head
/// and body, CRLFs as LFs. What came before a 10 s read timeout is kept (an SSE answer may stay
/// open).
pub fn http_request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (String, String) {
    use std::io::Read;
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).expect("send");
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    let reply = reply.replace("\r\n", "\n");
    let (head, body) = reply.split_once("\n\n").unwrap_or((&reply, ""));
    (head.to_string(), body.to_string())
}
