//! The `falconet` binary: prints where it listens, serves, and shuts down
//! gracefully on SIGTERM and SIGINT; refuses invalid options with a
//! non-zero exit and the reason on stderr.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Client;

fn run_until(signal: &str) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_falconet"))
        .args(["--addr", "127.0.0.1:0", "--workers", "2", "--stats"])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn falconet");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the listening address")
        .parse()
        .unwrap();
    let mut client = Client::connect(addr);
    assert_eq!(client.get("/plaintext").text(), "Hello, World!");
    let mut silent = Client::connect(addr);
    // --stats prints a line a second.
    line.clear();
    stdout.read_line(&mut line).unwrap();
    assert!(line.starts_with("requests/s"), "{line}");
    let status = Command::new("kill").args([signal, &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    client.expect_closed();
    silent.expect_closed();
    let began = Instant::now();
    let exit = loop {
        if let Some(exit) = child.try_wait().unwrap() {
            break exit;
        }
        assert!(began.elapsed() < Duration::from_secs(10), "still running after {signal}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(exit.success(), "{exit:?}");
}

#[test]
fn sigterm_shuts_down_gracefully() {
    run_until("-TERM");
}

#[test]
fn sigint_shuts_down_gracefully() {
    run_until("-INT");
}

/// Runs the binary with `args`: it must exit within 10 s, non-zero, with
/// `reason` on stderr.
fn refuses(args: &[&str], reason: &str) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_falconet"))
        .args(["--addr", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn falconet");
    let began = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if began.elapsed() > Duration::from_secs(10) {
            child.kill().unwrap();
            let output = child.wait_with_output().unwrap();
            panic!(
                "still running with {args:?}; stdout: {}",
                String::from_utf8_lossy(&output.stdout)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{args:?} exited with {:?}", output.status);
    assert!(stderr.contains(reason), "{args:?}: stderr {stderr:?}, wanted {reason:?}");
}

#[test]
fn invalid_options_exit_non_zero_with_the_reason() {
    refuses(&["--workers", "0"], "workers must be 1 to 256, not 0");
    refuses(&["--workers", "1", "--max-connections", "0"], "max_connections must be");
    refuses(&["--workers", "1", "--shutdown-timeout", "18446744073709551615"], "timeouts must be");
}
