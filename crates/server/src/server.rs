//! Binding, starting, stopping and observing a server.

use std::fmt;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Instant;

use crossbeam_utils::CachePadded;
use falconet_pool::Pool;
use falconet_registry::Registry;
use mio::net::TcpListener;
use mio::{Interest, Poll, Waker};
use socket2::{Domain, Protocol, Socket, Type};

use crate::conn::{Connection, Timeouts};
use crate::handler::Handler;
use crate::link::Notify;
use crate::options::{Accept, Options, OptionsError};
use crate::session::Context;
use crate::stopped::{Exits, Stopped};
use crate::worker::{LISTENER, WAKER, Worker};

/// Pending connections a listening socket queues (the kernel caps it at
/// `net.core.somaxconn`).
const BACKLOG: i32 = 4096;

/// What every worker shares.
pub(crate) struct Shared<H: Handler> {
    pub(crate) registry: Registry<Connection<H>>,
    pub(crate) handler: H,
    pub(crate) pool: Pool,
    pub(crate) options: Options,
    pub(crate) timeouts: Timeouts,
    pub(crate) shutdown: AtomicBool,
    /// Requests answered, per worker (each adds to its own line).
    pub(crate) requests: Box<[CachePadded<AtomicU64>]>,
    epoch: Instant,
}

impl<H: Handler> Shared<H> {
    /// Milliseconds since the server was bound: the timer's clock.
    pub(crate) fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// Why a server could not be bound or started.
#[derive(Debug)]
#[non_exhaustive]
pub enum ServerError {
    /// The options are inconsistent.
    Options(OptionsError),
    /// A socket, poll or thread could not be created.
    Io(io::Error),
    /// A worker thread panicked (a bug in falconet, not in a handler:
    /// handler panics close only their connection).
    WorkerPanicked,
    /// [`Running::join`] or [`Server::run`] was called in the `block_on` of
    /// the current-thread tokio runtime the handler's work runs on: blocking
    /// it would stall that work, so the call returns at once (`join` starts
    /// the shutdown; `run` starts nothing). Await [`Running::stopped`] there
    /// instead.
    WouldBlockRuntime,
    /// [`Running::join`] called, or [`Running::stopped`] awaited (by a
    /// `block_on`), on one of the server's own worker threads: inside a
    /// handler, such as an admin endpoint that stops the server. A worker
    /// cannot wait for itself to stop, so the call returns at once: the
    /// shutdown starts (`join` also lets the workers go without waiting
    /// for them) and nothing waits. Stop the server there with
    /// [`Handle::shutdown`], and wait where it was started.
    OnWorker,
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Options(error) => write!(f, "invalid options: {error}"),
            Self::Io(error) => write!(f, "{error}"),
            Self::WorkerPanicked => f.write_str("a worker thread panicked"),
            Self::WouldBlockRuntime => f.write_str(
                "Running::join would block the current-thread tokio runtime the handler's work \
                 runs on (so that work could never finish); the server is shutting down \
                 instead: to serve until stopped, await Running::stopped()",
            ),
            Self::OnWorker => f.write_str(
                "a server worker cannot wait for the server to stop (Running::join or \
                 Running::stopped inside a handler); call Handle::shutdown there and wait where \
                 the server was started",
            ),
        }
    }
}

impl std::error::Error for ServerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Options(error) => Some(error),
            Self::Io(error) => Some(error),
            Self::WorkerPanicked | Self::WouldBlockRuntime | Self::OnWorker => None,
        }
    }
}

impl From<io::Error> for ServerError {
    fn from(error: io::Error) -> Self {
        Self::Io(error)
    }
}

impl From<OptionsError> for ServerError {
    fn from(error: OptionsError) -> Self {
        Self::Options(error)
    }
}

/// A bound server, not yet running.
///
/// ```no_run
/// use falconet_server::{Options, Server, hello::Hello};
///
/// let server = Server::bind("127.0.0.1:8080", Options::new(), Hello)?;
/// println!("listening on {}", server.local_addr());
/// server.run()?; // until `Handle::shutdown` (the binary wires SIGINT/SIGTERM to it)
/// # Ok::<(), falconet_server::ServerError>(())
/// ```
pub struct Server<H: Handler> {
    shared: Arc<Shared<H>>,
    workers: Vec<Worker<H>>,
    /// Each worker's queue, whose `mio::Waker` wakes its poll.
    notifies: Arc<[Arc<Notify>]>,
    local_addr: SocketAddr,
}

