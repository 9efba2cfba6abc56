//! Arbitrary bytes through falconet-server's connection state machine
//! (`Session`: pipe, HTTP/1 parser, handler, responses), split into reads
//! of fuzzer-chosen sizes, with small limits so every refusal path is
//! near. Checks: no panic, output bounded per step, every pool block
//! returned when the session ends.
#![no_main]

use falconet_server::{Context, Handler, Options, Progress, Request, Response, Session};
use libfuzzer_sys::fuzz_target;

/// Reads bodies; `/s` streams a chunked response, `/c` asks to close.
struct Fuzz;

impl Handler for Fuzz {
    type State = (u8, u64);

    fn head(&self, request: &Request<'_>) -> (u8, u64) {
        (request.path().as_bytes().get(1).copied().unwrap_or(0), 0)
    }

    fn body(&self, state: &mut (u8, u64), chunk: &[u8]) {
        assert!(!chunk.is_empty());
        state.1 += chunk.len() as u64;
    }

    fn respond(&self, (route, len): (u8, u64), response: &mut Response<'_>) {
        assert!(len <= 4096, "a body past max_body reached the handler");
        match route {
            b's' => {
                let _ = response.write(b"streamed ");
                let _ = response.write(&len.to_le_bytes());
            }
            b'c' => {
                let _ = response.close();
                let _ = response.body(b"closing");
            }
            _ => {
                let _ = response.body(&len.to_le_bytes());
            }
        }
    }
}

/// The most one `process` may leave in the output: `max_pending_output`,
/// plus one response past it, plus a 100 Continue.
const MAX_STEP_OUTPUT: usize = 2048 + 512;

fuzz_target!(|data: &[u8]| {
    let Some((&seed, input)) = data.split_first() else {
        return;
    };
    let pool = falconet_pool::Pool::builder().block_size(512).max_bytes(1 << 20).build().unwrap();
    let options = Options::new()
        .max_request_line(256)
        .max_head(1024)
        .max_headers(8)
        .max_body(4096)
        .max_pending_output(2048);
    let mut cx = Context::new(&options).unwrap();
    let mut session = Session::<Fuzz>::new(&pool).unwrap();
    let mut rest = input;
    let mut step = usize::from(seed);
    while !rest.is_empty() && !session.is_closed() {
        let n = (step % 97 + 1).min(rest.len());
        step = step.wrapping_mul(31).wrapping_add(7);
        if !session.wants_input(&cx) {
            // Back-pressure: the client's bytes wait until the output drains.
            let out = session.output().len();
            assert!(out > 0 || session.is_closed(), "paused with nothing to send");
        } else {
            session.receive(&rest[..n]).unwrap();
            rest = &rest[n..];
        }
        let progress = session.process(&Fuzz, &mut cx);
        let out = session.output().len();
        assert!(out <= MAX_STEP_OUTPUT, "{out} output bytes after one step");
        assert!(progress != Progress::Close || session.is_closed());
        // The client reads part of the output, as a slow socket would.
        session.consume_output(out / 2 + 1);
        assert!(pool.stats().leased <= 256, "unparsed input grows without bound");
    }
    session.end_input();
    session.process(&Fuzz, &mut cx);
    drop(session);
    assert_eq!(pool.stats().leased, 0, "a block was not returned");
});
