//! `falconet`: the TechEmpower endpoints on falconet-server.
//!
//! ```text
//! cargo run --release -p falconet-server -- --addr 127.0.0.1:8080 --workers 2 --stats
//! ```
//!
//! SIGINT or SIGTERM starts a graceful shutdown; a second one exits at once.
//! An option the server cannot run with is reported on stderr, with exit
//! status 2 (a usage error, as for an unparsable flag).

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use falconet_server::h2::connection::Config as H2Config;
use falconet_server::{
    Accept, H2c, Handle, MinDataRate, Options, Server, ServerError, hello::Demo,
};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// `eprintln!` with the binary's name in front, that cannot panic: a
/// message stderr cannot take (a closed pipe, a full disk) is dropped, and
/// the exit code still says what happened.
macro_rules! complain {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stderr(), "falconet: {}", format_args!($($arg)*));
    }};
}

/// falconet: a thin HTTP/1.1 and HTTP/2 (h2c) server serving GET
/// /plaintext, GET /json, GET /delay?ms=N (answered N ms later, off the
/// event loop), POST /echo (the body streamed back, read on an application
/// thread) and GET /bytes?n=N (N bytes).
#[derive(Parser, Debug)]
#[command(name = "falconet", version, after_help = AFTER_HELP)]
struct Args {
    /// Address to listen on: IP:port or host:port (port 0 picks a free
    /// port).
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: String,
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
    /// How long an idle keep-alive connection stays open: a whole number
    /// with a unit (500ms, 10s, 2m, 1h; seconds without one).
    #[arg(long, default_value_t = Timeout::seconds(falconet_server::DEFAULT_KEEP_ALIVE_TIMEOUT), value_parser = parse_duration)]
    keep_alive_timeout: Timeout,
    /// How long a client may take to send a request's head; units as
    /// above.
    #[arg(long, default_value_t = Timeout::seconds(falconet_server::DEFAULT_HEADER_TIMEOUT), value_parser = parse_duration)]
    header_timeout: Timeout,
    /// How long a connection with work in flight (a body arriving, a
    /// response going out) may move no byte before it is closed; units as
    /// above.
    #[arg(long, default_value_t = Timeout::seconds(falconet_server::DEFAULT_IO_TIMEOUT), value_parser = parse_duration)]
    io_timeout: Timeout,
    /// How long the application may keep a request waiting, the client
    /// owing nothing, before it is answered 503 (or cut off, if its
    /// response had started); units as above; 0 lets it take any time.
    #[arg(long, default_value_t = Timeout::seconds(falconet_server::DEFAULT_RESPONSE_TIMEOUT), value_parser = parse_duration)]
    response_timeout: Timeout,
    /// How long a graceful shutdown waits for in-flight requests (/delay
    /// and /echo included) before closing what is left; units as above.
    #[arg(long, default_value_t = Timeout::seconds(falconet_server::DEFAULT_SHUTDOWN_TIMEOUT), value_parser = parse_duration)]
    shutdown_timeout: Timeout,
    /// The least rate, bytes a second, at which a client must take the
    /// responses waiting on it (a full socket, or HTTP/2 credit withheld),
    /// per waiting response; 0 turns it off.
    #[arg(long, default_value_t = falconet_server::DEFAULT_MIN_RESPONSE_RATE.bytes_per_second())]
    min_response_rate: u32,
    /// How far behind --min-response-rate a client may fall, as time;
    /// units as above.
    #[arg(long, default_value_t = Timeout::seconds(falconet_server::DEFAULT_MIN_RESPONSE_RATE.grace()), value_parser = parse_duration)]
    min_response_grace: Timeout,
    /// The least rate, bytes a second, at which a client must send the
    /// request bodies it owes, per body; 0 turns it off.
    #[arg(long, default_value_t = falconet_server::DEFAULT_MIN_REQUEST_BODY_RATE.bytes_per_second())]
    min_request_body_rate: u32,
    /// How far behind --min-request-body-rate a client may fall, as time;
    /// units as above.
    #[arg(long, default_value_t = Timeout::seconds(falconet_server::DEFAULT_MIN_REQUEST_BODY_RATE.grace()), value_parser = parse_duration)]
    min_request_body_grace: Timeout,
    /// Largest request body in bytes (POST /echo streams it back).
    #[arg(long, default_value_t = ECHO_MAX_BODY)]
    max_body: u64,
    /// Threads of the tokio runtime that answers /delay and /echo (1 to
    /// 256).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=MAX_APP_THREADS))]
    app_threads: u16,
    /// How a connection may become HTTP/2 (h2c): by the preface as its
    /// first bytes or by `Upgrade: h2c` (both), by the preface alone
    /// (behind a reverse proxy that passes Upgrade on), or not at all
    /// (off: HTTP/1.1 only).
    #[arg(long, value_enum, default_value_t = H2cMode::Both)]
    h2c: H2cMode,
    /// HTTP/2: streams a connection may have open at once (at least 1;
    /// past it, REFUSED_STREAM).
    #[arg(long, default_value_t = H2Config::default().max_concurrent_streams)]
    h2_max_concurrent_streams: u32,
    /// HTTP/2: each stream's receive window, bytes (1 to 2147483647).
    #[arg(long, default_value_t = H2Config::default().initial_window_size)]
    h2_initial_window_size: u32,
    /// HTTP/2: each connection's receive window, bytes (65535 to
    /// 2147483647).
    #[arg(long, default_value_t = H2Config::default().connection_window_size)]
    h2_connection_window_size: u32,
    /// HTTP/2: resets a client may cause at once (rapid reset,
    /// MadeYouReset) before its connection is closed; each stream answered
    /// in full earns one back, and time earns them back (below).
    #[arg(long, default_value_t = H2Config::default().reset_budget)]
    h2_reset_budget: u32,
    /// HTTP/2: resets the budget earns back each second (0: only answered
    /// streams earn them back).
    #[arg(long, default_value_t = H2Config::default().reset_refill_per_second)]
    h2_reset_refill_per_second: u32,
    /// HTTP/2: frames that do no work (empty DATA or CONTINUATION,
    /// PRIORITY, unknown types) beyond those that do, before the
    /// connection is closed.
    #[arg(long, default_value_t = H2Config::default().max_empty_frames)]
    h2_max_empty_frames: u32,
    /// HTTP/2: acknowledgements (PING, SETTINGS) and resets waiting
    /// unread before the connection is closed (at least 1; floods).
    #[arg(long, default_value_t = H2Config::default().max_queued_control)]
    h2_max_queued_control: usize,
}