impl<H: Handler> Server<H> {
    /// Checks `options` ([`Options::validate`]), then binds the listening
    /// socket(s) at `addr` (port 0 picks a free port).
    ///
    /// # Errors
    /// [`ServerError::Options`] for a setting out of range (nothing is
    /// bound), [`ServerError::Io`] when the address cannot be bound.
    pub fn bind(
        addr: impl ToSocketAddrs,
        options: Options,
        handler: H,
    ) -> Result<Self, ServerError> {
        options.validate()?;
        let addr = addr
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no address to bind"))?;
        let contexts =
            (0..options.workers).map(|_| Context::new(&options)).collect::<Result<Vec<_>, _>>()?;
        let registry_options =
            falconet_registry::Options::new().max_connections(options.max_connections);
        let registry = Registry::with_options(registry_options)
            .map_err(|_| OptionsError::MaxConnections(options.max_connections))?;
        // Checked by `validate`; should the pool's own rules ever differ,
        // its refusal is still an options error.
        let pool = Pool::builder()
            .max_bytes(options.max_pool_bytes)
            .thread_cache(thread_cache(options.max_pool_bytes, options.workers))
            .build()
            .map_err(|_| OptionsError::PoolBytes(options.max_pool_bytes))?;

        let first = listen(addr, options.accept == Accept::ReusePort)?;
        let local_addr = first.local_addr()?;
        let mut listeners = vec![first];
        for _ in 1..options.workers {
            listeners.push(match options.accept {
                Accept::ReusePort => listen(local_addr, true)?,
                Accept::Shared => listeners[0].try_clone()?,
            });
        }

        let mut workers = Vec::with_capacity(options.workers);
        let timeouts = Timeouts::from_options(&options);
        let shared = Arc::new(Shared {
            registry,
            handler,
            pool,
            timeouts,
            shutdown: AtomicBool::new(false),
            requests: (0..options.workers).map(|_| CachePadded::new(AtomicU64::new(0))).collect(),
            epoch: Instant::now(),
            options,
        });
        // Every worker's poll and its waker first: each worker can wake the
        // others (the last one out of a drain does).
        let mut polls = Vec::with_capacity(shared.options.workers);
        for _ in 0..shared.options.workers {
            let poll = Poll::new()?;
            let notify = Arc::new(Notify::new(Some(Waker::new(poll.registry(), WAKER)?)));
            polls.push((poll, notify));
        }
        let notifies: Arc<[Arc<Notify>]> =
            polls.iter().map(|(_, notify)| Arc::clone(notify)).collect();
        let each = listeners.into_iter().zip(contexts).zip(polls);
        for (index, ((listener, cx), (poll, notify))) in each.enumerate() {
            let mut listener = TcpListener::from_std(listener);
            poll.registry().register(&mut listener, LISTENER, Interest::READABLE)?;
            workers.push(Worker {
                index,
                poll,
                listener: Some(listener),
                shared: shared.clone(),
                cx,
                notify,
                peers: Arc::clone(&notifies),
                woken: Vec::new(),
                drive: Vec::new(),
                again: Vec::new(),
                again_now: Vec::new(),
            });
        }
        Ok(Self { shared, workers, notifies, local_addr })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// A handle to stop the server and read its counters.
    pub fn handle(&self) -> Handle<H> {
        Handle { shared: self.shared.clone(), notifies: self.notifies.clone() }
    }

    /// Starts the worker threads.
    ///
    /// # Errors
    /// [`ServerError::Io`] when a thread cannot be spawned (the ones already
    /// started are stopped).
    pub fn start(self) -> Result<Running<H>, ServerError> {
        let handle = self.handle();
        let exits = Arc::new(Exits::default());
        let mut threads = Vec::with_capacity(self.workers.len());
        for worker in self.workers {
            let name = format!("falconet-worker-{}", worker.index);
            let exit = exits.enter();
            let run = move || {
                let _exit = exit;
                worker.run();
            };
            match std::thread::Builder::new().name(name).spawn(run) {
                Ok(thread) => threads.push(thread),
                Err(error) => {
                    handle.shutdown();
                    for thread in threads {
                        let _ = thread.join();
                    }
                    return Err(error.into());
                }
            }
        }
        Ok(Running { handle, threads, exits })
    }

    /// Starts the workers and waits until they stop (after
    /// [`Handle::shutdown`]).
    ///
    /// # Errors
    /// As [`start`](Self::start) and [`Running::join`];
    /// [`ServerError::WouldBlockRuntime`] before anything starts where `join`
    /// would refuse.
    pub fn run(self) -> Result<(), ServerError> {
        if self.shared.handler.blocking_here_stalls() {
            // Refused before anything starts (see `Running::join`).
            return Err(ServerError::WouldBlockRuntime);
        }
        self.start()?.join()
    }
}

impl<H: Handler> fmt::Debug for Server<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server").field("local_addr", &self.local_addr).finish_non_exhaustive()
    }
}

/// A listening socket, non-blocking, with `SO_REUSEPORT` when asked.
fn listen(addr: SocketAddr, reuse_port: bool) -> io::Result<std::net::TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    if reuse_port {
        socket.set_reuse_port(true)?;
    }
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    Ok(socket.into())
}

