//! Usage through the log in batches (`capstore::sync::ReplicaUsageQueue`), against a real
//! PostgreSQL (`scripts/postgres.sh run`): two replicas, A connected directly and B through a
//! TCP proxy this test cuts (a dropped network) or makes lose the replies to a usage batch's
//! statement (an acknowledgement lost after PostgreSQL committed). Whatever the interleaving,
//! both end with the usage rows of one write per turn, each turn counted exactly once.

mod pg;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use capstore::sync::{Replica, ReplicaUsageQueue, SyncError, SyncOptions};
use capstore::usage::{BatchLimits, TurnUse, learn};
use capstore::{Store, TOOLS, Tool};
use proptest::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// A TCP proxy to PostgreSQL. Cut: every connection stalls (nothing forwarded, nothing
/// closed); restored: those that lived through the cut are closed, new ones forward. Armed
/// ([`Proxy::lose_next_batch_reply`]): the connection that next sends a usage batch (its
/// parameters hold `{"turns":[`) forwards it, and then never forwards the server's replies
/// (the statement runs and commits, its acknowledgement is lost).
struct Proxy {
    addr: SocketAddr,
    cut: watch::Sender<bool>,
    lose_batch_reply: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    async fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (cut, watching) = watch::channel(false);
        let lose_batch_reply = Arc::new(AtomicBool::new(false));
        let lose = Arc::clone(&lose_batch_reply);
        let task = tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    continue;
                };
                tokio::spawn(forward(
                    client,
                    upstream,
                    watching.clone(),
                    Arc::clone(&lose),
                ));
            }
        });
        Proxy {
            addr,
            cut,
            lose_batch_reply,
            task,
        }
    }

    fn cut(&self) {
        self.cut.send_replace(true);
    }

    fn restore(&self) {
        self.cut.send_replace(false);
    }

    fn lose_next_batch_reply(&self) {
        self.lose_batch_reply.store(true, Ordering::SeqCst);
    }

    /// Whether an armed loss has happened (a batch went through it).
    fn batch_reply_lost(&self) -> bool {
        !self.lose_batch_reply.load(Ordering::SeqCst)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What a usage batch's statement carries: its entry's JSON.
const BATCH: &[u8] = br#"{"turns":["#;

async fn forward(
    client: TcpStream,
    upstream: SocketAddr,
    mut cut: watch::Receiver<bool>,
    lose: Arc<AtomicBool>,
) {
    if *cut.borrow_and_update() {
        // Accepted while cut: never forwarded.
        let _ = cut.wait_for(|cut| !*cut).await;
        return;
    }
    let Ok(server) = TcpStream::connect(upstream).await else {
        return;
    };
    let (mut from_client, mut to_client) = client.into_split();
    let (mut from_server, mut to_server) = server.into_split();
    let replies_lost = Arc::new(AtomicBool::new(false));
    let lost = Arc::clone(&replies_lost);
    let up = async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match from_client.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let chunk = &buf[..n];
            if chunk.windows(BATCH.len()).any(|w| w == BATCH)
                && lose
                    .compare_exchange(true, false, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok()
            {
                lost.store(true, Ordering::SeqCst);
            }
            if to_server.write_all(chunk).await.is_err() {
                return;
            }
        }
    };
    let down = async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match from_server.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            if replies_lost.load(Ordering::SeqCst) {
                // Never forwarded; the client gives up on its own timeout and closes.
                std::future::pending::<()>().await;
            }
            if to_client.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    };
    tokio::pin!(up, down);
    tokio::select! {
        () = &mut up => return,
        () = &mut down => return,
        _ = cut.wait_for(|cut| *cut) => {}
    }
    // Cut mid-connection: the sockets are held, nothing forwarded, until restored; then they
    // are closed (as a firewall that lost their state would).
    let _ = cut.wait_for(|cut| !*cut).await;
}

/// The server's address from its URL (`postgres://user@host:port/db`).
fn server_addr(url: &str) -> SocketAddr {
    let host_port = url
        .split_once('@')
        .and_then(|(_, rest)| rest.split('/').next())
        .expect("a postgres://user@host:port/db URL");
    host_port.parse().expect("host:port")
}

/// The tools the turns name: some in the log's catalog, some (`live/…`) a gateway's own.
const POOL: [&str; 5] = ["fs/cd", "fs/mv", "fs/ls", "live/echo", "live/sum"];