/// What `--help` adds after the options.
const AFTER_HELP: &str = "\
Environment:
  RUST_LOG   log filter (tracing's EnvFilter syntax, e.g. warn or falconet_server=debug); default info
  NO_COLOR   set to anything: logs without colours (they have none when stderr is not a terminal)

Logs go to stderr; stdout carries the listening address and --stats.
Ctrl-C (SIGINT) or SIGTERM starts a graceful shutdown: no new connections,
idle ones closed, requests in flight answered for up to --shutdown-timeout.
A second Ctrl-C or SIGTERM exits at once (exit code 130 or 143).
Lines stdout or stderr cannot take (a closed pipe, a full disk) are dropped.";

/// A duration as typed (`500ms`, `10s`, `5`): its value and the unit it
/// was typed in, so that errors speak that unit.
#[derive(Clone, Copy, Debug)]
struct Timeout {
    value: Duration,
    unit: Unit,
}

impl Timeout {
    /// A default, shown in seconds.
    fn seconds(value: Duration) -> Self {
        Self { value, unit: Unit::Seconds }
    }
}

impl std::fmt::Display for Timeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.unit.show(self.value))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unit {
    Millis,
    Seconds,
    Minutes,
    Hours,
}

impl Unit {
    const ALL: [(&'static str, Unit); 4] =
        [("ms", Unit::Millis), ("s", Unit::Seconds), ("m", Unit::Minutes), ("h", Unit::Hours)];

    fn millis(self) -> u64 {
        match self {
            Unit::Millis => 1,
            Unit::Seconds => 1_000,
            Unit::Minutes => 60_000,
            Unit::Hours => 3_600_000,
        }
    }

    fn suffix(self) -> &'static str {
        Self::ALL.iter().find(|(_, unit)| *unit == self).map_or("", |(suffix, _)| suffix)
    }

    /// `duration` in this unit when it is a whole number of them, else in
    /// the largest unit that is (`24h`, and `20ms` rather than `0.0000055h`).
    fn show(self, duration: Duration) -> String {
        let millis = duration.as_millis();
        let unit = std::iter::once(self)
            .chain(Self::ALL.iter().rev().map(|(_, unit)| *unit))
            .find(|unit| millis.is_multiple_of(u128::from(unit.millis())))
            .unwrap_or(Unit::Millis);
        format!("{}{}", millis / u128::from(unit.millis()), unit.suffix())
    }
}

/// Parses `500ms`, `10s`, `2m`, `1h`, or a bare number of seconds.
fn parse_duration(text: &str) -> Result<Timeout, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let unit = match suffix {
        "" => Unit::Seconds,
        suffix => Unit::ALL
            .iter()
            .find(|(name, _)| *name == suffix)
            .map(|(_, unit)| *unit)
            .ok_or_else(|| {
                format!("unknown unit {suffix:?} in {text:?}: use ms, s, m or h (e.g. 500ms, 10s)")
            })?,
    };
    let number: u64 =
        number.parse().map_err(|_| format!("{text:?} is not a duration (e.g. 500ms, 10s)"))?;
    let millis =
        number.checked_mul(unit.millis()).ok_or_else(|| format!("{text:?} is too long"))?;
    Ok(Timeout { value: Duration::from_millis(millis), unit })
}