/// A running server's worker threads.
///
/// Dropping it shuts the server down as [`Handle::shutdown`] does and waits
/// for the workers (a graceful shutdown: at most about the shutdown
/// timeout), so a server cannot outlive its `Running` by accident, say
/// through an early `?`. It starts the shutdown without waiting where the
/// wait could never end: dropped on one of its own workers (by a handler),
/// in the `block_on` of the current-thread tokio runtime the handler's
/// work runs on (see [`Handler::blocking_here_stalls`]; the in-flight
/// requests then finish while that runtime keeps running), or in any tokio
/// task (a blocked task stalls its runtime's thread, and the handler's
/// work may need it; tokio cannot tell a `spawn_blocking` thread from a
/// task, so a drop there does not wait either: await
/// [`stopped`](Self::stopped) or call [`join`](Self::join) to wait).
/// [`join`](Self::join) waits without asking for a shutdown, and reports a
/// worker's panic, which the drop cannot; [`stopped`](Self::stopped) is
/// the same wait for async code.
#[derive(Debug)]
#[must_use = "dropping `Running` shuts the server down; keep it, and `join` it"]
pub struct Running<H: Handler> {
    handle: Handle<H>,
    /// Emptied by `join`.
    threads: Vec<JoinHandle<()>>,
    /// The workers still running (see `stopped.rs`).
    pub(crate) exits: Arc<Exits>,
}

impl<H: Handler> Drop for Running<H> {
    fn drop(&mut self) {
        if self.threads.is_empty() {
            return;
        }
        self.handle.shutdown();
        // Dropped by a handler on a worker (an admin endpoint that stops
        // the server): that worker cannot wait for itself, nor for the
        // others, which may wait for the connection it holds. Dropped on
        // the only thread of the runtime the handler's work runs on: the
        // work in flight could not finish while the drop blocks it.
        // Dropped in a tokio task (a signal-handling task that owns the
        // server): blocking it would stall that runtime's thread, and if
        // the handler's work runs there, the work in flight too. The
        // shutdown goes on without the wait.
        let me = std::thread::current().id();
        if self.threads.iter().any(|thread| thread.thread().id() == me)
            || self.would_block_runtime()
            || in_tokio_task()
        {
            return;
        }
        for thread in self.threads.drain(..) {
            // A worker's panic has nowhere to go from a drop.
            let _ = thread.join();
        }
    }
}

impl<H: Handler> Running<H> {
    /// A handle to stop the server and read its counters.
    pub fn handle(&self) -> &Handle<H> {
        &self.handle
    }

    /// Waits until every worker stopped, blocking the calling thread.
    /// From async code, await [`stopped`](Self::stopped) instead.
    ///
    /// # Errors
    /// [`ServerError::WorkerPanicked`]; [`ServerError::OnWorker`] at once,
    /// on one of the server's worker threads (inside a handler: a worker
    /// cannot wait for itself); [`ServerError::WouldBlockRuntime`]
    /// at once, when called in the `block_on` of the current-thread tokio
    /// runtime the handler's work runs on (a
    /// `tower::TowerHandler` given that runtime's handle in
    /// `#[tokio::main(flavor = "current_thread")]` or `#[tokio::test]`; see
    /// [`Handler::blocking_here_stalls`]): the wait would stall the work it
    /// waits for, so the server's shutdown starts instead, and nothing
    /// waits. Called in a task that runtime runs, `join` blocks the runtime
    /// just the same, and tokio's API cannot tell that thread from a
    /// `spawn_blocking` one, where blocking is fine: await
    /// [`stopped`](Self::stopped) in async code. Once every worker has
    /// stopped (after `stopped().await`), `join` waits for nothing and
    /// returns at once, wherever it is called.
    pub fn join(mut self) -> Result<(), ServerError> {
        if self.threads.iter().all(std::thread::JoinHandle::is_finished) {
            // Nothing to wait for (and no worker left to be on).
            return self.join_threads();
        }
        if crate::worker::on_worker() {
            // A worker waiting for the workers waits for itself: as the
            // drop there, the shutdown starts and nothing waits.
            self.handle.shutdown();
            self.threads.clear();
            return Err(ServerError::OnWorker);
        }
        if self.would_block_runtime() {
            // As the drop there: the shutdown starts, nothing waits.
            self.handle.shutdown();
            self.threads.clear();
            return Err(ServerError::WouldBlockRuntime);
        }
        self.join_threads()
    }

