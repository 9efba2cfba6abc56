//! The application the HTTP/2 timer tests serve: routes that hold a
//! stream up on the application's side in each way the timers must tell
//! apart from the client's.

use std::io::Read;
use std::sync::mpsc;
use std::time::Duration;

use falconet_server::{Handler, Request, Responder, Response};

/// `/never` holds its responder (sent to the test), and so does
/// `/unread-never`, whose body is lent and left untaken (discarded);
/// `/big?n=N` answers N bytes, `/wbig?n=N` too, streamed (chunked, or
/// close-delimited over HTTP/1.0); `/dbig?n=N&wait=MS` answers N bytes from a
/// thread, written in 64 KiB pieces from MS ms on; `/late?first=MS` lends the body, reads all of it from MS ms
/// later, then answers `got N` (or how the read failed; sent to the test
/// too); `/ignore` leaves the body untaken and streams `tick` 5 times,
/// 100 ms apart, from 700 ms; anything else answers `ok` once the worker
/// has read the body.
pub struct App {
    kept: mpsc::Sender<Responder>,
    reads: mpsc::Sender<String>,
}

impl App {
    /// The application, the responders `/never` holds, and what each
    /// `/late` read.
    pub fn new() -> (Self, mpsc::Receiver<Responder>, mpsc::Receiver<String>) {
        let (kept, held) = mpsc::channel();
        let (reads, read) = mpsc::channel();
        (Self { kept, reads }, held, read)
    }
}

impl Handler for App {
    type State = String;

    fn head(&self, request: &Request<'_>) -> String {
        if matches!(request.path(), "/late" | "/ignore" | "/unread-never") {
            request.stream_body();
        }
        request.target().to_string()
    }

    fn body(&self, _: &mut String, _: &[u8]) {}

    fn respond(&self, target: String, response: &mut Response<'_>) {
        if target.starts_with("/late") {
            let body = response.take_body();
            let Ok(responder) = response.defer() else { return };
            let first = super::query_arg(&target, "first");
            let reads = self.reads.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(first));
                let mut all = Vec::new();
                let said = match body.map(|mut body| body.read_to_end(&mut all)) {
                    Some(Ok(n)) => format!("got {n}"),
                    Some(Err(error)) => format!("read failed: {:?}", error.kind()),
                    None => "no body".to_string(),
                };
                let _ = reads.send(said.clone());
                let _ = responder.body(said.as_bytes());
            });
        } else if target == "/ignore" {
            // The body is not taken (the server discards it); the answer
            // starts after 700 ms, then streams a piece every 100 ms.
            let Ok(mut responder) = response.defer() else { return };
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(600));
                for _ in 0..5 {
                    std::thread::sleep(Duration::from_millis(100));
                    if responder.write_blocking(b"tick").is_err() {
                        return;
                    }
                }
                let _ = responder.finish();
            });
        } else if target.starts_with("/dbig") {
            let n = super::query_arg(&target, "n") as usize;
            let wait = super::query_arg(&target, "wait");
            let Ok(mut responder) = response.defer() else { return };
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(wait));
                let piece = vec![b'd'; 64 * 1024];
                let mut left = n;
                while left > 0 {
                    let k = left.min(piece.len());
                    if responder.write_blocking(&piece[..k]).is_err() {
                        return;
                    }
                    left -= k;
                }
                let _ = responder.finish();
            });
        } else if target == "/never" || target == "/unread-never" {
            if let Ok(responder) = response.defer() {
                let _ = self.kept.send(responder);
            }
        } else if target.starts_with("/wbig") {
            // Streamed in place: chunked over HTTP/1.1, close-delimited
            // over HTTP/1.0.
            let n = super::query_arg(&target, "n") as usize;
            let _ = response.write(&vec![b'w'; n]);
        } else if target.starts_with("/big") {
            let n = super::query_arg(&target, "n") as usize;
            let _ = response.body(&vec![b'b'; n]);
        } else {
            let _ = response.body(b"ok");
        }
    }
}