/// One plain store with every tool of [`POOL`], counting each turn with one `learn`: what one
/// write per turn gives (every tool named counts, as on a replica).
fn one_write_per_turn<'t>(turns: impl IntoIterator<Item = &'t TurnUse>) -> Store {
    let model = Store::new();
    model
        .write(|tx| {
            for key in POOL {
                let (source, name) = key.split_once('/').expect("source/name");
                tx.insert(&TOOLS, Tool::new(name, "x").with_source(source))?;
            }
            Ok::<(), capstore::StoreError>(())
        })
        .expect("tools");
    for turn in turns {
        model.write(|tx| learn(tx, turn)).expect("learns");
    }
    model
}

/// Every turn the log's batch entries carry, in version order; and whether any entry is a
/// single turn's (`learn`), which the queues never write.
async fn logged_turns(url: &str, namespace: &str) -> (Vec<TurnUse>, bool) {
    let entries = pg::log_entries(url, namespace).await;
    let single = entries.iter().any(|e| e.get("learn").is_some());
    let turns = entries
        .iter()
        .filter_map(|e| e.get("turns").and_then(|t| t.as_array()))
        .flatten()
        .map(|t| serde_json::from_value(t.clone()).expect("a turn"))
        .collect();
    (turns, single)
}

/// The turns as sorted JSON texts: equal for two lists of the same turns, each as often.
fn multiset(turns: &[TurnUse]) -> Vec<String> {
    let mut out: Vec<String> = turns
        .iter()
        .map(|t| serde_json::to_string(t).expect("json"))
        .collect();
    out.sort();
    out
}

/// Options quick to give up on a cut connection, so that a case with a cut takes a second.
fn quick(test: &str) -> SyncOptions {
    let mut options = pg::options(test);
    options.connect_timeout = Duration::from_millis(800);
    options.query_timeout = Duration::from_millis(700);
    options.poll_interval = Duration::from_millis(100);
    options
}