    /// Waits, without blocking the thread, until every worker stopped (after
    /// [`Handle::shutdown`]): the [`join`](Self::join) of async code, and
    /// the one that works on a current-thread tokio runtime, whose tasks
    /// run only while its thread awaits.
    ///
    /// ```no_run
    /// # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
    /// use falconet_server::{Options, Server, hello::Hello};
    ///
    /// let mut running = Server::bind("127.0.0.1:0", Options::new(), Hello)?.start()?;
    /// let handle = running.handle().clone();
    /// // ... later, from anywhere: handle.shutdown();
    /// running.stopped().await?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// Its output is [`ServerError::WorkerPanicked`] when a worker panicked.
    ///
    /// # What has ended when it returns
    /// The workers, their connections and every request they read: each
    /// was answered, or cut off at the shutdown deadline (its
    /// [`Responder`](crate::Responder) closed, so
    /// [`Responder::closed`](crate::Responder::closed) is ready). Work your
    /// handlers started on a runtime of yours is that runtime's: a
    /// `tower::TowerHandler` request's task drops its future
    /// (and whatever it holds: a permit, a database handle) the next time
    /// the runtime polls it, which can be just after this returns. If you
    /// need those released before going on, wait for them yourself (a
    /// `tokio::sync::Semaphore` whose permits your handlers hold, say).
    /// The same holds for [`join`](Self::join).
    pub fn stopped(&mut self) -> Stopped<'_, H> {
        Stopped { running: self }
    }

    /// Joins every worker thread (each has stopped, or will).
    pub(crate) fn join_threads(&mut self) -> Result<(), ServerError> {
        let mut result = Ok(());
        for thread in std::mem::take(&mut self.threads) {
            if thread.join().is_err() {
                result = Err(ServerError::WorkerPanicked);
            }
        }
        result
    }

    /// Whether blocking this thread until the workers stop would stall the
    /// handler's own work (see [`Handler::blocking_here_stalls`]).
    fn would_block_runtime(&self) -> bool {
        self.handle.shared.handler.blocking_here_stalls()
    }
}

/// Stops a server and reads its counters; cheap to clone and `Send`.
pub struct Handle<H: Handler> {
    shared: Arc<Shared<H>>,
    /// Each worker's queue, whose `mio::Waker` wakes its poll.
    notifies: Arc<[Arc<Notify>]>,
}

impl<H: Handler> Clone for Handle<H> {
    fn clone(&self) -> Self {
        Self { shared: self.shared.clone(), notifies: self.notifies.clone() }
    }
}

impl<H: Handler> fmt::Debug for Handle<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle").field("stats", &self.stats()).finish()
    }
}

impl<H: Handler> Handle<H> {
    /// Starts a graceful shutdown: stop accepting, answer the requests
    /// already received, close idle connections, and close the rest at the
    /// shutdown deadline. Returns at once; [`Running::join`] waits.
    pub fn shutdown(&self) {
        // Release pairs with the workers' Acquire load of the flag.
        self.shared.shutdown.store(true, Ordering::Release);
        for notify in self.notifies.iter() {
            let _ = notify.wake_poll();
        }
    }

    /// Whether [`shutdown`](Self::shutdown) was called.
    pub fn is_shutting_down(&self) -> bool {
        self.shared.shutdown.load(Ordering::Acquire)
    }

    /// The server's counters now.
    pub fn stats(&self) -> Stats {
        Stats {
            // Relaxed: counters, read for display.
            requests: self.shared.requests.iter().map(|r| r.load(Ordering::Relaxed)).sum(),
            connections: self.shared.registry.len(),
            pool: self.shared.pool.stats(),
        }
    }
}

/// A server's counters, from [`Handle::stats`].
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct Stats {
    /// Requests answered since the server started (counted once per event
    /// batch, so a few may be missing from a snapshot).
    pub requests: u64,
    /// Connections open now.
    pub connections: usize,
    /// The block pool that holds unparsed input.
    pub pool: falconet_pool::Stats,
}

/// Whether this thread runs a tokio task (or a `spawn_blocking` closure,
/// which tokio's API cannot tell apart from one).
fn in_tokio_task() -> bool {
    #[cfg(feature = "tokio")]
    {
        tokio::task::try_id().is_some()
    }
    #[cfg(not(feature = "tokio"))]
    {
        false
    }
}

/// Free blocks each thread keeps for itself (the pool's fast path): a slab's
/// worth, unless the workers' caches together would hold more than a
/// quarter of the pool (a small `max_pool_bytes` with many workers), out of
/// every other worker's reach while their own worker is quiet.
/// Application threads give theirs back when done with a body or a response
/// (`Link::give_back_blocks`).
fn thread_cache(max_pool_bytes: usize, workers: usize) -> usize {
    let blocks = max_pool_bytes / falconet_pool::DEFAULT_BLOCK_SIZE;
    (blocks / 4 / workers.max(1)).min(falconet_pool::DEFAULT_BLOCKS_PER_SLAB)
}
