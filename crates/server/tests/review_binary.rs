//! Review of 7a7938b: `--app-threads` takes 1 to 256, a usage error
//! otherwise.

mod common;

use std::io::BufRead;
use std::io::BufReader;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Client;

/// Runs the binary with `args`: exit status, stderr.
fn exits(args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_falconet"))
        .args(["--addr", "127.0.0.1:0", "--workers", "1"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn falconet");
    let began = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if began.elapsed() > Duration::from_secs(10) {
            child.kill().unwrap();
            panic!("still running with {args:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn review_app_threads_out_of_range_are_usage_errors() {
    for (value, reason) in [
        ("0", "0 is not in 1..=256"),
        ("257", "257 is not in 1..=256"),
        ("65536", "65536 is not in 1..=256"),
        ("18446744073709551616", "--app-threads"),
        ("-1", "--app-threads"),
        ("abc", "invalid digit"),
        ("", "--app-threads"),
        ("1.5", "invalid digit"),
    ] {
        let arg = format!("--app-threads={value}");
        let (code, stderr) = exits(&[&arg]);
        assert_eq!(code, Some(2), "{value:?}: {stderr}");
        assert!(stderr.contains(reason), "{value:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{value:?}: {stderr}");
    }
}

/// The bounds themselves run, and /delay (answered on the app runtime)
/// is served.
#[test]
fn review_app_threads_bounds_run_and_serve() {
    for value in ["1", "256", "0256"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_falconet"))
            .args(["--addr", "127.0.0.1:0", "--workers", "1", "--app-threads", value])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn falconet");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let addr: std::net::SocketAddr = line
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("{value}: no address in {line:?}"))
            .parse()
            .unwrap();
        let mut client = Client::connect(addr);
        assert_eq!(client.get("/delay?ms=10").status, 200, "{value}");
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

/// The binary with `args`, and its address; kill the child when done.
fn start(args: &[&str]) -> (std::process::Child, std::net::SocketAddr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_falconet"))
        .args(["--addr", "127.0.0.1:0", "--workers", "1"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn falconet");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap();
    (child, addr)
}

/// 5f94a77's own scenario against the binary: `/echo`'s upload stalled
/// beside `/delay?ms=8000`. What happened to stream 3 (`/delay`): its
/// status, or the GOAWAY's code (negated) and when.
fn echo_stalled_beside_delay(args: &[&str]) -> (i64, Duration) {
    use common::h2raw::{self, Event, Raw};
    use falconet_server::h2::frame::kind;
    let (mut child, addr) = start(args);
    let mut raw = Raw::handshake(addr, &[]);
    let began = Instant::now();
    let mut block = h2raw::req("POST", "/echo");
    h2raw::literal(&mut block, b"content-length", b"100");
    raw.headers(1, &block, false);
    raw.data(1, b"ten bytes.", false);
    raw.headers(3, &h2raw::req("GET", "/delay?ms=8000"), true);
    let mut result = (0, began.elapsed());
    while began.elapsed() < Duration::from_secs(12) {
        match raw.next(Duration::from_millis(50)) {
            Event::Frame(f) if f.kind == kind::GOAWAY => {
                result = (-i64::from(f.code()), began.elapsed());
                break;
            }
            Event::Frame(f) if f.kind == kind::HEADERS && f.stream == 3 => {
                let mut status = 0;
                let _ = raw.decoder.decode(&f.payload, |field| {
                    if field.name == b":status" {
                        status = String::from_utf8_lossy(field.value).parse().unwrap_or(0);
                    }
                });
                result = (status, began.elapsed());
                break;
            }
            Event::Frame(f) if f.kind == kind::HEADERS => {
                let _ = raw.decoder.decode(&f.payload, |_| {});
            }
            Event::Eof => {
                result = (-1000, began.elapsed());
                break;
            }
            _ => {}
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    result
}

/// With a short --io-timeout the fix works: /delay is answered.
#[test]
fn review_binary_stalled_echo_beside_delay_with_a_short_io_timeout() {
    let (status, at) = echo_stalled_beside_delay(&["--io-timeout", "2s"]);
    assert_eq!(status, 200, "after {at:?}");
}

/// With the binary's defaults (io 30 s, request-body rate 240 B/s with a
/// 5 s grace) the rate meter ends the connection first: GOAWAY
/// (ENHANCE_YOUR_CALM) at about 5.5 s, /delay's answer lost: the case the
/// CHANGELOG entry names is not fixed in the default configuration.
#[test]
fn review_binary_stalled_echo_beside_delay_with_defaults() {
    let (status, at) = echo_stalled_beside_delay(&[]);
    assert_eq!(status, 200, "stream 3's fate (negative: GOAWAY code) after {at:?}");
}
