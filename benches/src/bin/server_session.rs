//! Drives a falconet-server `Session` through `n` batches of 16 pipelined
//! plaintext requests with no socket: the user-space cost of a request,
//! for `valgrind --tool=callgrind` (instruction counts are repeatable on
//! this noisy machine) or `perf record`.
//!
//! `cargo run --release -p falconet-benches --bin server_session -- 100000`

use std::time::Instant;

use falconet_server::{Context, Options, Session, hello::Hello};

const REQUEST: &[u8] = b"GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n";

fn main() {
    let batches: u64 = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(100_000);
    let pool = falconet_pool::Pool::new();
    let mut cx = Context::new(&Options::new()).expect("options");
    let mut session = Session::<Hello>::new(&pool).expect("session");
    let batch = REQUEST.repeat(16);
    let began = Instant::now();
    let mut bytes = 0;
    for _ in 0..batches {
        session.receive(&batch).expect("receive");
        session.process(&Hello, &mut cx);
        let out = session.output().len();
        bytes += out;
        session.consume_output(out);
    }
    let elapsed = began.elapsed();
    let requests = cx.requests();
    assert_eq!(requests, batches * 16);
    println!(
        "{requests} requests, {bytes} response bytes, {:.1} ns per request",
        elapsed.as_nanos() as f64 / requests as f64
    );
}
