//! The `Server` field: falconet's unless the application names its own,
//! then exactly one, over HTTP/1.1 and HTTP/2, through the tower path, a
//! synchronous `Response` and a deferred `Responder` (RFC 9110 §10.2.4: a
//! field a recipient reads once; two would be a list the sender never
//! meant).
#![cfg(feature = "tower")]

mod common;

use std::time::Duration;

use axum::Router;
use axum::routing::get;
use common::{Client, serve};
use falconet_server::tower::TowerHandler;
use falconet_server::{Handler, Options, Request, Response};

fn app() -> Router {
    Router::new()
        .route("/mine", get(|| async { ([("server", "mine/1.0")], "hello") }))
        .route("/mine-upper", get(|| async { ([("SERVER", "mine/2.0")], "hello") }))
        .route("/ours", get(|| async { ([("server-timing", "db;dur=1")], "hello") }))
}

fn servers(reply: &common::Reply) -> Vec<&str> {
    reply
        .headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("server"))
        .map(|(_, value)| value.as_str())
        .collect()
}

#[test]
fn a_tower_service_names_its_own_server_over_http11() {
    let runtime = common::runtime();
    let server =
        serve(Options::new().workers(1), TowerHandler::new(app(), runtime.handle().clone()));
    let mut client = Client::connect(server.addr);
    for (path, expected) in
        [("/mine", "mine/1.0"), ("/mine-upper", "mine/2.0"), ("/ours", "falconet")]
    {
        let reply = client.get(path);
        assert_eq!((reply.status, reply.text().as_str()), (200, "hello"), "{path}");
        assert_eq!(servers(&reply), [expected], "{path}: {reply:?}");
    }
}

#[test]
fn a_tower_service_names_its_own_server_over_http2() {
    let runtime = common::runtime();
    let server =
        serve(Options::new().workers(1), TowerHandler::new(app(), runtime.handle().clone()));
    let addr = server.addr;
    common::current_thread().block_on(async move {
        let send = common::h2_client(addr).await;
        for (path, expected) in
            [("/mine", "mine/1.0"), ("/mine-upper", "mine/2.0"), ("/ours", "falconet")]
        {
            let mut send = send.clone().ready().await.unwrap();
            let request = http::Request::builder().uri(format!("http://t{path}")).body(()).unwrap();
            let (response, _) = send.send_request(request, true).unwrap();
            let response = tokio::time::timeout(Duration::from_secs(5), response)
                .await
                .expect("a response")
                .unwrap();
            let values: Vec<_> = response.headers().get_all("server").iter().collect();
            assert_eq!(values, [expected], "{path}");
        }
    });
}

/// The native handler: a synchronous answer and a deferred one, each with
/// its own `Server`, and one without.
struct Named;

impl Handler for Named {
    type State = String;

    fn head(&self, request: &Request<'_>) -> String {
        request.target().to_string()
    }

    fn respond(&self, path: String, response: &mut Response<'_>) {
        match path.as_str() {
            "/now" => {
                response.header("Server", "now/1").unwrap().body(b"now").unwrap();
            }
            "/later" => {
                let mut responder = response.defer().unwrap();
                std::thread::spawn(move || {
                    responder.header("server", "later/1").unwrap();
                    responder.write_blocking(b"later").unwrap();
                    responder.finish().unwrap();
                });
            }
            _ => response.body(b"plain").unwrap(),
        }
    }
}

#[test]
fn a_native_handler_names_its_own_server() {
    let server = serve(Options::new().workers(1), Named);
    let mut client = Client::connect(server.addr);
    for (path, expected, text) in
        [("/now", "now/1", "now"), ("/later", "later/1", "later"), ("/other", "falconet", "plain")]
    {
        let reply = client.get(path);
        assert_eq!((reply.status, reply.text().as_str()), (200, text), "{path}");
        assert_eq!(servers(&reply), [expected], "{path}: {reply:?}");
    }
}
