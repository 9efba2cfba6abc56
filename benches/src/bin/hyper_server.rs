//! A minimal hyper 1.x server with the TechEmpower endpoints, the peer of
//! `falconet` in `scripts/bench-server.sh`: one tokio current-thread
//! runtime (the server is pinned to one core), HTTP/1 with the default
//! builder, or with `pipeline_flush` (hyper's own answer to pipelining, as
//! in its TechEmpower entry) when given `--pipeline-flush`; JSON
//! serialized per request with serde_json.
//!
//! `cargo run --release -p falconet-benches --bin hyper_server -- 127.0.0.1:8081 [--pipeline-flush]`

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue, SERVER};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde::Serialize;

#[derive(Serialize)]
struct Message {
    message: &'static str,
}

async fn handle(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let (content_type, body) = match request.uri().path() {
        "/plaintext" => ("text/plain", Bytes::from_static(b"Hello, World!")),
        "/json" => {
            let json =
                serde_json::to_vec(&Message { message: "Hello, World!" }).unwrap_or_default();
            ("application/json", Bytes::from(json))
        }
        _ => {
            let mut response = Response::new(Full::new(Bytes::new()));
            *response.status_mut() = StatusCode::NOT_FOUND;
            return Ok(response);
        }
    };
    let mut response = Response::new(Full::new(body));
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response.headers_mut().insert(SERVER, HeaderValue::from_static("hyper"));
    Ok(response)
}

fn main() -> std::io::Result<()> {
    let addr: SocketAddr =
        std::env::args().nth(1).as_deref().unwrap_or("127.0.0.1:8081").parse().expect("an address");
    let pipeline_flush = std::env::args().any(|arg| arg == "--pipeline-flush");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        println!("hyper listening on http://{}", listener.local_addr()?);
        loop {
            let (stream, _) = listener.accept().await?;
            let _ = stream.set_nodelay(true);
            tokio::task::spawn(async move {
                let _ = http1::Builder::new()
                    .pipeline_flush(pipeline_flush)
                    .serve_connection(TokioIo::new(stream), service_fn(handle))
                    .await;
            });
        }
    })
}
