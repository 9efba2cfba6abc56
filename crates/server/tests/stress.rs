//! Many client threads against a two-worker server while the timer sweeps:
//! random mixes of plain, pipelined, body-carrying (both framings) and
//! abandoned requests, every response checked, and at the end every
//! connection gone and every pool block back.
//!
//! `FALCONET_SERVER_STRESS_ROUNDS` (default 2000 per client) scales it.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{Client, Echo, FNV_START, fnv, options, serve};

/// A tiny deterministic generator (xorshift), one per client.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn client(addr: std::net::SocketAddr, seed: u64, rounds: u64) -> u64 {
    let mut rng = Rng(seed);
    let mut answered = 0;
    let mut conn = Client::connect(addr);
    for round in 0..rounds {
        match rng.below(6) {
            // Pipelined GETs.
            0 | 1 => {
                let n = 1 + rng.below(20);
                let batch: String = (0..n)
                    .map(|i| format!("GET /s{seed}-{round}-{i} HTTP/1.1\r\nHost: t\r\n\r\n"))
                    .collect();
                conn.send(batch.as_bytes());
                for i in 0..n {
                    assert_eq!(conn.reply().unwrap().text(), format!("/s{seed}-{round}-{i}"));
                }
                answered += n;
            }
            // A body, sized or chunked, in pieces.
            2 | 3 => {
                let len = rng.below(20_000) as usize;
                let body: Vec<u8> = (0..len).map(|i| (i as u64 ^ seed) as u8).collect();
                let mut wire = Vec::new();
                if rng.below(2) == 0 {
                    wire.extend_from_slice(
                        format!("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: {len}\r\n\r\n")
                            .as_bytes(),
                    );
                    wire.extend_from_slice(&body);
                } else {
                    wire.extend_from_slice(
                        b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n",
                    );
                    for chunk in body.chunks(1 + rng.below(5000) as usize) {
                        wire.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
                        wire.extend_from_slice(chunk);
                        wire.extend_from_slice(b"\r\n");
                    }
                    wire.extend_from_slice(b"0\r\n\r\n");
                }
                for piece in wire.chunks(1 + rng.below(3000) as usize) {
                    conn.send(piece);
                }
                assert_eq!(
                    conn.reply().unwrap().text(),
                    format!("len={len} fnv={:x}", fnv(FNV_START, &body))
                );
                answered += 1;
            }
            // Close and reconnect.
            4 => {
                conn.send(b"GET /bye HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
                assert!(conn.reply().unwrap().closes());
                conn.expect_closed();
                answered += 1;
                conn = Client::connect(addr);
            }
            // Abandon half a request (head or body) and reconnect.
            _ => {
                let half: &[u8] = if rng.below(2) == 0 {
                    b"GET /half HTTP/1.1\r\nHo"
                } else {
                    b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nabc"
                };
                conn.send(half);
                conn = Client::connect(addr);
            }
        }
    }
    answered
}

#[test]
fn clients_hammer_a_two_worker_server() {
    let rounds: u64 = std::env::var("FALCONET_SERVER_STRESS_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(2000);
    // A short keep-alive timeout keeps the sweep busy closing abandoned
    // connections while the clients run.
    let server = serve(options().keep_alive_timeout(Duration::from_millis(100)), Echo);
    let addr = server.addr;
    let handle = server.handle().clone();
    let clients: Vec<_> = (1..=6u64)
        .map(|seed| std::thread::spawn(move || client(addr, seed * 0x9e37_79b9, rounds)))
        .collect();
    let answered: u64 = clients.into_iter().map(|c| c.join().unwrap()).sum();
    assert!(answered >= rounds * 6 / 2, "{answered} answered");
    // Everything closes: clients are gone, the sweep and the EOFs do the rest.
    let deadline = Instant::now() + Duration::from_secs(10);
    while handle.stats().connections > 0 {
        assert!(Instant::now() < deadline, "{} connections left", handle.stats().connections);
        std::thread::sleep(Duration::from_millis(20));
    }
    // A raw socket still gets served after all that.
    let mut raw = TcpStream::connect(addr).unwrap();
    raw.write_all(b"GET /last HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").unwrap();
    let mut reply = String::new();
    raw.read_to_string(&mut reply).unwrap();
    assert!(reply.ends_with("/last"), "{reply}");
    drop(raw);
    server.handle().shutdown();
    let stats = server.handle().stats();
    server.join().unwrap();
    assert!(stats.requests >= answered, "{} counted, {answered} answered", stats.requests);
}
