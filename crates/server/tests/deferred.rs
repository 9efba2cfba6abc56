//! Deferred responses and request bodies read on application threads,
//! driven through `Session` (no sockets): the hand-offs between the
//! connection and the application's threads, and the order of answers.

use std::io::Read;
use std::sync::mpsc;
use std::thread;

use falconet_pool::Pool;
use falconet_server::{
    Context, Handler, Options, Progress, Request, RequestBody, Responder, Response, Session,
};

/// What the test handler does with a request, by path.
enum Route {
    /// Answered on the worker: `now <path>`.
    Now(String),
    /// Deferred: the responder goes to the test through the channel.
    Later,
    /// Body streamed: body and responder go to the test.
    Stream,
}

struct App {
    later: mpsc::Sender<Responder>,
    streams: mpsc::Sender<(RequestBody, Responder)>,
}

impl Handler for App {
    type State = Route;

    fn head(&self, request: &Request<'_>) -> Route {
        match request.path() {
            "/later" => Route::Later,
            "/stream" => {
                request.stream_body();
                Route::Stream
            }
            path => Route::Now(path.to_owned()),
        }
    }

    fn respond(&self, route: Route, response: &mut Response<'_>) {
        match route {
            Route::Now(path) => response.body(format!("now {path}").as_bytes()).unwrap(),
            Route::Later => self.later.send(response.defer().unwrap()).unwrap(),
            Route::Stream => {
                let body = response.take_body().expect("stream_body was called");
                self.streams.send((body, response.defer().unwrap())).unwrap();
            }
        }
    }
}

struct Rig {
    session: Session<App>,
    app: App,
    cx: Context,
    later: mpsc::Receiver<Responder>,
    streams: mpsc::Receiver<(RequestBody, Responder)>,
    _pool: Pool,
}

fn rig() -> Rig {
    let pool = Pool::new();
    let (later_tx, later) = mpsc::channel();
    let (streams_tx, streams) = mpsc::channel();
    Rig {
        session: Session::new(&pool).unwrap(),
        app: App { later: later_tx, streams: streams_tx },
        cx: Context::new(&Options::new()).unwrap(),
        later,
        streams,
        _pool: pool,
    }
}

impl Rig {
    fn process(&mut self) -> Progress {
        self.session.process(&self.app, &mut self.cx)
    }

