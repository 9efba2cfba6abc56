//! A may_minihttp server with the TechEmpower endpoints, the peer of
//! `falconet` in `scripts/bench-server.sh`: one may worker (the server is
//! pinned to one core), JSON serialized per request with serde_json.
//!
//! `cargo run --release -p falconet-benches --bin may_minihttp_server -- 127.0.0.1:8082`

use std::io;

use bytes::BufMut;
use may_minihttp::{HttpService, HttpServiceFactory, Request, Response};
use serde::Serialize;

#[derive(Serialize)]
struct Message {
    message: &'static str,
}

struct Techempower;

impl HttpService for Techempower {
    fn call(&mut self, request: Request, response: &mut Response) -> io::Result<()> {
        match request.path() {
            "/plaintext" => {
                response.header("Content-Type: text/plain").body("Hello, World!");
            }
            "/json" => {
                response.header("Content-Type: application/json");
                serde_json::to_writer(
                    response.body_mut().writer(),
                    &Message { message: "Hello, World!" },
                )?;
            }
            _ => {
                response.status_code(404, "Not Found");
            }
        }
        Ok(())
    }
}

struct Factory;

impl HttpServiceFactory for Factory {
    type Service = Techempower;

    fn new_service(&self, _: usize) -> Techempower {
        Techempower
    }
}

fn main() {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8082".to_string());
    may::config().set_workers(1).set_pool_capacity(500).set_stack_size(0x1000);
    let server = Factory.start(addr.as_str()).expect("bind");
    println!("may_minihttp listening on http://{addr}");
    server.join().expect("the server thread");
}
