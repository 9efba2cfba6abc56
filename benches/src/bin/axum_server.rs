//! The peer of axum on falconet in `scripts/bench-server.sh --app`: the
//! same axum `Router` as `crates/server/examples/axum_hello.rs`
//! (`/plaintext`, `/json` serialized per request, `POST /echo` streaming
//! the body back, `/frames?size=N&count=M`) served by hyper through `axum::serve`, on one tokio
//! worker thread (the server is pinned to one core).
//!
//! `cargo run --release -p falconet-benches --bin axum_server -- 127.0.0.1:8083`

use axum::body::Body;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};

#[derive(serde::Serialize)]
struct Message {
    message: &'static str,
}

/// The Router of `axum_hello`, route for route.
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

/// `GET /frames?size=N&count=M` (`falconet_benches::frames`).
fn frames(uri: &axum::http::Uri) -> axum::response::Response {
    match falconet_benches::frames::Frames::from_query(uri.query()) {
        Some(frames) => Body::new(frames).into_response(),
        None => (axum::http::StatusCode::BAD_REQUEST, "size 1..=65536, count 0..=16777216\n")
            .into_response(),
    }
}

fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8083".into());
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(&addr).await?;
        println!("axum on hyper listening on http://{}", listener.local_addr()?);
        axum::serve(listener, app()).await
    })
}