    /// Takes the output so far, with the `Date` line blanked.
    fn take_output(&mut self) -> String {
        let text = String::from_utf8(self.session.output().to_vec()).unwrap();
        let n = self.session.output().len();
        self.session.consume_output(n);
        text.lines()
            .filter(|line| !line.starts_with("Date: ") && !line.starts_with("Server: "))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

const GET: fn(&str) -> String = |path| format!("GET {path} HTTP/1.1\r\nHost: a\r\n\r\n");

#[test]
fn a_deferred_response_keeps_the_pipelined_ones_behind_it_in_order() {
    let mut rig = rig();
    let input = [GET("/one"), GET("/later"), GET("/two"), GET("/three")].concat();
    rig.session.receive(input.as_bytes()).unwrap();
    assert_eq!(rig.process(), Progress::Waiting);
    let first = rig.take_output();
    assert!(first.ends_with("now /one"), "{first}");
    let responder = rig.later.try_recv().expect("deferred");
    assert!(rig.later.try_recv().is_err(), "nothing parsed behind the deferred one");
    thread::spawn(move || responder.body(b"later").unwrap()).join().unwrap();
    assert_eq!(rig.process(), Progress::NeedInput);
    let rest = rig.take_output();
    let later = rest.find("later").unwrap();
    let two = rest.find("now /two").unwrap();
    let three = rest.find("now /three").unwrap();
    assert!(later < two && two < three, "{rest}");
    assert!(rig.session.is_idle());
}

#[test]
fn a_streamed_deferred_response_is_chunked_and_a_dropped_one_is_500() {
    let mut rig = rig();
    rig.session.receive(GET("/later").as_bytes()).unwrap();
    assert_eq!(rig.process(), Progress::Waiting);
    let mut responder = rig.later.recv().unwrap();
    responder.header("X-Test", "1").unwrap();
    responder.write_blocking(b"hello ").unwrap();
    assert_eq!(rig.process(), Progress::Waiting, "still in flight");
    responder.write_blocking(b"world").unwrap();
    responder.finish().unwrap();
    assert_eq!(rig.process(), Progress::NeedInput);
    let text = rig.take_output();
    assert!(text.contains("Transfer-Encoding: chunked"), "{text}");
    assert!(text.contains("6\nhello \n5\nworld\n0"), "{text:?}");

    // Dropped before answering: 500, and the connection closes.
    rig.session.receive(GET("/later").as_bytes()).unwrap();
    assert_eq!(rig.process(), Progress::Waiting);
    drop(rig.later.recv().unwrap());
    assert_eq!(rig.process(), Progress::Close);
    assert!(rig.take_output().starts_with("HTTP/1.1 500"));
}

#[test]
fn a_response_dropped_after_its_head_closes_the_connection() {
    let mut rig = rig();
    rig.session.receive(GET("/later").as_bytes()).unwrap();
    rig.process();
    let mut responder = rig.later.recv().unwrap();
    responder.write_blocking(b"partial").unwrap();
    drop(responder);
    assert_eq!(rig.process(), Progress::Close);
    let text = rig.take_output();
    assert!(text.starts_with("HTTP/1.1 200") && text.contains("partial"), "{text}");
    assert!(!text.contains("\r\n0\r\n"), "no terminating chunk: the body was cut");
}

#[test]
fn a_body_read_on_another_thread_then_the_next_request() {
    let mut rig = rig();
    let body = vec![b'x'; 100_000];
    let head =
        format!("POST /stream HTTP/1.1\r\nHost: a\r\nContent-Length: {}\r\n\r\n", body.len());
    rig.session.receive(head.as_bytes()).unwrap();
    assert_eq!(rig.process(), Progress::Waiting);
    let (mut request_body, responder) = rig.streams.recv().unwrap();
    let app = thread::spawn(move || {
        let mut got = Vec::new();
        request_body.read_to_end(&mut got).unwrap();
        responder.body(format!("{} bytes", got.len()).as_bytes()).unwrap();
        got
    });
    // The socket side, in pieces, with the pipelined request behind.
    for piece in body.chunks(7000) {
        rig.session.receive(piece).unwrap();
    }
    rig.session.receive(GET("/after").as_bytes()).unwrap();
    let got = app.join().unwrap();
    assert_eq!(got, body);
    assert_eq!(rig.process(), Progress::NeedInput);
    let text = rig.take_output();
    let answer = text.find("100000 bytes").expect("the deferred answer");
    assert!(answer < text.find("now /after").expect("the next request"), "{text}");
}

#[test]
fn a_chunked_body_not_read_is_drained_and_the_connection_goes_on() {
    let mut rig = rig();
    let input = "POST /stream HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n\
                 5\r\nhello\r\n0\r\n\r\n";
    rig.session.receive(input.as_bytes()).unwrap();
    rig.session.receive(GET("/after").as_bytes()).unwrap();
    assert_eq!(rig.process(), Progress::Waiting);
    let (request_body, responder) = rig.streams.recv().unwrap();
    drop(request_body); // never read
    responder.body(b"ignored your body").unwrap();
    assert_eq!(rig.process(), Progress::NeedInput);
    let text = rig.take_output();
    assert!(text.contains("ignored your body") && text.ends_with("now /after"), "{text}");
}

#[test]
fn two_readers_of_one_body_get_the_concurrent_read_error_and_lose_nothing() {
    let mut rig = rig();
    let head = "POST /stream HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc";
    rig.session.receive(head.as_bytes()).unwrap();
    assert_eq!(rig.process(), Progress::Waiting);
    let (body, responder) = rig.streams.recv().unwrap();
    let body = std::sync::Arc::new(body);
    let (began, has_begun) = mpsc::channel();
    // One thread reads what is there, then waits for the rest: its read is
    // pending while the second reader runs into it.
    let first = {
        let body = body.clone();
        thread::spawn(move || {
            let mut buf = [0u8; 3];
            let n = (&*body).read(&mut buf).unwrap();
            began.send(()).unwrap();
            let mut rest = [0u8; 16];
            let second = (&*body).read(&mut rest);
            (buf[..n].to_vec(), second.map_err(|error| concurrent(&error)))
        })
    };
    has_begun.recv().unwrap();
    // Give the first thread's read time to be pending (not a timing
    // assert: if it is not yet, the second read waits and it conflicts).
    thread::sleep(std::time::Duration::from_millis(50));
    let mut buf = [0u8; 16];
    let second = (&*body).read(&mut buf).map_err(|error| concurrent(&error));
    assert_eq!(second, Err(true), "the second reader gets the concurrent-read error");
    let (first_bytes, first_second) = first.join().unwrap();
    assert_eq!(first_bytes, b"abc");
    assert_eq!(first_second, Err(true), "the pending read fails too");
    // Nothing was consumed by either failure: the rest arrives whole.
    rig.session.receive(b"defghij").unwrap();
    let mut rest = Vec::new();
    (&*body).read_to_end(&mut rest).unwrap();
    assert_eq!(rest, b"defghij");
    drop(responder);
}

/// Whether `error` is the pipe's typed concurrent-read error.
fn concurrent(error: &std::io::Error) -> bool {
    error.get_ref().and_then(|e| e.downcast_ref::<falconet_pipe::ReadError>())
        == Some(&falconet_pipe::ReadError::ConcurrentRead)
}
