//! An axum `Router` on falconet's I/O: `GET /plaintext`, `GET /json`,
//! `POST /echo` (streams the request body back) and `GET
//! /frames?size=N&count=M` (M ready frames of N bytes).
//!
//! ```text
//! cargo run --release -p falconet-server --features tower --example axum_hello -- \
//!     --addr 127.0.0.1:8080 --workers 1 --app-threads 1
//! curl http://127.0.0.1:8080/plaintext                  # Hello, World!
//! curl http://127.0.0.1:8080/json                       # {"message":"Hello, World!"}
//! curl --data-binary @some-file http://127.0.0.1:8080/echo
//! ```
//!
//! Its peer in the benchmark is the same `Router` on hyper (`axum::serve`
//! with one tokio worker thread). Ctrl-C or SIGTERM shuts it down
//! gracefully; a second one exits at once (130 or 143, as a shell reports
//! the signal).

use std::io::Write;
use std::process::ExitCode;

use axum::body::Body;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use falconet_server::tower::TowerHandler;
use falconet_server::{Options, Server, ServerError};
use tokio::signal::unix::SignalKind;

const USAGE: &str =
    "usage: axum_hello [--addr HOST:PORT] [--workers N] [--app-threads N (1..=256)]";

/// The most application threads (falconet's own binary takes as many).
const MAX_APP_THREADS: usize = 256;

/// A line to stderr that cannot panic (`eprintln!` does when stderr is a
/// closed pipe or a full disk).
fn complain(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// A line to stdout that cannot panic (see [`complain`]).
fn say(line: &str) {
    let _ = writeln!(std::io::stdout(), "{line}");
}

/// The JSON endpoint's message, serialized per request.
#[derive(serde::Serialize)]
struct Message {
    message: &'static str,
}

fn app() -> Router {
    Router::new()
        .route(
            "/plaintext",
            get(|| async { ([(header::CONTENT_TYPE, "text/plain")], "Hello, World!") }),
        )
        .route("/json", get(|| async { Json(Message { message: "Hello, World!" }) }))
        .route(
            "/echo",
            post(|body: Body| async move {
                (
                    [(header::CONTENT_TYPE, "application/octet-stream")],
                    Body::from_stream(body.into_data_stream()),
                )
                    .into_response()
            }),
        )
        .route("/frames", get(|uri: axum::http::Uri| async move { frames(&uri) }))
}

/// `GET /frames?size=N&count=M`: a body of M frames of N bytes, all
/// ready (a stream of small items: how frames are gathered into writes
/// shows here). N at most 64 KiB, M at most 2^24; else 400.
fn frames(uri: &axum::http::Uri) -> axum::response::Response {
    let arg = |name: &str| {
        uri.query()?
            .split('&')
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))?
            .parse()
            .ok()
    };
    match (arg("size"), arg("count")) {
        (Some(size @ 1..=65_536), Some(count @ 0..=16_777_216)) => {
            Body::new(Frames { piece: bytes::Bytes::from(vec![b'x'; size]), left: count })
                .into_response()
        }
        _ => (axum::http::StatusCode::BAD_REQUEST, "size 1..=65536, count 0..=16777216\n")
            .into_response(),
    }
}

/// The body of `/frames`: `left` more frames of `piece`.
struct Frames {
    piece: bytes::Bytes,
    left: usize,
}

impl http_body::Body for Frames {
    type Data = bytes::Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<bytes::Bytes>, Self::Error>>> {
        if self.left == 0 {
            return std::task::Poll::Ready(None);
        }
        self.left -= 1;
        std::task::Poll::Ready(Some(Ok(http_body::Frame::data(self.piece.clone()))))
    }
}

struct Args {
    addr: String,
    workers: Option<usize>,
    app_threads: usize,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args { addr: "127.0.0.1:8080".into(), workers: None, app_threads: 1 };
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--addr" => parsed.addr = value()?,
            "--workers" => {
                parsed.workers = Some(value()?.parse().map_err(|e| format!("--workers: {e}"))?);
            }
            "--app-threads" => {
                let threads: usize = value()?.parse().map_err(|e| format!("--app-threads: {e}"))?;
                if !(1..=MAX_APP_THREADS).contains(&threads) {
                    return Err(format!(
                        "--app-threads: {threads} is not in 1..={MAX_APP_THREADS}"
                    ));
                }
                parsed.app_threads = threads;
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(parsed)
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(error) => {
            if !error.is_empty() {
                complain(&error);
            }
            complain(USAGE);
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            complain(&format!("axum_hello: {error}"));
            // Options out of range are a usage error, as falconet's own.
            match error.downcast_ref::<ServerError>() {
                Some(ServerError::Options(_)) => ExitCode::from(2),
                _ => ExitCode::FAILURE,
            }
        }
    }
}

fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.app_threads)
        .enable_all()
        .build()?;
    let mut options = Options::new();
    if let Some(workers) = args.workers {
        options = options.workers(workers);
    }
    let handler = TowerHandler::new(app(), runtime.handle().clone());
    let server = Server::bind(args.addr.as_str(), options, handler)?;
    say(&format!("axum on falconet listening on http://{}", server.local_addr()));
    let handle = server.handle();
    let running = server.start()?;
    // Ctrl-C, or the SIGTERM a service manager or `docker stop` sends;
    // a second one while the requests in flight finish exits at once.
    let _runtime = runtime.enter(); // the signal streams need its driver
    let mut interrupt = tokio::signal::unix::signal(SignalKind::interrupt())?;
    let mut terminate = tokio::signal::unix::signal(SignalKind::terminate())?;
    runtime.block_on(async {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    });
    runtime.spawn(async move {
        let code = tokio::select! {
            _ = interrupt.recv() => 128 + 2,
            _ = terminate.recv() => 128 + 15,
        };
        complain("second signal: exiting now");
        std::process::exit(code);
    });
    say("shutting down");
    handle.shutdown();
    running.join()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(args: &[&str]) -> Result<Args, String> {
        parse(args.iter().map(|arg| arg.to_string()))
    }

    #[test]
    fn defaults_and_each_option() {
        let args = parsed(&[]).unwrap();
        assert_eq!(
            (args.addr.as_str(), args.workers, args.app_threads),
            ("127.0.0.1:8080", None, 1)
        );
        let args =
            parsed(&["--addr", "0.0.0.0:1", "--workers", "3", "--app-threads", "4"]).unwrap();
        assert_eq!((args.addr.as_str(), args.workers, args.app_threads), ("0.0.0.0:1", Some(3), 4));
    }

    #[test]
    fn app_threads_at_the_edges_of_their_range() {
        for (threads, ok) in
            [("0", false), ("1", true), ("256", true), ("257", false), ("20000", false)]
        {
            let result = parsed(&["--app-threads", threads]);
            assert_eq!(result.is_ok(), ok, "--app-threads {threads}");
            if ok {
                assert_eq!(result.unwrap().app_threads.to_string(), threads);
            }
        }
        let huge = u128::MAX.to_string();
        for bad in ["-1", "", "two", huge.as_str()] {
            let error = parsed(&["--app-threads", bad]).err().expect(bad);
            assert!(error.starts_with("--app-threads: "), "{bad:?}: {error}");
        }
    }

    #[test]
    fn usage_errors_are_named() {
        assert_eq!(parsed(&["--addr"]).err().unwrap(), "--addr needs a value");
        assert_eq!(parsed(&["--workers"]).err().unwrap(), "--workers needs a value");
        assert!(parsed(&["--workers", "x"]).err().unwrap().starts_with("--workers: "));
        assert_eq!(parsed(&["--port", "1"]).err().unwrap(), "unknown argument \"--port\"");
        // Help is an empty error: main prints the usage alone, and exits 2.
        assert_eq!(parsed(&["--help"]).err().unwrap(), "");
        assert_eq!(parsed(&["-h"]).err().unwrap(), "");
    }

    /// The bytes of a `/frames` answer's body, and its status.
    fn framed(query: &str) -> (u16, usize) {
        let uri: axum::http::Uri = format!("/frames?{query}").parse().unwrap();
        let response = frames(&uri);
        let status = response.status().as_u16();
        let mut body = std::pin::pin!(response.into_body());
        let mut context = std::task::Context::from_waker(std::task::Waker::noop());
        let mut bytes = 0;
        loop {
            match http_body::Body::poll_frame(body.as_mut(), &mut context) {
                std::task::Poll::Ready(Some(frame)) => {
                    bytes += frame.unwrap().into_data().map_or(0, |data| data.len());
                }
                std::task::Poll::Ready(None) => return (status, bytes),
                std::task::Poll::Pending => panic!("{query}: the frames are always ready"),
            }
        }
    }

    /// `size` is 1 to 64 KiB and `count` 0 to 2^24, each at both ends of
    /// its range; anything else, or either missing, is 400.
    #[test]
    fn frames_at_the_edges_of_their_query() {
        for (query, expected) in [
            ("size=1&count=0", (200, 0)),
            ("size=1&count=3", (200, 3)),
            ("count=2&size=65536", (200, 131_072)),
            ("size=7&count=1&extra=x", (200, 7)),
        ] {
            assert_eq!(framed(query), expected, "{query}");
        }
        for bad in [
            "size=0&count=1",
            "size=65537&count=1",
            "size=1&count=16777217",
            "size=1&count=-1",
            "size=x&count=1",
            "size=1",
            "count=1",
            "",
            "size=&count=",
        ] {
            assert_eq!(framed(bad).0, 400, "{bad:?}");
        }
        // The largest count is accepted (its body is not read here: 16 MiB
        // of polls).
        let uri: axum::http::Uri = "/frames?size=1&count=16777216".parse().unwrap();
        assert_eq!(frames(&uri).status(), 200);
    }

    /// Workers out of range pass the parse and are refused by the
    /// server's own check: the error main turns into exit code 2.
    #[test]
    fn workers_out_of_range_are_the_servers_options_error() {
        for workers in ["0", "257"] {
            let args = parsed(&["--addr", "127.0.0.1:0", "--workers", workers]).unwrap();
            let error = run(&args).unwrap_err();
            let Some(ServerError::Options(falconet_server::OptionsError::Workers(n))) =
                error.downcast_ref::<ServerError>()
            else {
                panic!("--workers {workers}: {error}");
            };
            assert_eq!(n.to_string(), workers);
        }
    }
}
