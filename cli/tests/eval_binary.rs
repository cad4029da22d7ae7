//! `capstore eval --tools FILE --queries FILE`: the binary prints the library's metrics
//! (tests/eval_metrics.rs checks them by hand) and writes the run file, and refuses what it
//! cannot read.

use std::path::PathBuf;
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/eval_tiny"
    ))
    .join(name)
}

fn capstore(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_capstore"))
        .args(args)
        .output()
        .expect("the binary runs")
}

#[test]
fn the_binary_prints_the_metrics_and_writes_the_run_file() {
    let tools = fixture("tools.jsonl");
    let queries = fixture("queries.jsonl");
    let run_out = std::env::temp_dir().join(format!("capstore-eval-{}.jsonl", std::process::id()));
    let out = capstore(&[
        "eval",
        "--tools",
        tools.to_str().expect("utf-8 path"),
        "--queries",
        queries.to_str().expect("utf-8 path"),
        "--run-out",
        run_out.to_str().expect("utf-8 path"),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("tools: 6 in file, 6 registered"),
        "{stdout}"
    );
    assert!(stdout.contains("Recall@1 Recall@3 Recall@5 Recall@10 nDCG@10 MRR@10 C@10"));
    assert!(
        stdout.contains("\n50.00 70.00 70.00 70.00 64.88 70.00 60.00\n"),
        "{stdout}"
    );
    let written = std::fs::read_to_string(&run_out).expect("run file");
    let _ = std::fs::remove_file(&run_out);
    assert_eq!(
        written,
        concat!(
            "{\"query_id\":\"q1\",\"ranked\":[\"w1\"]}\n",
            "{\"query_id\":\"q2\",\"ranked\":[\"m1\",\"f1\"]}\n",
            "{\"query_id\":\"q3\",\"ranked\":[\"code::search\",\"web::search\"]}\n",
            "{\"query_id\":\"q4\",\"ranked\":[\"p1\"]}\n",
            "{\"query_id\":\"q5\",\"ranked\":[]}\n",
        )
    );

    // The `main` split: q1–q4 only.
    let out = capstore(&[
        "eval",
        "--tools",
        tools.to_str().expect("utf-8 path"),
        "--queries",
        queries.to_str().expect("utf-8 path"),
        "--split",
        "main",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("queries: 4 (split main)"), "{stdout}");
    assert!(
        stdout.contains("\n62.50 87.50 87.50 87.50 81.10 87.50 75.00\n"),
        "{stdout}"
    );
}

#[test]
fn the_binary_refuses_unknown_flags_and_has_help() {
    let out = capstore(&["eval", "--tools", "x", "--queries", "y", "--frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown flag `--frobnicate`"), "{stderr}");

    let out = capstore(&["--help"]);
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("capstore eval --tools FILE --queries FILE")
    );

    let out = capstore(&["eval", "--queries", "y"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--tools FILE is required"));

    let out = capstore(&["eval", "--tools", "/no/such/tools.jsonl", "--queries", "y"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/no/such/tools.jsonl"));
}
