//! A gRPC service (tonic's server machinery, messages by hand, no codegen)
//! on the tower path, called by tonic's own client over h2c: unary calls,
//! answered at once and after an `.await`, an error status, a server
//! stream that ends with an error, an unknown method. gRPC puts the call's
//! status in the response's trailers: before falconet sent them, the
//! stream's error was lost and the client saw a clean end.
#![cfg(feature = "tower")]
// tonic's `Status` is what a gRPC stream's items carry, large as it is.
#![allow(clippy::result_large_err)]

mod common;

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use falconet_server::Options;
use falconet_server::tower::Body;
use http::uri::PathAndQuery;
use tonic::codec::ProstCodec;
use tonic::{Code, Request, Response, Status};

#[derive(Clone, PartialEq, prost::Message)]
struct Hello {
    #[prost(string, tag = "1")]
    name: String,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// `hello NAME`; `missing` is NOT_FOUND; `slow` answers after a sleep.
struct SayHello;

impl tonic::server::UnaryService<Hello> for SayHello {
    type Response = Hello;
    type Future = BoxFuture<Result<Response<Hello>, Status>>;
    fn call(&mut self, request: Request<Hello>) -> Self::Future {
        Box::pin(async move {
            let name = request.into_inner().name;
            match name.as_str() {
                "missing" => return Err(Status::not_found("no such name")),
                "slow" => tokio::time::sleep(Duration::from_millis(20)).await,
                _ => {}
            }
            Ok(Response::new(Hello { name: format!("hello {name}") }))
        })
    }
}

/// Three messages, 5 ms apart, then ABORTED.
struct Count;

type Messages = Pin<Box<dyn tokio_stream::Stream<Item = Result<Hello, Status>> + Send>>;

impl tonic::server::ServerStreamingService<Hello> for Count {
    type Response = Hello;
    type ResponseStream = Messages;
    type Future = BoxFuture<Result<Response<Messages>, Status>>;
    fn call(&mut self, request: Request<Hello>) -> Self::Future {
        use tokio_stream::StreamExt;
        Box::pin(async move {
            let name = request.into_inner().name;
            let messages = (0..3)
                .map(move |i| Ok(Hello { name: format!("{name} {i}") }))
                .chain([Err(Status::aborted("stopped after three"))]);
            let stream = tokio_stream::iter(messages).throttle(Duration::from_millis(5));
            Ok(Response::new(Box::pin(stream) as Messages))
        })
    }
}

/// The service, as tonic's generated code would route it.
#[derive(Clone)]
struct Greeter;

impl tower_service::Service<http::Request<Body>> for Greeter {
    type Response = http::Response<tonic::body::BoxBody>;
    type Error = Infallible;
    type Future = BoxFuture<Result<Self::Response, Infallible>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        Box::pin(async move {
            let mut grpc = tonic::server::Grpc::new(ProstCodec::<Hello, Hello>::default());
            Ok(match request.uri().path() {
                "/probe.Greeter/SayHello" => grpc.unary(SayHello, request).await,
                "/probe.Greeter/Count" => grpc.server_streaming(Count, request).await,
                _ => Status::unimplemented("no such method").into_http(),
            })
        })
    }
}

fn hello(name: &str) -> Request<Hello> {
    Request::new(Hello { name: name.into() })
}

#[test]
fn a_tonic_client_gets_every_status() {
    if cfg!(falconet_tsan) {
        return; // tokio's I/O driver under TSan (tokio-rs/tokio#7299)
    }
    let (server, _rt) = common::serve_tower(Options::new().workers(1), Greeter);
    let addr = server.addr;
    let client_rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    client_rt.block_on(async move {
        let channel = tonic::transport::Channel::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut client = tonic::client::Grpc::new(channel);
        let say_hello = PathAndQuery::from_static("/probe.Greeter/SayHello");
        for name in ["world", "slow"] {
            client.ready().await.unwrap();
            let reply = client
                .unary::<Hello, Hello, _>(hello(name), say_hello.clone(), ProstCodec::default())
                .await
                .unwrap_or_else(|status| panic!("{name}: {status:?}"));
            assert_eq!(reply.into_inner().name, format!("hello {name}"));
        }
        client.ready().await.unwrap();
        let status = client
            .unary::<Hello, Hello, _>(hello("missing"), say_hello, ProstCodec::default())
            .await
            .unwrap_err();
        assert_eq!((status.code(), status.message()), (Code::NotFound, "no such name"));

        // A stream's status comes only in its trailers.
        client.ready().await.unwrap();
        let count = PathAndQuery::from_static("/probe.Greeter/Count");
        let mut stream = client
            .server_streaming::<Hello, Hello, _>(hello("n"), count, ProstCodec::default())
            .await
            .unwrap()
            .into_inner();
        let mut names = Vec::new();
        let end = loop {
            match stream.message().await {
                Ok(Some(message)) => names.push(message.name),
                Ok(None) => break None,
                Err(status) => break Some(status),
            }
        };
        assert_eq!(names, ["n 0", "n 1", "n 2"]);
        let status = end.expect("the stream's ABORTED status was lost: it ended clean");
        assert_eq!((status.code(), status.message()), (Code::Aborted, "stopped after three"));

        client.ready().await.unwrap();
        let nope = PathAndQuery::from_static("/probe.Greeter/Nope");
        let status = client
            .unary::<Hello, Hello, _>(hello("x"), nope, ProstCodec::default())
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::Unimplemented);
    });
}
