//! `falconet`: the TechEmpower endpoints on falconet-server.
//!
//! ```text
//! cargo run --release -p falconet-server -- --addr 127.0.0.1:8080 --workers 2 --stats
//! ```
//!
//! SIGINT or SIGTERM starts a graceful shutdown; a second one exits at once.
//! An option the server cannot run with is reported on stderr, with exit
//! status 2 (a usage error, as for an unparsable flag).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use falconet_server::{Accept, Handle, Options, Server, ServerError, hello::Demo};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// falconet: a thin HTTP/1.1 server serving GET /plaintext, GET /json,
/// GET /delay?ms=N (answered N ms later, off the event loop) and POST /echo
/// (the body streamed back, read on an application thread).
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// Event-loop threads (default: one per CPU).
    #[arg(long)]
    workers: Option<usize>,
    /// Print requests/s, open connections and pool use once a second.
    #[arg(long)]
    stats: bool,
    /// How connections reach the workers.
    #[arg(long, value_enum, default_value_t = AcceptMode::Shared)]
    accept: AcceptMode,
    /// Open connections at most (past it: 503 and close).
    #[arg(long, default_value_t = falconet_server::DEFAULT_MAX_CONNECTIONS)]
    max_connections: usize,
    /// Seconds an idle keep-alive connection stays open.
    #[arg(long, default_value_t = falconet_server::DEFAULT_KEEP_ALIVE_TIMEOUT.as_secs())]
    keep_alive_timeout: u64,
    /// Seconds a graceful shutdown waits before closing what is left
    /// (in-flight /delay and /echo requests included).
    #[arg(long, default_value_t = falconet_server::DEFAULT_SHUTDOWN_TIMEOUT.as_secs())]
    shutdown_timeout: u64,
    /// Largest request body in bytes (POST /echo streams it back).
    #[arg(long, default_value_t = ECHO_MAX_BODY)]
    max_body: u64,
    /// Threads of the tokio runtime that answers /delay and /echo.
    #[arg(long, default_value_t = 1)]
    app_threads: usize,
}

/// The binary's default body limit: /echo is meant for large bodies, and
/// it streams them (memory stays at the pipes' thresholds).
const ECHO_MAX_BODY: u64 = 1 << 40;

/// Exit status for options the server cannot run with (clap's status for
/// arguments it cannot parse).
const USAGE_ERROR: u8 = 2;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum AcceptMode {
    /// A listener per worker (SO_REUSEPORT).
    ReusePort,
    /// One listener polled by every worker.
    Shared,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let args = Args::parse();
    let mut options = Options::new()
        .accept(match args.accept {
            AcceptMode::ReusePort => Accept::ReusePort,
            AcceptMode::Shared => Accept::Shared,
        })
        .max_connections(args.max_connections)
        .keep_alive_timeout(Duration::from_secs(args.keep_alive_timeout))
        .shutdown_timeout(Duration::from_secs(args.shutdown_timeout))
        .max_body(args.max_body);
    if let Some(workers) = args.workers {
        options = options.workers(workers);
    }
    let workers = options.worker_count();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.app_threads.max(1))
        .thread_name("falconet-app")
        .enable_time()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("falconet: cannot start the application runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let server = match Server::bind(args.addr, options, Demo::new(runtime.handle().clone())) {
        Ok(server) => server,
        Err(error @ ServerError::Options(_)) => {
            eprintln!("falconet: {error}");
            return ExitCode::from(USAGE_ERROR);
        }
        Err(error) => {
            eprintln!("falconet: cannot listen on {}: {error}", args.addr);
            return ExitCode::FAILURE;
        }
    };
    println!("falconet listening on http://{} ({workers} workers)", server.local_addr());
    let handle = server.handle();
    let mut signals = match Signals::new([SIGINT, SIGTERM]) {
        Ok(signals) => signals,
        Err(error) => {
            tracing::error!(%error, "cannot install signal handlers");
            return ExitCode::FAILURE;
        }
    };
    let running = match server.start() {
        Ok(running) => running,
        Err(error) => {
            tracing::error!(%error, "cannot start");
            return ExitCode::FAILURE;
        }
    };
    let signal_handle = handle.clone();
    std::thread::spawn(move || {
        let mut received = signals.forever();
        if let Some(signal) = received.next() {
            tracing::info!(signal, "graceful shutdown");
            signal_handle.shutdown();
        }
        if received.next().is_some() {
            tracing::warn!("second signal: exiting now");
            std::process::exit(130);
        }
    });
    if args.stats {
        let stats_handle = handle.clone();
        std::thread::spawn(move || print_stats(&stats_handle));
    }
    match running.join() {
        Ok(()) => {
            tracing::info!(requests = handle.stats().requests, "stopped");
            ExitCode::SUCCESS
        }
        Err(error) => {
            tracing::error!(%error, "stopped");
            ExitCode::FAILURE
        }
    }
}

/// Once a second: requests/s, open connections, pool use.
fn print_stats(handle: &Handle<Demo>) {
    let mut last = handle.stats();
    let mut at = Instant::now();
    while !handle.is_shutting_down() {
        std::thread::sleep(Duration::from_secs(1));
        let now = handle.stats();
        let elapsed = at.elapsed().as_secs_f64();
        at = Instant::now();
        println!(
            "requests/s {:>10.0}  connections {:>7}  pool {:>6} KiB in {} slabs ({} blocks leased)",
            (now.requests - last.requests) as f64 / elapsed,
            now.connections,
            now.pool.bytes() / 1024,
            now.pool.slabs,
            now.pool.leased,
        );
        last = now;
    }
}