/// Checks a timeout option against the server's range, in its own unit.
fn check_timeout(flag: &str, timeout: Timeout) -> Result<Duration, String> {
    let range = falconet_server::MIN_TIMEOUT..=falconet_server::MAX_TIMEOUT;
    if range.contains(&timeout.value) {
        return Ok(timeout.value);
    }
    let unit = timeout.unit;
    Err(format!(
        "{flag} {} is out of range: it must be {} to {}",
        unit.show(timeout.value),
        unit.show(*range.start()),
        unit.show(*range.end()),
    ))
}

/// The binary's default body limit: /echo is meant for large bodies, and
/// it streams them (memory stays at the pipes' thresholds).
const ECHO_MAX_BODY: u64 = 1 << 40;

/// The most threads `--app-threads` starts (as many as `--workers`): the
/// runtime starts them all at once, and tokio panics when the system
/// refuses one.
const MAX_APP_THREADS: i64 = falconet_server::MAX_WORKERS as i64;

/// Exit status for options the server cannot run with (clap's status for
/// arguments it cannot parse).
const USAGE_ERROR: u8 = 2;

/// How long a clean stop waits for the signal thread's "graceful
/// shutdown" line before its own "stopped".
const SHUTDOWN_LOG_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

#[derive(Clone, Copy, Debug, ValueEnum)]
enum AcceptMode {
    /// A listener per worker (SO_REUSEPORT).
    ReusePort,
    /// One listener polled by every worker.
    Shared,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum H2cMode {
    /// Prior knowledge and `Upgrade: h2c`.
    Both,
    /// Prior knowledge only; `Upgrade: h2c` is ignored.
    PriorKnowledge,
    /// HTTP/1.1 only.
    Off,
}

fn main() -> ExitCode {
    one_heap_arena();
    let colour = std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty());
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // A log line stderr cannot take (a closed pipe, a full disk) is
        // dropped: the subscriber's own report of it is an `eprintln!`,
        // which panics there, and took the signal thread (so the
        // shutdown) or a worker down with it.
        .log_internal_errors(false)
        .with_ansi(colour)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let args = Args::parse();
    let timeouts = (|| {
        Ok::<_, String>([
            check_timeout("--keep-alive-timeout", args.keep_alive_timeout)?,
            check_timeout("--header-timeout", args.header_timeout)?,
            check_timeout("--io-timeout", args.io_timeout)?,
            check_timeout("--shutdown-timeout", args.shutdown_timeout)?,
            check_timeout("--min-response-grace", args.min_response_grace)?,
            check_timeout("--min-request-body-grace", args.min_request_body_grace)?,
        ])
    })();
    let response_timeout = match args.response_timeout.value {
        Duration::ZERO => Ok(None),
        _ => check_timeout("--response-timeout", args.response_timeout).map(Some),
    };
    let response_timeout = match response_timeout {
        Ok(timeout) => timeout,
        Err(error) => {
            complain!("{error}");
            return ExitCode::from(USAGE_ERROR);
        }
    };
    let [
        keep_alive_timeout,
        header_timeout,
        io_timeout,
        shutdown_timeout,
        min_response_grace,
        min_request_body_grace,
    ] = match timeouts {
        Ok(timeouts) => timeouts,
        Err(error) => {
            complain!("{error}");
            return ExitCode::from(USAGE_ERROR);
        }
    };
    let mut options = Options::new()
        .accept(match args.accept {
            AcceptMode::ReusePort => Accept::ReusePort,
            AcceptMode::Shared => Accept::Shared,
        })
        .max_connections(args.max_connections)
        .keep_alive_timeout(keep_alive_timeout)
        .header_timeout(header_timeout)
        .io_timeout(io_timeout)
        .response_timeout(response_timeout)
        .shutdown_timeout(shutdown_timeout)
        .min_response_rate(
            (args.min_response_rate > 0)
                .then(|| MinDataRate::new(args.min_response_rate, min_response_grace)),
        )
        .min_request_body_rate(
            (args.min_request_body_rate > 0)
                .then(|| MinDataRate::new(args.min_request_body_rate, min_request_body_grace)),
        )
        .max_body(args.max_body)
        .h2c(match args.h2c {
            H2cMode::Both => H2c::Both,
            H2cMode::PriorKnowledge => H2c::PriorKnowledge,
            H2cMode::Off => H2c::Off,
        })
        .http2(H2Config {
            max_concurrent_streams: args.h2_max_concurrent_streams,
            initial_window_size: args.h2_initial_window_size,
            connection_window_size: args.h2_connection_window_size,
            reset_budget: args.h2_reset_budget,
            reset_refill_per_second: args.h2_reset_refill_per_second,
            max_empty_frames: args.h2_max_empty_frames,
            max_queued_control: args.h2_max_queued_control,
            ..H2Config::default()
        });
    if let Some(workers) = args.workers {
        options = options.workers(workers);
    }
    let workers = options.worker_count();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(usize::from(args.app_threads))
        .thread_name("falconet-app")
        .enable_time()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            complain!("cannot start the application runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let server =
        match Server::bind(args.addr.as_str(), options, Demo::new(runtime.handle().clone())) {
            Ok(server) => server,
            Err(error @ ServerError::Options(_)) => {
                complain!("{error}");
                return ExitCode::from(USAGE_ERROR);
            }
            Err(error) => {
                complain!("cannot listen on {}: {error}", args.addr);
                return ExitCode::FAILURE;
            }
        };
    let plural = if workers == 1 { "" } else { "s" };
    // Not `println!`, which panics on a stdout nobody reads (`> /dev/full`,
    // a closed pipe): the address is for whoever reads it.
    let h2c = args.h2c.to_possible_value().map(|mode| mode.get_name().to_owned());
    let _ = writeln!(
        std::io::stdout(),
        "falconet listening on http://{} ({workers} worker{plural}, h2c {})",
        server.local_addr(),
        h2c.unwrap_or_default()
    );
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
    // Says the shutdown's log line is written: with nothing open, the
    // workers stop at once, and `main` returning first lost it.
    let (logged, shutdown_logged) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut received = signals.forever();
        if let Some(signal) = received.next() {
            // The shutdown first: nothing after it (a log line) may keep
            // it from starting.
            signal_handle.shutdown();
            tracing::info!(signal, "graceful shutdown");
            let _ = logged.send(());
        }
        if let Some(signal) = received.next() {
            tracing::warn!(signal, "second signal: exiting now");
            // As a shell reports a process the signal ended: 130 for
            // SIGINT, 143 for SIGTERM.
            std::process::exit(128 + signal);
        }
    });
    if args.stats {
        let stats_handle = handle.clone();
        std::thread::spawn(move || print_stats(&stats_handle));
    }
    let heap_handle = handle.clone();
    std::thread::spawn(move || give_back_heap(&heap_handle));
    match running.join() {
        Ok(()) => {
            // Only a signal stops the binary's workers cleanly; its line
            // comes first (bounded: a blocked stderr must not hold the exit).
            let _ = shutdown_logged.recv_timeout(SHUTDOWN_LOG_WAIT);
            tracing::info!(requests = handle.stats().requests, "stopped");
            ExitCode::SUCCESS
        }
        Err(error) => {
            tracing::error!(%error, "stopped");
            ExitCode::FAILURE
        }
    }
}

