//! Arbitrary bytes through falconet-server's connection state machine
//! (`Session`: pipe, HTTP/1 parser, handler, responses), split into reads
//! of fuzzer-chosen sizes, with small limits so every refusal path is
//! near. Some requests are answered later (a deferred `Responder`) and some
//! bodies read by the "application" (a `RequestBody`); the fuzzer's bytes
//! also decide when those write, finish, read or are dropped. Checks: no
//! panic, output bounded per step, every pool block returned when the
//! session ends.
#![no_main]

use std::future::Future;
use std::sync::Mutex;

use falconet_server::{
    Context, H2c, Handler, Options, Progress, Request, RequestBody, Responder, Response, Session,
};
use libfuzzer_sys::fuzz_target;

/// Reads bodies; `/s` streams a chunked response, `/c` asks to close, `/d`
/// defers, `/b` streams its body to the application and defers (the
/// application may answer with trailers, the request's own among them).
struct Fuzz {
    later: Mutex<Vec<(Responder, Option<RequestBody>)>>,
}

impl Handler for Fuzz {
    type State = (u8, u64);

    fn head(&self, request: &Request<'_>) -> (u8, u64) {
        let route = request.path().as_bytes().get(1).copied().unwrap_or(0);
        if route == b'b' {
            request.stream_body();
        }
        (route, 0)
    }

    fn body(&self, state: &mut (u8, u64), chunk: &[u8]) {
        assert!(!chunk.is_empty());
        state.1 += chunk.len() as u64;
    }

    fn trailers(&self, _: &mut (u8, u64), trailers: &falconet_server::Trailers) {
        // Only a section with fields, within the decoder's bounds.
        assert!((1..=64).contains(&trailers.len()), "{} trailer fields", trailers.len());
        assert!(trailers.iter().all(|(name, _)| !name.is_empty()));
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
            b'd' | b'b' => {
                let body = response.take_body();
                if let Ok(responder) = response.defer() {
                    self.later.lock().unwrap().push((responder, body));
                }
            }
            _ => {
                let _ = response.body(&len.to_le_bytes());
            }
        }
    }
}

/// The most one `process` may leave in the output: `max_pending_output`,
/// plus one response (or a deferred response's piece) past it, plus a 100
/// Continue.
const MAX_STEP_OUTPUT: usize = 2048 + 512;

/// Lets the application act on what it holds, as `choice` says.
fn application(fuzz: &Fuzz, choice: usize) {
    let mut later = fuzz.later.lock().unwrap();
    let Some((responder, body)) = later.last_mut() else { return };
    let mut buf = [0u8; 64];
    match choice % 7 {
        0 => {
            let (responder, _) = later.pop().unwrap();
            let _ = responder.finish();
        }
        1 => {
            let _ = write_now(responder, b"piece");
        }
        2 => drop(later.pop()),
        3 => {
            if let Some(body) = body {
                if let Ok(Some(n)) = body.try_read(&mut buf) {
                    let _ = write_now(responder, &buf[..n]);
                }
            }
        }
        4 => *body = None,
        5 => {
            // The request's trailers (if its body ended with some) back
            // as the response's.
            let (responder, body) = later.pop().unwrap();
            let mut trailers = body.and_then(|body| body.take_trailers()).unwrap_or_default();
            let _ = trailers.append("x-fuzz", b"1");
            let _ = responder.finish_with_trailers(&trailers);
        }
        _ => {
            let (responder, _) = later.pop().unwrap();
            let _ = responder.body(b"whole");
        }
    }
}

/// Writes unless the output pipe is paused (one thread plays both sides:
/// waiting would wait for itself).
fn write_now(responder: &mut Responder, bytes: &[u8]) -> bool {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    std::pin::pin!(responder.write(bytes)).poll(&mut cx).is_ready()
}

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
        .max_pending_output(2048)
        // The seed's top bits choose how the connection may become HTTP/2.
        .h2c([H2c::Both, H2c::PriorKnowledge, H2c::Off][(usize::from(seed) * 3) >> 8]);
    let fuzz = Fuzz { later: Mutex::new(Vec::new()) };
    let mut cx = Context::new(&options).unwrap();
    let mut session = Session::<Fuzz>::new(&pool).unwrap();
    let mut rest = input;
    let mut step = usize::from(seed);
    while !rest.is_empty() && !session.is_closed() {
        let n = (step % 97 + 1).min(rest.len());
        step = step.wrapping_mul(31).wrapping_add(7);
        if !session.wants_input(&cx) {
            // Back-pressure: the client's bytes wait until the output
            // drains, or the application acts.
            let out = session.output().len();
            assert!(
                out > 0 || session.is_closed() || session.with_application(),
                "paused with nothing to send"
            );
            application(&fuzz, step);
        } else {
            session.receive(&rest[..n]).unwrap();
            rest = &rest[n..];
        }
        if step % 3 == 0 {
            application(&fuzz, step / 3);
        }
        let progress = session.process(&fuzz, &mut cx);
        let out = session.output().len();
        assert!(out <= MAX_STEP_OUTPUT, "{out} output bytes after one step");
        assert!(progress != Progress::Close || session.is_closed());
        // The client reads part of the output, as a slow socket would.
        session.consume_output(out / 2 + 1);
        assert!(pool.stats().leased <= 256, "unparsed input grows without bound");
    }
    session.end_input();
    session.process(&fuzz, &mut cx);
    drop(session);
    drop(fuzz);
    assert_eq!(pool.stats().leased, 0, "a block was not returned");
});
