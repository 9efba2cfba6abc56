//! One connection cannot keep its worker from the others: a client that
//! sends without pause (and reads its answers, so nothing else stops it)
//! gets a turn's budget served, then the worker serves every other
//! connection's events before its next turn.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use common::{Client, serve};
use falconet_server::Options;
use falconet_server::hello::Hello;

/// How long the flood goes on unless the test ends it first.
const FLOOD_FOR: Duration = Duration::from_secs(20);

/// A pipelining client that sends as fast as the server reads, for
/// [`FLOOD_FOR`] or until `stop`; `answered` counts response bytes.
struct Flood {
    stop: Arc<AtomicBool>,
    /// Set when the sender's loop has ended (stopped or out of time).
    ended: Arc<AtomicBool>,
    answered: Arc<AtomicU64>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl Flood {
    fn start(addr: std::net::SocketAddr, batch: Vec<u8>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let ended = Arc::new(AtomicBool::new(false));
        let answered = Arc::new(AtomicU64::new(0));
        let stream = TcpStream::connect(addr).unwrap();
        let mut reader = stream.try_clone().unwrap();
        let mut writer = stream;
        let sender = {
            let (stop, ended) = (Arc::clone(&stop), Arc::clone(&ended));
            thread::spawn(move || {
                let until = Instant::now() + FLOOD_FOR;
                while !stop.load(Ordering::Relaxed) && Instant::now() < until {
                    if writer.write_all(&batch).is_err() {
                        break;
                    }
                }
                ended.store(true, Ordering::SeqCst);
                let _ = writer.shutdown(std::net::Shutdown::Both);
            })
        };
        let receiver = {
            let answered = Arc::clone(&answered);
            thread::spawn(move || {
                let mut buf = vec![0u8; 1 << 16];
                while let Ok(n) = reader.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    answered.fetch_add(n as u64, Ordering::Relaxed);
                }
            })
        };
        Self { stop, ended, answered, threads: vec![sender, receiver] }
    }

    fn finish(self) {
        self.stop.store(true, Ordering::SeqCst);
        for thread in self.threads {
            thread.join().unwrap();
        }
    }
}

/// While one connection floods a one-worker server with pipelined
/// requests, other connections' requests, sent one after another for five
/// seconds, are each answered before the flood ends (they used to wait
/// for the whole flood: the worker read the flooding socket for as long
/// as it stayed readable).
#[test]
fn a_pipelining_flood_does_not_starve_the_other_connections() {
    let server = serve(Options::new().workers(1), Hello);
    let flood =
        Flood::start(server.addr, b"GET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n".repeat(1000));
    // The flood is being served.
    let started = Instant::now();
    while flood.answered.load(Ordering::Relaxed) < 1 << 20 {
        assert!(started.elapsed() < FLOOD_FOR, "the flood was never answered");
        thread::sleep(Duration::from_millis(10));
    }
    // Probes for a while: the flood's share must not grow with its age
    // (a connection queued for another turn once per poll would get ever
    // more turns, and the probes would wait ever longer).
    let probing = Instant::now();
    let mut probes = 0;
    while probes < 3 || probing.elapsed() < Duration::from_secs(5) {
        probes += 1;
        let before = flood.answered.load(Ordering::Relaxed);
        let mut client = Client::connect(server.addr);
        assert_eq!(client.get("/plaintext").text(), "Hello, World!");
        assert!(!flood.ended.load(Ordering::SeqCst), "answered only once the flood had ended");
        // The flood was served meanwhile too.
        while flood.answered.load(Ordering::Relaxed) == before {
            assert!(!flood.ended.load(Ordering::SeqCst), "the flood stalled");
            thread::sleep(Duration::from_millis(1));
        }
    }
    flood.finish();
}

/// A client that keeps sending after the server's last word (a refused
/// request: `400`, then the close lingers, discarding what still comes)
/// gets no more than a serving connection does: other connections are
/// answered while it sends, and the timer closes it at the linger timeout.
/// (Lingering used to read until the socket ran dry: a client sending
/// faster than that held its worker, and the timer, for as long as it
/// liked.)
#[test]
fn a_client_sending_after_our_last_word_is_closed_on_time() {
    const LINGER: Duration = Duration::from_secs(5);
    let server = serve(Options::new().workers(1).linger_timeout(LINGER), Hello);
    let mut batch = b"GET / HTTP/1.1\r\n\r\n".to_vec(); // no Host: 400
    batch.extend(std::iter::repeat_n(b'x', 1 << 20));
    let floods: Vec<_> = (0..8).map(|_| Flood::start(server.addr, batch.clone())).collect();
    let started = Instant::now();
    for flood in &floods {
        while flood.answered.load(Ordering::Relaxed) == 0 {
            assert!(started.elapsed() < FLOOD_FOR, "never answered 400");
            thread::sleep(Duration::from_millis(10));
        }
    }
    // Other connections are answered while the floods go on.
    let mut probes = 0;
    while probes < 3 || started.elapsed() < LINGER / 2 {
        probes += 1;
        let mut client = Client::connect(server.addr);
        assert_eq!(client.get("/plaintext").text(), "Hello, World!");
    }
    let ended = floods.iter().filter(|flood| flood.ended.load(Ordering::SeqCst)).count();
    assert_eq!(ended, 0, "the probes were answered only at {:?}", started.elapsed());
    // And the timer closes them.
    for flood in floods {
        while !flood.ended.load(Ordering::SeqCst) {
            assert!(started.elapsed() < 3 * LINGER, "still open after {:?}", started.elapsed());
            thread::sleep(Duration::from_millis(10));
        }
        flood.finish();
    }
}
