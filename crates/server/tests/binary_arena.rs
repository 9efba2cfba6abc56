//! The falconet binary asks glibc for one malloc arena (so `malloc_trim`
//! can give a connection spike's heap back, see `one_heap_arena` in
//! main.rs): after traffic on every kind of thread (workers, the tokio
//! runtime's /echo and /delay, the heap and signal threads), the process
//! has no secondary arena; an arena limit in the environment
//! (`MALLOC_ARENA_MAX`, or `GLIBC_TUNABLES`' `glibc.malloc.arena_max`)
//! still decides.
//!
//! A glibc secondary arena is a 64 MiB reservation aligned to 64 MiB (its
//! used part rw-p, the rest ---p): counted in /proc/PID/maps.
#![cfg(all(target_os = "linux", target_env = "gnu"))]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

const HEAP_MAX: u64 = 64 << 20;

fn secondary_arenas(pid: u32) -> usize {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    let regions: Vec<(u64, u64, String, bool)> = maps
        .lines()
        .map(|line| {
            let mut parts = line.split_whitespace();
            let range = parts.next().unwrap();
            let perms = parts.next().unwrap().to_string();
            let anonymous = parts.nth(3).is_none();
            let (a, b) = range.split_once('-').unwrap();
            (
                u64::from_str_radix(a, 16).unwrap(),
                u64::from_str_radix(b, 16).unwrap(),
                perms,
                anonymous,
            )
        })
        .collect();
    let mut count = 0;
    for (i, (start, end, perms, anonymous)) in regions.iter().enumerate() {
        if !anonymous || start % HEAP_MAX != 0 || perms != "rw-p" {
            continue;
        }
        let mut size = end - start;
        if let Some((next_start, next_end, next_perms, _)) = regions.get(i + 1)
            && next_start == end
            && next_perms == "---p"
        {
            size += next_end - next_start;
        }
        if size == HEAP_MAX {
            count += 1;
        }
    }
    count
}

/// Starts the binary with `env`, sends traffic to every thread kind,
/// returns the number of secondary arenas.
fn arenas_after_traffic(env: &[(&str, &str)]) -> usize {
    let mut command = Command::new(env!("CARGO_BIN_EXE_falconet"));
    command
        .args(["--workers", "2", "--app-threads", "2", "--addr", "127.0.0.1:0"])
        .env_remove("MALLOC_ARENA_MAX")
        .env_remove("GLIBC_TUNABLES")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addr = line.split("http://").nth(1).unwrap().split_whitespace().next().unwrap().to_string();
    // HTTP/2 connections (workers allocate session state), in parallel
    // with uploads and delays on the runtime's threads.
    let h2: Vec<_> = (0..4)
        .map(|_| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let mut open = Vec::new();
                for _ in 0..300 {
                    let mut s = TcpStream::connect(&addr).unwrap();
                    s.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0").unwrap();
                    open.push(s);
                }
                for s in &mut open {
                    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                    let mut buf = [0u8; 64];
                    assert!(s.read(&mut buf).unwrap() > 0);
                }
            })
        })
        .collect();
    let app: Vec<_> = (0..4)
        .map(|i| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                for _ in 0..20 {
                    let mut s = TcpStream::connect(&addr).unwrap();
                    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                    let body = vec![b'x'; 200_000 + i * 1000];
                    let request = format!(
                        "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    s.write_all(request.as_bytes()).unwrap();
                    s.write_all(&body).unwrap();
                    let mut reply = Vec::new();
                    let _ = s.read_to_end(&mut reply);
                    assert!(reply.starts_with(b"HTTP/1.1 200"), "{:?}", &reply[..reply.len().min(80)]);
                    let mut s = TcpStream::connect(&addr).unwrap();
                    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                    s.write_all(b"GET /delay HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n").unwrap();
                    let mut reply = Vec::new();
                    let _ = s.read_to_end(&mut reply);
                }
            })
        })
        .collect();
    for t in h2.into_iter().chain(app) {
        t.join().unwrap();
    }
    std::thread::sleep(Duration::from_millis(1500)); // the heap thread ran
    let arenas = secondary_arenas(child.id());
    child.kill().unwrap();
    child.wait().unwrap();
    arenas
}

#[test]
fn the_binary_runs_on_one_arena_and_the_environment_still_decides() {
    let default = arenas_after_traffic(&[]);
    let eight = arenas_after_traffic(&[("MALLOC_ARENA_MAX", "8")]);
    let tunable = arenas_after_traffic(&[("GLIBC_TUNABLES", "glibc.malloc.arena_max=8")]);
    eprintln!(
        "secondary arenas: default {default}, MALLOC_ARENA_MAX=8 {eight}, GLIBC_TUNABLES arena_max=8 {tunable}"
    );
    assert!(eight > 0, "the detector sees arenas when glibc may make them");
    assert!(tunable > 0, "GLIBC_TUNABLES' arena_max was overridden");
    assert_eq!(default, 0, "the one-arena setting held for every thread");
}
