//! hyper's HTTP/2 server (h2c, prior knowledge), the HTTP/2 peer of
//! `falconet` in `scripts/bench-server.sh --h2`: one tokio current-thread
//! runtime (the server is pinned to one core), the default http2 builder
//! (hyper 1.x: 1 MiB stream and connection windows, 200 concurrent
//! streams). `GET /plaintext` answers `Hello, World!`; `POST /echo`
//! streams the request body back; `GET /bytes?n=N` answers N bytes of `x`
//! (a slice of one static buffer: no copy, as falconet's `/bytes` writes
//! from a static piece); `POST /upload` reads the body in the connection's
//! task and answers its length; `GET /frames?size=N&count=M` answers M
//! ready frames of N bytes (`falconet_benches::frames`).
//!
//! `cargo run --release -p falconet-benches --bin hyper_h2_server -- 127.0.0.1:8082`

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue, SERVER};
use hyper::server::conn::http2;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};

type Body = BoxBody<Bytes, hyper::Error>;

/// The largest `/bytes` answer, as falconet's.
const MAX_BYTES: usize = 64 << 20;

/// `/bytes`' answers are slices of this.
static BYTES: std::sync::LazyLock<Bytes> =
    std::sync::LazyLock::new(|| Bytes::from(vec![b'x'; MAX_BYTES]));

fn full(bytes: Bytes) -> Body {
    Full::new(bytes).map_err(|never| match never {}).boxed()
}

async fn handle(request: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let mut response = match (request.method(), request.uri().path()) {
        (&Method::GET, "/plaintext") => {
            let mut response = Response::new(full(Bytes::from_static(b"Hello, World!")));
            response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
            response
        }
        (&Method::POST, "/echo") => Response::new(request.into_body().boxed()),
        (&Method::POST, "/upload") => {
            let mut body = request.into_body();
            let mut n = 0;
            while let Some(Ok(frame)) = body.frame().await {
                n += frame.data_ref().map_or(0, Bytes::len);
            }
            Response::new(full(Bytes::from(n.to_string())))
        }
        (&Method::GET, "/bytes") => {
            let n = request
                .uri()
                .query()
                .and_then(|q| q.strip_prefix("n="))
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|&n| n <= MAX_BYTES);
            match n {
                Some(n) => Response::new(full(BYTES.slice(..n))),
                None => {
                    let mut response = Response::new(full(Bytes::new()));
                    *response.status_mut() = StatusCode::BAD_REQUEST;
                    response
                }
            }
        }
        (&Method::GET, "/frames") => {
            match falconet_benches::frames::Frames::from_query(request.uri().query()) {
                Some(frames) => Response::new(frames.map_err(|never| match never {}).boxed()),
                None => {
                    let mut response = Response::new(full(Bytes::new()));
                    *response.status_mut() = StatusCode::BAD_REQUEST;
                    response
                }
            }
        }
        _ => {
            let mut response = Response::new(full(Bytes::new()));
            *response.status_mut() = StatusCode::NOT_FOUND;
            response
        }
    };
    response.headers_mut().insert(SERVER, HeaderValue::from_static("hyper"));
    Ok(response)
}

fn main() -> std::io::Result<()> {
    let addr: SocketAddr =
        std::env::args().nth(1).as_deref().unwrap_or("127.0.0.1:8082").parse().expect("an address");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        println!("hyper h2 listening on http://{}", listener.local_addr()?);
        loop {
            let (stream, _) = listener.accept().await?;
            let _ = stream.set_nodelay(true);
            tokio::task::spawn(async move {
                let _ = http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service_fn(handle))
                    .await;
            });
        }
    })
}