/// Flushes until the queue holds nothing (B's first tries after a cut meet closed connections).
async fn drain(queue: &ReplicaUsageQueue) -> Result<(), SyncError> {
    let deadline = Instant::now() + pg::SEE;
    loop {
        match queue.flush().await {
            Ok(_) if queue.status().pending == 0 => return Ok(()),
            Ok(_) => {}
            Err(e) if Instant::now() > deadline => return Err(e),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// The log's head, read straight from PostgreSQL.
async fn head(url: &str, namespace: &str) -> u64 {
    pg::log_entries(url, namespace).await.len() as u64
}

/// A batch whose acknowledgement is lost (PostgreSQL committed it, the reply never came) is
/// sent again and counted once; meanwhile a catalog write on the same replica does not wait
/// for the stalled batch (the queue sends on a connection of its own).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_whose_acknowledgement_is_lost_is_counted_once() -> Result<(), SyncError> {
    let url = pg::url();
    let mut options = pg::options("usage_lost_ack");
    options.query_timeout = Duration::from_secs(2);
    let proxy = Proxy::start(server_addr(&url)).await;
    let via_proxy = url.replacen(&server_addr(&url).to_string(), &proxy.addr.to_string(), 1);
    let a = Replica::open(&url, options.clone()).await?;
    let b = Arc::new(Replica::open(&via_proxy, options.clone()).await?);
    let queue = b.usage_queue(BatchLimits {
        max_turns: 100,
        max_delay: Duration::from_secs(60),
    });
    let turns = [
        TurnUse::new(["fs/cd", "fs/mv"]).with_sent(["fs/mv"]),
        TurnUse::new(["live/echo"]).with_previous(["fs/cd", "fs/mv"]),
        TurnUse::new(["fs/ls", "fs/ls", "fs/cd"]),
    ];
    for turn in &turns {
        assert!(queue.push(turn.clone()));
    }
    assert!(
        !queue.push(TurnUse::default()),
        "an empty turn is not queued"
    );

    proxy.lose_next_batch_reply();
    let stalled = tokio::spawn({
        let queue = queue.clone();
        async move { queue.flush().await }
    });
    assert!(
        pg::within(pg::SEE, || proxy.batch_reply_lost()).await,
        "the batch went through"
    );
    // The batch is committed, its sender waits for a reply that never comes: a catalog write on
    // the same replica goes through meanwhile, and is seen on A.
    let v = b.write(pg::put_tool("during", "cat")).await?;
    assert!(
        a.wait_for(v, pg::SEE)
            .await?
            .contains(&TOOLS, "cat/during")?
    );
    assert!(
        !stalled.is_finished(),
        "the catalog write waited for the usage batch"
    );
    let lost = stalled.await.expect("the flush task");
    assert!(matches!(lost, Err(SyncError::Timeout { .. })), "{lost:?}");
    let status = queue.status();
    assert_eq!((status.pending, status.entries), (3, 0), "{status:?}");
    assert!(status.last_error.is_some());

    // Sent again: the log holds them already, nothing is written twice.
    assert_eq!(queue.flush().await?, None);
    let status = queue.status();
    assert_eq!(
        (status.pending, &status.last_error),
        (0, &None),
        "{status:?}"
    );
    let (logged, single) = logged_turns(&url, &options.namespace).await;
    assert!(!single);
    assert_eq!(logged, turns);

    // A later batch carries only the new turn.
    let fourth = TurnUse::new(["live/sum", "fs/cd"]);
    queue.push(fourth.clone());
    let v = queue.flush().await?.expect("one entry");
    let (logged, _) = logged_turns(&url, &options.namespace).await;
    assert_eq!(logged.len(), 4);
    let (sa, sb) = (a.wait_for(v, pg::SEE).await?, b.wait_for(v, pg::SEE).await?);
    let model = one_write_per_turn(turns.iter().chain([&fourth]));
    assert_eq!(pg::usage(&sa), pg::usage(&model.snapshot()));
    assert_eq!(pg::usage(&sb), pg::usage(&sa));
    assert_eq!((a.status().refused, b.status().refused), (0, 0));
    Ok(())
}

/// Turns reach the log without a flush, within the queue's bounds: at `max_turns` (the turn
/// that fills the batch wakes the queue's task) and at `max_delay`; and dropping the queue's
/// last handle sends what it holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_go_by_size_by_time_and_on_drop() -> Result<(), SyncError> {
    let (url, options) = (pg::url(), pg::options("usage_bounds"));
    let a = Replica::open(&url, options.clone()).await?;
    let queue = a.usage_queue(BatchLimits {
        max_turns: 3,
        max_delay: Duration::from_millis(300),
    });
    for _ in 0..3 {
        queue.push(TurnUse::new(["fs/cd"]));
    }
    // Full: one entry of three turns.
    assert!(pg::within(pg::SEE, || queue.status().entries == 1).await);
    assert_eq!(queue.status().turns, 3);
    // One turn waits for the time bound.
    let pushed = Instant::now();
    queue.push(TurnUse::new(["fs/mv"]));
    assert!(pg::within(pg::SEE, || queue.status().entries == 2).await);
    assert!(pushed.elapsed() >= Duration::from_millis(300));
    // Dropped with one turn held: it is sent.
    queue.push(TurnUse::new(["fs/ls"]));
    drop(queue);
    assert!(
        pg::within(pg::SEE, || {
            a.snapshot()
                .get(&capstore::USAGE, "fs/ls")
                .ok()
                .flatten()
                .is_some()
        })
        .await
    );
    let (logged, single) = logged_turns(&url, &options.namespace).await;
    assert!(!single);
    assert_eq!(logged.len(), 5);
    assert_eq!(pg::log_entries(&url, &options.namespace).await.len(), 3);
    Ok(())
}

/// One step of the property test.
#[derive(Debug, Clone)]
enum Step {
    /// A turn ends on A (`true`) or B.
    Turn(bool, TurnUse),
    /// A (`true`) or B flushes its queue.
    Flush(bool),
    /// B's next batch is committed and its acknowledgement lost.
    LoseReply,
}

fn turn() -> impl Strategy<Value = TurnUse> {
    let pool = || 0..POOL.len();
    (
        proptest::collection::vec(pool(), 1..4),
        proptest::collection::vec(pool(), 0..3),
        proptest::collection::vec(pool(), 0..2),
    )
        .prop_map(|(called, sent, previous)| {
            TurnUse::new(called.into_iter().map(|i| POOL[i]))
                .with_sent(sent.into_iter().map(|i| POOL[i]))
                .with_previous(previous.into_iter().map(|i| POOL[i]))
        })
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (any::<bool>(), turn()).prop_map(|(on_a, t)| Step::Turn(on_a, t)),
        2 => any::<bool>().prop_map(Step::Flush),
        1 => Just(Step::LoseReply),
    ]
}

