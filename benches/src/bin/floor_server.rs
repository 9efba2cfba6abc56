//! The floor: the least an HTTP/1.1 server can do per request on this
//! kernel, as a peer for falconet in `scripts/bench-server.sh` (issue 16).
//! One mio event loop on one thread; it parses nothing: it counts request
//! ends (`\r\n\r\n`, across reads) and answers each with the same canned
//! `/plaintext` response, one write per read. A real server must do all
//! of this and more, so its requests per CPU-second over the floor's say
//! how much of its time is its own.
//!
//! `cargo run --release -p falconet-benches --bin floor_server -- 127.0.0.1:8083`

use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};

/// What every request gets (the size of falconet's `/plaintext` answer).
const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nServer: floor\r\nContent-Type: text/plain\r\nContent-Length: 13\r\nDate: Tue, 01 Dec 2026 00:00:00 GMT\r\n\r\nHello, World!";

/// The end of a request head.
const END: &[u8; 4] = b"\r\n\r\n";

const LISTENER: Token = Token(usize::MAX);

struct Conn {
    stream: TcpStream,
    /// How many bytes of [`END`] the input seen so far ends with.
    matched: usize,
    out: Vec<u8>,
    sent: usize,
}

impl Conn {
    /// Counts the request ends in `bytes`, carrying a partial match.
    fn count_ends(&mut self, bytes: &[u8]) -> usize {
        let mut ends = 0;
        for &byte in bytes {
            self.matched = if byte == END[self.matched] {
                self.matched + 1
            } else {
                usize::from(byte == END[0])
            };
            if self.matched == END.len() {
                ends += 1;
                self.matched = 0;
            }
        }
        ends
    }

    /// Reads all there is, answers every request end in it with one write;
    /// `false` once the connection is over.
    fn readable(&mut self, buf: &mut [u8]) -> bool {
        loop {
            match self.stream.read(buf) {
                Ok(0) => return false,
                Ok(n) => {
                    let ends = self.count_ends(&buf[..n]);
                    for _ in 0..ends {
                        self.out.extend_from_slice(RESPONSE);
                    }
                }
                Err(error) if error.kind() == ErrorKind::WouldBlock => break,
                Err(error) if error.kind() == ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        self.writable()
    }

    /// Writes what is pending; `false` once the connection is over.
    fn writable(&mut self) -> bool {
        while self.sent < self.out.len() {
            match self.stream.write(&self.out[self.sent..]) {
                Ok(n) => self.sent += n,
                Err(error) if error.kind() == ErrorKind::WouldBlock => return true,
                Err(error) if error.kind() == ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        self.out.clear();
        self.sent = 0;
        true
    }
}

fn main() -> std::io::Result<()> {
    let addr: SocketAddr =
        std::env::args().nth(1).as_deref().unwrap_or("127.0.0.1:8083").parse().expect("an address");
    let mut poll = Poll::new()?;
    let mut listener = TcpListener::bind(addr)?;
    poll.registry().register(&mut listener, LISTENER, Interest::READABLE)?;
    println!("floor listening on http://{}", listener.local_addr()?);
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut events = Events::with_capacity(1024);
    let mut buf = vec![0; 64 * 1024];
    loop {
        if let Err(error) = poll.poll(&mut events, None) {
            if error.kind() == ErrorKind::Interrupted {
                continue;
            }
            return Err(error);
        }
        for event in &events {
            if event.token() == LISTENER {
                loop {
                    let (mut stream, _) = match listener.accept() {
                        Ok(accepted) => accepted,
                        Err(error) if error.kind() == ErrorKind::WouldBlock => break,
                        Err(error) => return Err(error),
                    };
                    let _ = stream.set_nodelay(true);
                    let slot = conns.iter().position(Option::is_none).unwrap_or_else(|| {
                        conns.push(None);
                        conns.len() - 1
                    });
                    let interest = Interest::READABLE | Interest::WRITABLE;
                    poll.registry().register(&mut stream, Token(slot), interest)?;
                    conns[slot] = Some(Conn { stream, matched: 0, out: Vec::new(), sent: 0 });
                }
                continue;
            }
            let Some(conn) = conns.get_mut(event.token().0).and_then(Option::as_mut) else {
                continue;
            };
            let mut open = true;
            if event.is_readable() {
                open = conn.readable(&mut buf);
            }
            if open && event.is_writable() {
                open = conn.writable();
            }
            let over = !open || (event.is_read_closed() && conn.out.is_empty());
            if over && let Some(mut conn) = conns[event.token().0].take() {
                let _ = poll.registry().deregister(&mut conn.stream);
            }
        }
    }
}
