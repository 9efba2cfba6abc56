//! The client's address: `Request::peer_addr` for native handlers, and
//! `tower::PeerAddr` (turned into axum's `ConnectInfo` by one layer) for
//! tower services, over HTTP/1.1 and HTTP/2.
#![cfg(feature = "tower")]

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::{ConnectInfo, Request as AxumRequest};
use axum::{Extension, Router, middleware, routing::get};
use common::{Client, options, serve};
use falconet_server::tower::{PeerAddr, TowerHandler};
use falconet_server::{Handler, Request, Response};

/// Answers the request's `peer_addr`.
struct Peer;

impl Handler for Peer {
    type State = Option<SocketAddr>;

    fn head(&self, request: &Request<'_>) -> Option<SocketAddr> {
        request.peer_addr()
    }

    fn respond(&self, peer: Option<SocketAddr>, response: &mut Response<'_>) {
        let _ = response.body(format!("{peer:?}").as_bytes());
    }
}

#[test]
fn a_native_handler_sees_the_clients_address() {
    let server = serve(options(), Peer);
    let mut client = Client::connect(server.addr);
    let local = client.stream().local_addr().unwrap();
    assert_eq!(client.get("/").text(), format!("{:?}", Some(local)));
    assert_eq!(client.get("/again").text(), format!("{:?}", Some(local)));
    drop(client);
    server.stop();
}

/// A session driven without a socket (tests, the fuzz target) has no
/// peer: `None`, not a made-up address.
#[test]
fn a_session_without_a_socket_has_no_peer() {
    let pool = falconet_pool::Pool::new();
    let mut cx = falconet_server::Context::new(&options()).unwrap();
    let mut session = falconet_server::Session::<Peer>::new(&pool).unwrap();
    session.receive(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
    session.process(&Peer, &mut cx);
    let text = String::from_utf8(session.output().to_vec()).unwrap();
    assert!(text.ends_with("\r\n\r\nNone"), "{text}");
}

fn app() -> Router {
    Router::new()
        .route(
            "/ip",
            get(|ConnectInfo(addr): ConnectInfo<SocketAddr>| async move { addr.to_string() }),
        )
        .route(
            "/peer",
            get(|Extension(PeerAddr(addr)): Extension<PeerAddr>| async move { addr.to_string() }),
        )
        .layer(middleware::map_request(|mut request: AxumRequest| async move {
            if let Some(&PeerAddr(addr)) = request.extensions().get::<PeerAddr>() {
                request.extensions_mut().insert(ConnectInfo(addr));
            }
            request
        }))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
}

#[test]
fn a_tower_service_gets_peer_addr_and_connect_info_over_http1_and_http2() {
    let runtime = runtime();
    let handler = TowerHandler::new(app(), runtime.handle().clone()).with_peer_addr();
    let server = serve(options(), handler);
    let mut client = Client::connect(server.addr);
    let local = client.stream().local_addr().unwrap().to_string();
    assert_eq!(client.get("/ip").text(), local);
    assert_eq!(client.get("/peer").text(), local);
    drop(client);

    let addr = server.addr;
    let client_rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    client_rt.block_on(async move {
        let send = common::h2_client(addr).await;
        for path in ["/ip", "/peer"] {
            let mut send = send.clone().ready().await.unwrap();
            let request = http::Request::builder().uri(format!("http://t{path}")).body(()).unwrap();
            let (response, _) = send.send_request(request, true).unwrap();
            let response =
                tokio::time::timeout(Duration::from_secs(5), response).await.unwrap().unwrap();
            assert_eq!(response.status(), 200, "{path}");
            let mut body = response.into_body();
            let mut text = Vec::new();
            while let Some(piece) = body.data().await {
                text.extend_from_slice(&piece.unwrap());
            }
            let peer: SocketAddr = String::from_utf8(text).unwrap().parse().unwrap();
            assert!(peer.ip().is_loopback() && peer.port() != 0, "{path}: {peer}");
        }
    });
    server.stop();
}

/// Without `with_peer_addr`, nothing is inserted: axum's `ConnectInfo`
/// extractor answers 500, as it does under `axum::serve` without
/// `into_make_service_with_connect_info`.
#[test]
fn without_with_peer_addr_the_extension_is_absent() {
    let runtime = runtime();
    let server = serve(options(), TowerHandler::new(app(), runtime.handle().clone()));
    let mut client = Client::connect(server.addr);
    assert_eq!(client.get("/peer").status, 500);
    drop(client);
    server.stop();
}