/// Runs `steps` (B's proxy armed or flushed as they say).
async fn run_steps(
    steps: &[Step],
    queues: (&ReplicaUsageQueue, &ReplicaUsageQueue),
    proxy: &Proxy,
    pushed: &mut Vec<TurnUse>,
) {
    for step in steps {
        match step {
            Step::Turn(on_a, turn) => {
                let queue = if *on_a { queues.0 } else { queues.1 };
                assert!(queue.push(turn.clone()));
                pushed.push(turn.clone());
            }
            // A flush may fail (B cut off, a lost reply): the turns stay held.
            Step::Flush(on_a) => {
                let _ = if *on_a { queues.0 } else { queues.1 }.flush().await;
            }
            Step::LoseReply => proxy.lose_next_batch_reply(),
        }
    }
}

proptest! {
    // Each case opens two replicas on a real server and cuts one off for a while: few cases.
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    /// Any interleaving of turns on two replicas, with B cut off and reconnected in the middle
    /// (its batches failing meanwhile, and some acknowledgements lost), ends, after a flush,
    /// with the same usage rows on both as one write per turn gives, and the log holding every
    /// turn exactly once, in batches.
    #[test]
    fn any_interleaving_of_two_replicas_and_a_reconnect_counts_each_turn_once(
        before in proptest::collection::vec(step(), 0..8),
        during in proptest::collection::vec((any::<bool>(), turn()), 1..5),
        after in proptest::collection::vec(step(), 0..8),
    ) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async move {
            let (url, options) = (pg::url(), quick("usage_prop"));
            let proxy = Proxy::start(server_addr(&url)).await;
            let via_proxy =
                url.replacen(&server_addr(&url).to_string(), &proxy.addr.to_string(), 1);
            let a = Replica::open(&url, options.clone()).await?;
            let b = Replica::open(&via_proxy, options.clone()).await?;
            // Small batches, so that the queues' tasks send some on their own, between the
            // steps' flushes.
            let limits = BatchLimits { max_turns: 3, max_delay: Duration::from_millis(150) };
            let (qa, qb) = (a.usage_queue(limits), b.usage_queue(limits));
            let mut pushed = Vec::new();

            run_steps(&before, (&qa, &qb), &proxy, &mut pushed).await;
            // B cut off: its turns are held, its flush fails within its timeouts.
            proxy.cut();
            for (on_a, turn) in &during {
                let queue = if *on_a { &qa } else { &qb };
                queue.push(turn.clone());
                pushed.push(turn.clone());
            }
            let cut_off = qb.flush().await;
            let held = qb.status().pending;
            assert!(held == 0 || cut_off.is_err(), "{cut_off:?} with {held} held");
            proxy.restore();
            run_steps(&after, (&qa, &qb), &proxy, &mut pushed).await;

            drain(&qa).await?;
            drain(&qb).await?;
            let head = head(&url, &options.namespace).await;
            let (sa, sb) = (a.wait_for(head, pg::SEE).await?, b.wait_for(head, pg::SEE).await?);
            // Exactly once: the log holds each turn pushed, as often as it was pushed.
            let (logged, single) = logged_turns(&url, &options.namespace).await;
            assert!(!single);
            assert_eq!(multiset(&logged), multiset(&pushed));
            // The rows of one write per turn, on both replicas.
            let model = one_write_per_turn(&pushed);
            assert_eq!(pg::usage(&sa), pg::usage(&model.snapshot()));
            assert_eq!(pg::usage(&sb), pg::usage(&sa));
            assert_eq!((a.status().refused, b.status().refused), (0, 0));
            // In batches: each entry carries one turn or more (an entry whose acknowledgement
            // was lost is in the log, not in its queue's count).
            let entries = qa.status().entries + qb.status().entries;
            assert!(entries <= head && head <= pushed.len() as u64, "{entries} entries, head {head}");
            Ok::<(), SyncError>(())
        }).expect("usage through the log");
    }
}
