//! The `falconet` binary: prints where it listens, serves, and shuts down
//! gracefully on SIGTERM and SIGINT; refuses invalid options with a
//! non-zero exit and the reason on stderr.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
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
    let addr = listening_addr(&line);
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
    assert_eq!(exit_code(&mut child, signal), Some(0));
}

#[test]
fn sigterm_shuts_down_gracefully() {
    run_until("-TERM");
}

#[test]
fn sigint_shuts_down_gracefully() {
    run_until("-INT");
}

/// Waits up to 10 s (a hang check, not a timing assert) for `child` to
/// exit; its exit code.
fn exit_code(child: &mut std::process::Child, what: &str) -> Option<i32> {
    let began = Instant::now();
    loop {
        if let Some(exit) = child.try_wait().unwrap() {
            return exit.code();
        }
        if began.elapsed() > Duration::from_secs(10) {
            child.kill().unwrap();
            panic!("still running 10 s after {what}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A stderr nobody reads (its reader gone, a full disk) must not keep the
/// binary from stopping: the log line of the signal used to panic the
/// signal thread (in the subscriber's `eprintln!`), and the shutdown never
/// started; nor may a stdout nobody reads end `--stats` serving (a
/// review's findings).
#[test]
fn signals_stop_the_binary_whatever_its_stdout_and_stderr() {
    let full = || std::fs::File::options().write(true).open("/dev/full").unwrap();
    for (stdout_full, stderr_full) in [(false, true), (true, false), (true, true)] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_falconet"))
            .args(["--addr", "127.0.0.1:0", "--workers", "1", "--stats"])
            .stdout(if stdout_full { Stdio::from(full()) } else { Stdio::null() })
            .stderr(if stderr_full { Stdio::from(full()) } else { Stdio::null() })
            .spawn()
            .expect("spawn falconet");
        // A --stats line (or its failure) comes after a second.
        std::thread::sleep(Duration::from_millis(1500));
        assert!(child.try_wait().unwrap().is_none(), "died early ({stdout_full}, {stderr_full})");
        let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
        assert!(status.unwrap().success());
        let what = format!("SIGTERM, stdout full {stdout_full}, stderr full {stderr_full}");
        assert_eq!(exit_code(&mut child, &what), Some(0), "{what}");
    }
}

/// A second signal during the graceful shutdown exits at once, with the
/// code a shell gives a process that signal ended (128 + its number).
#[test]
fn a_second_signal_exits_at_once_with_its_code() {
    for (signal, code) in [("-TERM", 143), ("-INT", 130)] {
        let (mut child, addr) = spawn(&["--addr", "127.0.0.1:0", "--shutdown-timeout", "60s"]);
        // A request in flight holds the graceful shutdown open.
        let mut waiting = std::net::TcpStream::connect(addr).unwrap();
        waiting.write_all(b"GET /delay?ms=10000 HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let pid = child.id().to_string();
        let kill = |signal: &str| {
            let status = Command::new("kill").args([signal, &pid]).status();
            assert!(status.unwrap().success());
        };
        kill("-TERM");
        std::thread::sleep(Duration::from_millis(300));
        assert!(child.try_wait().unwrap().is_none(), "the first signal drains, it does not exit");
        kill(signal);
        assert_eq!(exit_code(&mut child, signal), Some(code), "second signal {signal}");
    }
}

/// Runs the binary with `args`: it must exit within 10 s, non-zero, with
/// `reason` on stderr.
fn refuses(args: &[&str], reason: &str) {
    let addr: &[&str] = if args.contains(&"--addr") { &[] } else { &["--addr", "127.0.0.1:0"] };
    let mut child = Command::new(env!("CARGO_BIN_EXE_falconet"))
        .args(addr)
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
    assert!(!stderr.contains("panicked"), "{args:?} panicked: {stderr:?}");
}

#[test]
fn invalid_options_exit_non_zero_with_the_reason() {
    refuses(&["--workers", "0"], "workers must be 1 to 256, not 0");
    refuses(&["--workers", "1", "--max-connections", "0"], "max_connections must be");
    refuses(&["--workers", "1", "--shutdown-timeout", "18446744073709551615"], "is too long");
    refuses(
        &["--workers", "1", "--h2-max-concurrent-streams", "0"],
        "http2 max_concurrent_streams must be 1 to 4294967295, not 0",
    );
    refuses(
        &["--workers", "1", "--h2-connection-window-size", "1000"],
        "http2 connection_window_size must be 65535 to 2147483647, not 1000",
    );
    // 0 used to run one thread; 100,000 made tokio panic (the system
    // refused a thread).
    refuses(&["--workers", "1", "--app-threads", "0"], "0 is not in 1..=256");
    refuses(&["--workers", "1", "--app-threads", "100000"], "100000 is not in 1..=256");
}

#[test]
fn durations_take_units_and_errors_speak_the_unit_typed() {
    refuses(
        &["--keep-alive-timeout", "5ms"],
        "--keep-alive-timeout 5ms is out of range: it must be 20ms to 86400000ms",
    );
    refuses(
        &["--shutdown-timeout", "25h"],
        "--shutdown-timeout 25h is out of range: it must be 20ms to 24h",
    );
    refuses(
        &["--shutdown-timeout", "90000"],
        "--shutdown-timeout 90000s is out of range: it must be 20ms to 86400s",
    );
    refuses(&["--shutdown-timeout", "0"], "it must be 20ms to 86400s");
    refuses(&["--io-timeout", "0"], "--io-timeout 0s is out of range");
    refuses(&["--header-timeout", "10ms"], "--header-timeout 10ms is out of range");
    refuses(&["--min-response-grace", "0"], "--min-response-grace 0s is out of range");
    refuses(&["--min-response-rate", "-1"], "unexpected argument '-1'");
    refuses(&["--min-response-rate", "4294967296"], "--min-response-rate");
    refuses(&["--min-request-body-grace", "0"], "--min-request-body-grace 0s is out of range");
    refuses(&["--min-request-body-rate", "4294967296"], "--min-request-body-rate");
    refuses(&["--keep-alive-timeout", "10x"], "unknown unit \"x\"");
    refuses(&["--keep-alive-timeout", "ms"], "is not a duration");
    // In range, with units: it starts (and is stopped by the test).
    let (mut child, addr) = spawn(&[
        "--addr",
        "127.0.0.1:0",
        "--keep-alive-timeout",
        "500ms",
        "--shutdown-timeout",
        "1m",
        "--min-response-grace",
        "2s",
    ]);
    assert_eq!(Client::connect(addr).get("/plaintext").text(), "Hello, World!");
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Starts the binary with `args`; returns it and the address it printed.
fn spawn(args: &[&str]) -> (std::process::Child, std::net::SocketAddr) {
    let (child, addr, _) = spawn_with_line(args);
    (child, addr)
}

/// [`spawn`], and the first line the binary printed.
fn spawn_with_line(args: &[&str]) -> (std::process::Child, std::net::SocketAddr, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_falconet"))
        .args(["--workers", "1"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn falconet");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let addr = listening_addr(&line);
    (child, addr, line)
}

/// The address in the binary's first line ("falconet listening on http://ADDR ...").
fn listening_addr(line: &str) -> std::net::SocketAddr {
    line.split("http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .parse()
        .unwrap()
}

/// `--h2c`: `off` answers the HTTP/2 preface as the HTTP/1 request line
/// it then is (`505`), `prior-knowledge` takes it; an unknown mode is a
/// usage error that lists the modes.
#[test]
fn h2c_flag_chooses_the_ways_to_http2() {
    let mut preface = falconet_server::h2::frame::PREFACE.to_vec();
    falconet_server::h2::frame::encode_settings(&mut preface, &[]).unwrap();
    let first_bytes = |mode: &str| {
        let (mut child, addr, line) = spawn_with_line(&["--addr", "127.0.0.1:0", "--h2c", mode]);
        assert!(line.trim_end().ends_with(&format!(" worker, h2c {mode})")), "{line}");
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream.write_all(&preface).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut first = [0u8; 12];
        stream.read_exact(&mut first).unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        first
    };
    assert_eq!(&first_bytes("off"), b"HTTP/1.1 505");
    // A SETTINGS frame: type 4 on stream 0.
    let settings = first_bytes("prior-knowledge");
    assert_eq!((settings[3], &settings[5..9]), (4, &[0u8; 4][..]), "{settings:?}");
    refuses(&["--workers", "1", "--h2c", "none"], "[possible values: both, prior-knowledge, off]");
}

/// `--min-response-rate 0` turns the rate off: a client that reads
/// nothing is still connected after twice the grace it would have had.
#[test]
fn min_response_rate_0_turns_the_rate_off() {
    let request = b"GET /bytes?n=67108864 HTTP/1.1\r\nHost: t\r\n\r\n";
    let open_after = |args: &[&str]| {
        let (mut child, addr) = spawn(args);
        let mut client = Client::connect(addr);
        client.send(request);
        std::thread::sleep(Duration::from_millis(1500));
        // Whether the server still holds it: a closed one has sent its FIN
        // after what the buffers hold, which a full read would reach.
        let mut stream = client.stream().try_clone().unwrap();
        stream.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
        let mut buf = vec![0; 1 << 20];
        let open = loop {
            match stream.read(&mut buf) {
                Ok(0) => break false,
                Ok(_) => {}
                Err(_) => break true,
            }
        };
        child.kill().unwrap();
        child.wait().unwrap();
        open
    };
    let base = ["--addr", "127.0.0.1:0", "--min-response-grace", "200ms"];
    assert!(!open_after(&base), "a client that read nothing outlived a 200ms grace");
    assert!(open_after(&[&base[..], &["--min-response-rate", "0"]].concat()));
}

/// `--min-request-body-rate 0` turns the body rate off: a body sent at a
/// tenth of the default rate, which gets `408` past the grace, is all
/// read and answered.
#[test]
fn min_request_body_rate_0_turns_the_rate_off() {
    let status = |args: &[&str]| {
        let (mut child, addr) = spawn(args);
        let mut client = Client::connect(addr);
        client.send(b"POST /plaintext HTTP/1.1\r\nHost: t\r\nContent-Length: 24\r\n\r\n");
        for _ in 0..12 {
            std::thread::sleep(Duration::from_millis(100));
            if client.stream().write_all(b"xx").is_err() {
                break;
            }
        }
        let status = client.reply().map(|reply| reply.status);
        child.kill().unwrap();
        child.wait().unwrap();
        status.ok()
    };
    let base = ["--addr", "127.0.0.1:0", "--min-request-body-grace", "200ms"];
    assert_eq!(status(&base), Some(408), "20 bytes a second outlived a 200ms grace");
    // The demo's `/plaintext` takes GET alone: `405`, once the body is in.
    assert_eq!(status(&[&base[..], &["--min-request-body-rate", "0"]].concat()), Some(405));
}

#[test]
fn addr_takes_a_host_name() {
    let (mut child, addr) = spawn(&["--addr", "localhost:0"]);
    assert!(addr.ip().is_loopback(), "{addr}");
    assert_eq!(Client::connect(addr).get("/plaintext").text(), "Hello, World!");
    child.kill().unwrap();
    child.wait().unwrap();
    // (No name lookup that could wait on a DNS server: a bad port.)
    refuses(&["--addr", "localhost:http"], "cannot listen on localhost:http");
}

#[test]
fn version_and_help_say_what_a_user_needs() {
    let output = Command::new(env!("CARGO_BIN_EXE_falconet")).arg("--version").output().unwrap();
    let version = String::from_utf8(output.stdout).unwrap();
    assert!(version.starts_with("falconet "), "{version}");
    let output = Command::new(env!("CARGO_BIN_EXE_falconet")).arg("--help").output().unwrap();
    let help = String::from_utf8(output.stdout).unwrap();
    for needed in [
        "RUST_LOG",
        "NO_COLOR",
        "second Ctrl-C",
        "stderr",
        "500ms",
        "host:port",
        "--h2-max-concurrent-streams",
        "--h2-reset-budget",
        "--h2-reset-refill-per-second",
        "--h2-max-empty-frames",
        "--h2-max-queued-control",
        "--h2-initial-window-size",
        "--h2-connection-window-size",
        "--min-response-rate",
        "--min-response-grace",
        "--min-request-body-rate",
        "--min-request-body-grace",
    ] {
        assert!(help.contains(needed), "--help lacks {needed:?}:\n{help}");
    }
}

#[test]
fn logs_go_to_stderr_without_colours_when_it_is_not_a_terminal() {
    let (child, addr) = spawn(&["--addr", "127.0.0.1:0"]);
    assert_eq!(Client::connect(addr).get("/plaintext").text(), "Hello, World!");
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stderr.contains("graceful shutdown"), "the info log is on stderr: {stderr:?}");
    assert!(!stderr.contains('\u{1b}'), "colour codes in a pipe: {stderr:?}");
    assert!(!stdout.contains("graceful shutdown"), "logs on stdout: {stdout:?}");
}

/// The binary's resident memory, in KiB.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn rss_kib(child: &std::process::Child) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let line = status.lines().find(|line| line.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// After a spike of connections, the memory their sessions took from the
/// system allocator goes back once they close (glibc kept it: 8,000 idle
/// HTTP/2 connections left 177 MiB behind; the binary now trims its heap
/// once half a peak of connections, or of pool memory, is gone).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn memory_goes_back_after_a_connection_spike() {
    const SPIKE: usize = 3000;
    let (mut child, addr) = spawn(&["--addr", "127.0.0.1:0"]);
    let before = rss_kib(&child);
    let preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";
    let mut spike = Vec::with_capacity(SPIKE);
    for _ in 0..SPIKE {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream.write_all(preface).unwrap();
        spike.push(stream);
    }
    // Every connection's SETTINGS came back: all are open and set up.
    let mut buf = [0u8; 64];
    for stream in &mut spike {
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        assert!(stream.read(&mut buf).unwrap() > 0);
    }
    let open = rss_kib(&child);
    drop(spike);
    let grown = open.saturating_sub(before);
    // About 25 MiB: half the pool's input blocks, half the sessions (an
    // idle HTTP/2 connection's heap is about 4 KiB).
    assert!(grown > 10 * 1024, "{SPIKE} connections took only {grown} KiB: nothing to measure");
    let began = Instant::now();
    let after = loop {
        let now = rss_kib(&child);
        // The pool gives back half its idle slabs every 5 s: about 15 s.
        if now < before + grown / 4 || began.elapsed() > Duration::from_secs(60) {
            break now;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        after < before + grown / 4,
        "RSS {before} KiB before, {open} KiB with {SPIKE} connections, {after} KiB after they closed"
    );
}