/// The fewest connections a spike must have shed before the heap is
/// trimmed (with at least half of its peak gone).
const SHED_CONNECTIONS: usize = 256;

/// The least pool memory that must have gone back (with at least half of
/// its peak) before the heap is trimmed.
const SHED_POOL_BYTES: usize = 2 << 20;

/// After a connection spike, hands back the heap it freed. Each
/// connection's session state comes from the system allocator, and so do
/// the pool's slabs, which `maintain` frees a few at a time once they sit
/// idle; glibc keeps what is freed in its arenas: 8,000 idle HTTP/2
/// connections left 177 MiB of RSS behind once they closed, and
/// `malloc_trim` brought it to 10 MiB. Checked once a second: when half of
/// the last peak of connections (and [`SHED_CONNECTIONS`] or more) or of
/// the pool's memory (and [`SHED_POOL_BYTES`] or more) is gone, trim once.
fn give_back_heap(handle: &Handle<Demo>) {
    let shed = |peak: usize, now: usize, least: usize| peak - now >= least && now <= peak / 2;
    let (mut connections, mut pool) = (0, 0);
    while !handle.is_shutting_down() {
        std::thread::sleep(Duration::from_secs(1));
        let stats = handle.stats();
        let (now_connections, now_pool) = (stats.connections, stats.pool.bytes());
        connections = connections.max(now_connections);
        pool = pool.max(now_pool);
        if shed(connections, now_connections, SHED_CONNECTIONS)
            || shed(pool, now_pool, SHED_POOL_BYTES)
        {
            trim_heap();
            (connections, pool) = (now_connections, now_pool);
        }
    }
}

