//! Each timer that ends an exchange says so in the log, naming the option
//! that did it: an outside review served a quiet event stream on falconet,
//! saw it cut at 30 s and found nothing in the log to say why
//! (`response_timeout`). The application's lateness is a warning (the
//! fix is the application's or the option's); a client's is debug (bad
//! clients are the everyday).

mod common;

use std::io::Write;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use common::{connect, options, read_for, serve, text, timed_app::App};
use falconet_server::MinDataRate;

/// Every event any thread of this test binary logged: `LEVEL field=value ...`.
fn log() -> &'static Mutex<Vec<String>> {
    static LOG: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    LOG.get_or_init(|| {
        tracing::subscriber::set_global_default(Collector).expect("the only subscriber");
        Mutex::new(Vec::new())
    })
}

/// Collects events into [`log`] (spans are not needed).
struct Collector;

impl tracing::Subscriber for Collector {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Line(String);
        impl tracing::field::Visit for Line {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                use std::fmt::Write;
                let _ = write!(self.0, " {}={value:?}", field.name());
            }
        }
        let mut line = Line(event.metadata().level().to_string());
        event.record(&mut line);
        log().lock().unwrap().push(line.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// Whether an event at `level` mentions `option`.
fn logged(level: &str, option: &str) -> bool {
    log().lock().unwrap().iter().any(|line| line.starts_with(level) && line.contains(option))
}

/// `request` sent, the reply read until the server closes.
fn answer(options: falconet_server::Options, request: &[u8]) -> String {
    let (app, _kept, _) = App::new();
    let server = serve(options, app);
    let mut client = connect(server.addr);
    client.write_all(request).unwrap();
    text(&read_for(&mut client, Duration::from_secs(10)).0)
}

#[test]
fn response_timeout_warns_naming_the_option() {
    log();
    // `answer` keeps the responder unanswered until the timeout.
    let got = answer(
        options().response_timeout(Some(Duration::from_millis(200))),
        b"GET /never HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    assert!(got.starts_with("HTTP/1.1 503"), "{got}");
    assert!(logged("WARN", "response_timeout"), "{:?}", log().lock().unwrap());
}

#[test]
fn response_timeout_of_an_http2_stream_warns_naming_the_option() {
    log();
    let (app, kept, _) = App::new();
    let options = options().response_timeout(Some(Duration::from_millis(200)));
    let server = serve(options, app);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let status = runtime.block_on(async {
        let mut client = common::h2_client(server.addr).await;
        let request = http::Request::get("http://t/never").body(()).unwrap();
        let (response, _) = client.send_request(request, true).unwrap();
        // The responder waits in `kept`, unanswered, until the timeout.
        response.await.unwrap().status()
    });
    assert!(kept.try_recv().is_ok(), "the request reached the application");
    assert_eq!(status, 503);
    assert!(
        log().lock().unwrap().iter().any(|l| l.starts_with("WARN")
            && l.contains("response_timeout")
            && l.contains("stream=1")),
        "{:?}",
        log().lock().unwrap()
    );
}

#[test]
fn a_late_client_is_logged_at_debug_naming_the_option() {
    log();
    let quick = Duration::from_millis(200);
    // A body that stops coming: io_timeout.
    let got = answer(
        options().io_timeout(quick),
        b"POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 9\r\n\r\nab",
    );
    assert!(got.starts_with("HTTP/1.1 408"), "{got}");
    assert!(logged("DEBUG", "io_timeout"), "{:?}", log().lock().unwrap());
    // A head that stops coming: header_timeout.
    let got = answer(options().header_timeout(quick), b"GET /x HTTP/1.1\r\nHost");
    assert!(got.starts_with("HTTP/1.1 408"), "{got}");
    assert!(logged("DEBUG", "header_timeout"), "{:?}", log().lock().unwrap());
    // A body that comes too slowly: min_request_body_rate.
    let rate = MinDataRate::new(100_000, quick);
    let got = answer(
        options().min_request_body_rate(Some(rate)),
        b"POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\nab",
    );
    assert!(got.starts_with("HTTP/1.1 408"), "{got}");
    assert!(logged("DEBUG", "min_request_body_rate"), "{:?}", log().lock().unwrap());
    // Responses taken too slowly (not at all): min_response_rate.
    let (app, _kept, _) = App::new();
    let rate = MinDataRate::new(1 << 20, quick);
    let server = serve(options().min_response_rate(Some(rate)), app);
    let mut client = connect(server.addr);
    client
        .write_all(format!("GET /big?n={} HTTP/1.1\r\nHost: t\r\n\r\n", 32 << 20).as_bytes())
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !logged("DEBUG", "min_response_rate") && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(logged("DEBUG", "min_response_rate"), "{:?}", log().lock().unwrap());
}