/// Gives every thread glibc's one main arena, before any thread starts.
/// `malloc_trim` returns the free pages inside every arena, but the free
/// top of a thread's own arena only when a large `free` happens to land
/// on it: after 3,000 HTTP/2 connections closed, 174 KiB of the heap was
/// in use, 126 MB free, and 29 MiB of that stayed resident in the
/// worker's arena for good in about half the runs (with the two cores
/// busy, `binary::memory_goes_back_after_a_connection_spike`). The main
/// arena's top is trimmed too. Its cost is a shared lock on `malloc`,
/// which the workers' steady state never calls (the counting-allocator
/// tests): one arena against glibc's default served as many 1 MiB HTTP/2
/// echoes and `/plaintext` requests per server CPU-second (within the
/// noise, three rounds each). An arena limit set in the environment
/// (`MALLOC_ARENA_MAX`, or `glibc.malloc.arena_max` in `GLIBC_TUNABLES`)
/// is left as it is.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn one_heap_arena() {
    let tuned = std::env::var_os("GLIBC_TUNABLES")
        .is_some_and(|tunables| tunables.to_string_lossy().contains("glibc.malloc.arena_max="));
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() && !tuned {
        // SAFETY: `mallopt` takes no pointer; called before any other
        // thread exists, so no arena is being chosen meanwhile.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 1);
        }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn one_heap_arena() {}

/// Returns the allocator's free pages to the system (glibc only; other
/// allocators give memory back by themselves or not at all).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim_heap() {
    // SAFETY: `malloc_trim` takes no pointer and touches only glibc's own
    // free lists, under each arena's lock: callable from any thread at
    // any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim_heap() {}

/// Once a second: requests/s, open connections, pool use.
fn print_stats(handle: &Handle<Demo>) {
    let mut last = handle.stats();
    let mut at = Instant::now();
    while !handle.is_shutting_down() {
        std::thread::sleep(Duration::from_secs(1));
        let now = handle.stats();
        let elapsed = at.elapsed().as_secs_f64();
        at = Instant::now();
        let printed = writeln!(
            std::io::stdout(),
            "requests/s {:>10.0}  connections {:>7}  pool {:>6} KiB in {} slabs ({} blocks leased)",
            (now.requests - last.requests) as f64 / elapsed,
            now.connections,
            now.pool.bytes() / 1024,
            now.pool.slabs,
            now.pool.leased,
        );
        if printed.is_err() {
            // Nobody reads them any more (`--stats | head`): stop.
            return;
        }
        last = now;
    }
}
