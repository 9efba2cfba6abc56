//! loom models of the windows' races, each named for its race:
//! `RUSTFLAGS="--cfg falconet_flow_loom" cargo test -p falconet-flow --test loom --release`
//! (`scripts/loom.sh` runs them).
#![cfg(falconet_flow_loom)]

use std::future::Future;
use std::sync::Arc as StdArc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Wake, Waker};

use falconet_flow::{
    Aborted, Advance, FlowError, InputState, InputWindow, MAX_WINDOW, OutputState, OutputWindow,
    Release, StreamInput, StreamOutput,
};
use loom::sync::Arc;
use loom::thread;

fn model(f: impl Fn() + Sync + Send + 'static) {
    model_with(loom::model::Builder::new(), f);
}

fn model_with(mut builder: loom::model::Builder, f: impl Fn() + Sync + Send + 'static) {
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(3);
    }
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    N.store(0, std::sync::atomic::Ordering::Relaxed);
    builder.check(move || {
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        f()
    });
    eprintln!("ITERATIONS {}", N.load(std::sync::atomic::Ordering::Relaxed));
}

/// Advance, release and abort race on one receive window: the abort
/// returns exactly the bytes that were counted and not released before it,
/// and every update stays above the threshold.
#[test]
fn advance_vs_release_vs_abort() {
    advance_vs_release_vs_abort_from(100);
}

/// The same race on the largest window (2^31-1): no field has room to
/// spare.
#[test]
fn advance_vs_release_vs_abort_on_the_largest_window() {
    advance_vs_release_vs_abort_from(MAX_WINDOW);
}

fn advance_vs_release_vs_abort_from(initial: u32) {
    model(move || {
        let window = Arc::new(InputWindow::with_threshold(initial, 4).unwrap());
        window.try_advance(10).unwrap(); // something to release
        let advancer = {
            let window = window.clone();
            thread::spawn(move || match window.try_advance(10).unwrap() {
                Advance::Accepted => 10,
                Advance::Aborted => 0,
            })
        };
        let releaser = {
            let window = window.clone();
            thread::spawn(move || match window.release(5).unwrap() {
                Release::Update(n) => {
                    assert!(n > 4);
                    5
                }
                Release::Pending => 5,
                Release::Aborted => 0,
            })
        };
        let unread = window.abort();
        let advanced = 10 + advancer.join().unwrap();
        let released = releaser.join().unwrap();
        assert_eq!(unread, advanced - released, "abort returned exactly the unread bytes");
        assert_eq!(window.abort(), 0);
    });
}

/// Two releases cross the threshold at once: exactly one announces, all of the credit, and
/// the other finds it taken (or they cross one after the other and each
/// announces its own). No credit is lost or announced twice.
#[test]
fn releases_cross_the_threshold_together() {
    model(|| {
        let window = Arc::new(InputWindow::with_threshold(100, 10).unwrap());
        window.try_advance(60).unwrap();
        let releaser = {
            let window = window.clone();
            thread::spawn(move || window.release(20).unwrap())
        };
        let mine = window.release(20).unwrap();
        let theirs = releaser.join().unwrap();
        let announced: u32 = [mine, theirs]
            .iter()
            .map(|release| match release {
                Release::Update(n) => *n,
                Release::Pending => 0,
                Release::Aborted => panic!("nobody aborts"),
            })
            .sum();
        let state = window.state();
        assert_eq!(announced + state.pending, 40, "every released byte is owed or announced once");
        assert!(state.pending <= 10, "no credit above the threshold is left unannounced");
        assert_eq!(state.window, 80);
    });
}

/// A frame that overdraws the window is refused while a frame that fits
/// and a release race it: the refusal changes nothing, so the fitting
/// frame always fits (when frames were applied blind and undone, it could
/// be refused while the overdraw was in the word) and the window ends
/// exact.
#[test]
fn an_overdraw_changes_nothing_under_a_fitting_frame_and_a_release() {
    model(|| {
        let window = Arc::new(InputWindow::with_threshold(100, 90).unwrap());
        window.try_advance(50).unwrap();
        let overdraw = {
            let window = window.clone();
            thread::spawn(move || window.try_advance(80))
        };
        let releaser = {
            let window = window.clone();
            thread::spawn(move || window.release(10).unwrap())
        };
        let fitted = window.try_advance(40);
        assert!(
            matches!(
                overdraw.join().unwrap(),
                Err(FlowError::WindowExceeded { requested: 80, .. })
            ),
            "80 never fits: at most 60 is ever free"
        );
        assert_eq!(releaser.join().unwrap(), Release::Pending);
        assert_eq!(fitted, Ok(Advance::Accepted), "50 or 60 free");
        assert_eq!(
            window.state(),
            InputState { window: 20, pending: 10, aborted: false, updates_disabled: false }
        );
    });
}

/// A release after END_STREAM returns its credit to the window but owes
/// nothing: racing `disable_updates`, the release lands before it and
/// announces in the same CAS, or lands after it and owes nothing. The
/// window gets the credit every time, nothing is left pending, and the
/// flags stay as set.
#[test]
fn release_vs_disable_updates() {
    model(|| {
        let window = Arc::new(InputWindow::with_threshold(100, 10).unwrap());
        window.try_advance(30).unwrap();
        let disabler = {
            let window = window.clone();
            thread::spawn(move || window.disable_updates())
        };
        let release = window.release(20).unwrap();
        disabler.join().unwrap();
        let state = window.state();
        assert_eq!(state.window, 90);
        assert!(state.updates_disabled);
        match release {
            Release::Update(n) => assert_eq!((n, state.pending), (20, 0)),
            Release::Pending => assert_eq!(state.pending, 0, "{state:?}"),
            Release::Aborted => panic!("nobody aborts"),
        }
    });
}

/// A reservation waits on an empty send window while an update and an
/// abort arrive: it ends with the credit or with `Aborted`, never hangs,
/// and credit is never granted twice.
#[test]
fn reserve_waiting_vs_increase_vs_abort() {
    model(|| {
        let window = Arc::new(OutputWindow::new(0).unwrap());
        let increaser = {
            let window = window.clone();
            thread::spawn(move || window.increase(5).unwrap())
        };
        let aborter = {
            let window = window.clone();
            thread::spawn(move || window.abort())
        };
        let granted = loom::future::block_on(window.reserve(8));
        increaser.join().unwrap();
        aborter.join().unwrap();
        match granted {
            Ok(n) => {
                assert_eq!(n, 5);
                assert_eq!(window.state().window, 0);
            }
            Err(Aborted) => assert!(window.state().aborted),
        }
    });
}

/// Two reservations wait on one window (two streams' writers on the
/// connection's) while updates arrive: both must be woken and served, and
/// no byte granted twice. A single waker slot loses one of them here.
#[test]
fn two_reservations_wait_vs_increase() {
    model(|| {
        let window = Arc::new(OutputWindow::new(0).unwrap());
        let writer = |window: Arc<OutputWindow>| {
            thread::spawn(move || {
                let mut granted = 0;
                while granted < 2 {
                    granted += loom::future::block_on(window.reserve(2 - granted)).unwrap();
                }
                granted
            })
        };
        let a = writer(window.clone());
        let b = writer(window.clone());
        window.increase(2).unwrap();
        window.increase(2).unwrap();
        assert_eq!(a.join().unwrap() + b.join().unwrap(), 4);
        assert_eq!(window.state(), OutputState { window: 0, held: 0, aborted: false });
    });
}

/// A reservation waits and an update alone must wake it (the lost-wakeup
/// race between "window empty, sleep" and "credit arrives").
#[test]
fn reserve_waiting_vs_increase() {
    model(|| {
        let window = Arc::new(OutputWindow::new(0).unwrap());
        let increaser = {
            let window = window.clone();
            thread::spawn(move || {
                window.increase(3).unwrap();
                window.increase(4).unwrap();
            })
        };
        let first = loom::future::block_on(window.reserve(10)).unwrap();
        let second =
            if first < 7 { loom::future::block_on(window.reserve(10)).unwrap() } else { 0 };
        increaser.join().unwrap();
        assert_eq!(first + second, 7);
    });
}

/// A stream's writer waits in `grant` for connection credit while the
/// connection gets some and the stream is reset: it ends with the credit
/// (4) or `Aborted`, never hangs (a reset of a window with credit is a
/// transition that wakes), and the connection's credit is all there once
/// the grant, not sent, is dropped.
#[test]
fn grant_waiting_vs_connection_credit_vs_stream_reset() {
    model(|| {
        let connection = StdArc::new(OutputWindow::new(0).unwrap());
        let output = Arc::new(StreamOutput::new(connection.clone(), 10).unwrap());
        let peer = {
            let connection = connection.clone();
            thread::spawn(move || connection.increase(4).unwrap())
        };
        let reset = {
            let output = output.clone();
            thread::spawn(move || output.abort())
        };
        match loom::future::block_on(output.grant(8)) {
            Ok(grant) => assert_eq!(grant.len(), 4),
            Err(Aborted) => assert!(output.stream().state().aborted),
        }
        peer.join().unwrap();
        reset.join().unwrap();
        assert_eq!((connection.available(), connection.held()), (4, 0));
    });
}

/// The writer waits in `grant` for one window's credit, which never
/// comes, while the other window, which has credit, is aborted (a reset
/// stream, a closed connection): the abort alone must wake it, with
/// `Aborted` (an abort of a window with credit is a transition too).
#[test]
fn grant_waiting_vs_an_abort_of_the_window_with_credit() {
    for stream_reset in [true, false] {
        model(move || {
            let (connection, stream) = if stream_reset { (0, 10) } else { (10, 0) };
            let connection = StdArc::new(OutputWindow::new(connection).unwrap());
            let output = Arc::new(StreamOutput::new(connection.clone(), stream).unwrap());
            let abort = {
                let (output, connection) = (output.clone(), connection.clone());
                thread::spawn(
                    move || {
                        if stream_reset { output.abort() } else { connection.abort() }
                    },
                )
            };
            assert_eq!(loom::future::block_on(output.grant(5)).map(|g| g.len()), Err(Aborted));
            abort.join().unwrap();
            assert_eq!((output.stream().held(), connection.held()), (0, 0));
        });
    }
}

/// The writer waits in `grant` for its stream's credit while the stream
/// gets some and the connection closes: credit (3) or `Aborted`, never a
/// hang (the connection's abort wakes a wait that watched it with credit).
#[test]
fn grant_waiting_vs_stream_credit_vs_connection_close() {
    model(|| {
        let connection = StdArc::new(OutputWindow::new(10).unwrap());
        let output = Arc::new(StreamOutput::new(connection.clone(), 0).unwrap());
        let peer = {
            let output = output.clone();
            thread::spawn(move || output.stream().increase(3).unwrap())
        };
        let close = {
            let connection = connection.clone();
            thread::spawn(move || connection.abort())
        };
        match loom::future::block_on(output.grant(5)) {
            Ok(grant) => assert_eq!(grant.len(), 3),
            Err(Aborted) => assert!(connection.state().aborted),
        }
        peer.join().unwrap();
        close.join().unwrap();
        assert_eq!((output.stream().held(), connection.held()), (0, 0));
    });
}

/// Two streams' writers wait in `grant` on one connection while its
/// credit arrives in two updates: both are woken and served, each byte
/// granted once.
#[test]
fn two_stream_grants_wait_vs_connection_credit() {
    model(|| {
        let connection = StdArc::new(OutputWindow::new(0).unwrap());
        let writer = |connection: StdArc<OutputWindow>| {
            thread::spawn(move || {
                let output = StreamOutput::new(connection, 10).unwrap();
                let mut sent = 0;
                while sent < 2 {
                    let mut grant = loom::future::block_on(output.grant(2 - sent)).unwrap();
                    let n = grant.len();
                    grant.sent(n).unwrap();
                    sent += n;
                }
                sent
            })
        };
        let a = writer(connection.clone());
        let b = writer(connection.clone());
        connection.increase(2).unwrap();
        connection.increase(2).unwrap();
        assert_eq!(a.join().unwrap() + b.join().unwrap(), 4);
        assert_eq!(connection.state(), OutputState { window: 0, held: 0, aborted: false });
    });
}

// From an outside review of `StreamOutput::grant`.

/// The writer's grant races another stream's take of the connection's only
/// byte (which it then gives back): a failed grant gives the stream's credit
/// back (a transition on the stream, waking the writer itself). The writer
/// must end with the byte, neither spinning nor hanging, and credit is
/// conserved.
#[test]
fn grant_vs_another_streams_take_and_return() {
    model(|| {
        let connection = StdArc::new(OutputWindow::new(1).unwrap());
        let output = Arc::new(StreamOutput::new(connection.clone(), 1).unwrap());
        let other = {
            let connection = connection.clone();
            thread::spawn(move || {
                let other = StreamOutput::new(connection, 1).unwrap();
                let grant = other.try_grant(1).unwrap();
                let n = grant.len();
                drop(grant);
                n
            })
        };
        let grant = loom::future::block_on(output.grant(1)).unwrap();
        assert_eq!(grant.len(), 1);
        drop(grant);
        other.join().unwrap();
        assert_eq!(connection.state(), OutputState { window: 1, held: 0, aborted: false });
        assert_eq!(output.stream().state(), OutputState { window: 1, held: 0, aborted: false });
    });
}

/// A `Reserve` on the connection and a `Granting` wait on it, two updates
/// of one byte each: both served, each byte once.
#[test]
fn reserve_and_grant_vs_two_updates() {
    model(|| {
        let connection = StdArc::new(OutputWindow::new(0).unwrap());
        let reserver = {
            let connection = connection.clone();
            thread::spawn(move || loom::future::block_on(connection.reserve(1)).unwrap())
        };
        let granter = {
            let connection = connection.clone();
            thread::spawn(move || {
                let output = StreamOutput::new(connection, 10).unwrap();
                let mut grant = loom::future::block_on(output.grant(1)).unwrap();
                let n = grant.len();
                grant.sent(n).unwrap();
                n
            })
        };
        connection.increase(1).unwrap();
        connection.increase(1).unwrap();
        assert_eq!(reserver.join().unwrap() + granter.join().unwrap(), 2);
        assert_eq!(connection.state(), OutputState { window: 0, held: 0, aborted: false });
    });
}

/// A waker that counts its wakes (its `Arc`'s count shows clones left).
struct Counter(AtomicUsize);

impl Wake for Counter {
    fn wake(self: StdArc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A pending wait dropped (a timeout) while the connection gets credit
/// and the stream is reset: the waker leaves both windows whatever the
/// order (no clone left behind), nothing is held.
#[test]
fn dropped_grant_vs_credit_vs_reset() {
    model(|| {
        let connection = StdArc::new(OutputWindow::new(0).unwrap());
        let output = Arc::new(StreamOutput::new(connection.clone(), 10).unwrap());
        let counter = StdArc::new(Counter(AtomicUsize::new(0)));
        let base = StdArc::strong_count(&counter);
        let waker = Waker::from(counter.clone());
        let mut wait = Box::pin(output.grant(5));
        assert!(wait.as_mut().poll(&mut Context::from_waker(&waker)).is_pending());
        let peer = {
            let connection = connection.clone();
            thread::spawn(move || connection.increase(4).unwrap())
        };
        let reset = {
            let output = output.clone();
            thread::spawn(move || output.abort())
        };
        drop(wait);
        peer.join().unwrap();
        reset.join().unwrap();
        drop(waker);
        assert_eq!(StdArc::strong_count(&counter), base);
        assert_eq!((connection.held(), output.stream().held()), (0, 0));
    });
}

/// A stream's frame races the stream's abort: whichever lands first, the
/// connection gets every byte of the frame back exactly once.
#[test]
fn stream_and_connection_under_abort() {
    model(|| {
        let connection = StdArc::new(InputWindow::with_threshold(1000, 500).unwrap());
        let stream = Arc::new(StreamInput::new(connection.clone(), 100).unwrap());
        let network = {
            let stream = stream.clone();
            thread::spawn(move || stream.try_advance(30).unwrap().0)
        };
        stream.abort().unwrap();
        network.join().unwrap();
        // The stream is aborted: nothing of it may stay charged to the
        // connection, and nothing may be returned twice.
        assert_eq!(connection.available(), 1000);
    });
}

/// A SETTINGS change that leaves the window negative must not drop the
/// waiter: the update after it still wakes the reservation.
#[test]
fn reserve_waiting_vs_shrink_then_increase() {
    model(|| {
        let window = Arc::new(OutputWindow::new(0).unwrap());
        let peer = {
            let window = window.clone();
            thread::spawn(move || {
                window.apply_initial_window_delta(-5).unwrap();
                window.increase(10).unwrap();
            })
        };
        let granted = loom::future::block_on(window.reserve(8)).unwrap();
        peer.join().unwrap();
        assert_eq!(granted, 5);
    });
}

/// Credit is held, an update takes the window the peer counts to 2^31-1,
/// the credit is given back: in every interleaving the update is accepted,
/// one more byte is refused, and the give-back never overflows.
#[test]
fn give_back_vs_increase_at_the_maximum() {
    model(|| {
        let window = Arc::new(OutputWindow::new(MAX_WINDOW - 10).unwrap());
        let holder = {
            let window = window.clone();
            thread::spawn(move || {
                let held = window.try_hold(u32::MAX).unwrap();
                // Before or after the update: all of it or all but 10.
                assert!(held == MAX_WINDOW - 10 || held == MAX_WINDOW, "{held}");
                window.give_back(held).unwrap();
            })
        };
        window.increase(10).unwrap();
        assert_eq!(
            window.increase(1),
            Err(FlowError::WindowOverflow { would_be: i64::from(MAX_WINDOW) + 1 })
        );
        holder.join().unwrap();
        assert_eq!(
            window.state(),
            OutputState { window: MAX_WINDOW as i32, held: 0, aborted: false }
        );
    });
}

/// Bytes sent out of a hold leave the peer's window: an update that fits
/// only once they are sent is accepted exactly when the `sent` came first,
/// and the window ends consistent either way.
#[test]
fn sent_vs_increase_near_the_maximum() {
    model(|| {
        let window = Arc::new(OutputWindow::new(MAX_WINDOW - 10).unwrap());
        assert_eq!(window.try_hold(20), Ok(20));
        let sender = {
            let window = window.clone();
            thread::spawn(move || {
                window.sent(15).unwrap();
                window.give_back(5).unwrap();
            })
        };
        let accepted = window.increase(20).is_ok();
        sender.join().unwrap();
        let expected = i64::from(MAX_WINDOW) - 25 + if accepted { 20 } else { 0 };
        let state = window.state();
        assert_eq!((state.flow_window(), state.held), (expected, 0));
        // Refused only while the 15 bytes still counted as unsent.
        assert!(accepted || window.increase(20).is_ok());
    });
}

/// A reservation waits on a window whose credit is all held; the holder
/// gives it back: the give-back must wake it (a transition, like an
/// update), and the credit is granted once.
#[test]
fn give_back_wakes_a_waiting_reserve() {
    model(|| {
        let window = Arc::new(OutputWindow::new(6).unwrap());
        assert_eq!(window.try_hold(6), Ok(6));
        let holder = {
            let window = window.clone();
            thread::spawn(move || {
                window.give_back(2).unwrap();
                window.sent(1).unwrap();
                window.give_back(3).unwrap();
            })
        };
        let mut granted = 0;
        while granted < 5 {
            granted += loom::future::block_on(window.reserve(8)).unwrap();
        }
        holder.join().unwrap();
        assert_eq!(granted, 5);
        assert_eq!(window.state(), OutputState { window: 0, held: 0, aborted: false });
    });
}

/// One task gives up its wait (a timeout dropped its `reserve` future)
/// while a second task waits and an update arrives: the dropped future's
/// waker leaves the list (and, the last one out, clears the flag that
/// transitions look at), which must not cost the second task its wake.
#[test]
fn cancelled_reserve_vs_waiting_reserve_vs_increase() {
    model(|| {
        let window = Arc::new(OutputWindow::new(0).unwrap());
        let quitter = {
            let window = window.clone();
            thread::spawn(move || {
                let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
                let mut reserve = Box::pin(window.reserve(4));
                // Pending, or the credit if the update came first.
                match std::future::Future::poll(reserve.as_mut(), &mut cx) {
                    std::task::Poll::Ready(granted) => granted.unwrap(),
                    std::task::Poll::Pending => 0,
                }
                // Dropped here, waiting or not.
            })
        };
        let updater = {
            let window = window.clone();
            thread::spawn(move || {
                window.increase(4).unwrap();
                // Credit the quitter took before it quit is sent again.
                let taken = quitter.join().unwrap();
                if taken > 0 {
                    window.increase(taken).unwrap();
                }
            })
        };
        let mut granted = 0;
        while granted < 4 {
            granted += loom::future::block_on(window.reserve(4)).unwrap();
        }
        updater.join().unwrap();
        assert_eq!(granted, 4);
        assert_eq!(window.state(), OutputState { window: 0, held: 0, aborted: false });
    });
}

// A sequential model of the stream composition's documented guarantee:
// a grant is `min(max, stream free at t1, connection free at t2)` for two
// instants t1 < t2 of the call. Each thread's operations are split into
// those steps; a run is correct if some interleaving of the steps (each
// thread's in its order) gives every result the run saw and the same final
// windows. That is what "never more than the credit, no credit lost, no
// spurious zero" mean for a two-step composition (module docs of
// `stream_output.rs`).

/// One window in the sequential model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Window {
    free: i64,
    held: i64,
}

impl Window {
    fn new(initial: u32) -> Self {
        Self { free: initial.into(), held: 0 }
    }
    fn take(&mut self, max: u32, hold: bool) -> u32 {
        let granted = if self.free <= 0 { 0 } else { i64::from(max).min(self.free) };
        self.free -= granted;
        if hold {
            self.held += granted;
        }
        granted as u32
    }
    /// Settles `held` bytes: `sent` of them sent, the rest given back.
    fn settle(&mut self, held: u32, sent: u32) {
        self.held -= i64::from(held);
        self.free += i64::from(held - sent);
    }
    fn shift(&mut self, by: i64) -> u32 {
        if self.free + self.held + by > i64::from(MAX_WINDOW) {
            return 1;
        }
        self.free += by;
        0
    }
    fn matches(&self, state: OutputState) -> bool {
        (i64::from(state.window), i64::from(state.held)) == (self.free, self.held)
    }
}

/// Which window a peer update is for.
#[derive(Clone, Copy, Debug)]
enum Target {
    Connection,
    Stream(usize),
}

/// One step of a thread in the sequential model.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// t1: take up to `max` from the stream (held); no visible result.
    StreamTake { stream: usize, max: u32 },
    /// t2: take what t1 got from the connection (held, or sent if
    /// `reserve`), return the rest to the stream; the result is the grant.
    ConnectionTake { stream: usize, reserve: bool },
    /// Settle the grant: `sent` of it sent (capped), the rest given back.
    Settle { stream: usize, sent: u32 },
    /// A WINDOW_UPDATE; the result is 1 when refused.
    Increase(Target, u32),
    /// A SETTINGS change; the result is 1 when refused.
    Delta(Target, i32),
}

#[derive(Clone, Debug)]
struct Model {
    connection: Window,
    streams: Vec<Window>,
}

impl Model {
    fn target(&mut self, target: Target) -> &mut Window {
        match target {
            Target::Connection => &mut self.connection,
            Target::Stream(i) => &mut self.streams[i],
        }
    }
}

/// Whether some interleaving of `threads` (each a list of steps) from
/// `model` produces exactly `seen` (each thread's visible results) and
/// ends in `end`.
fn explained(
    threads: &[Vec<Step>],
    seen: &[Vec<u32>],
    model: Model,
    end: &dyn Fn(&Model) -> bool,
) -> bool {
    /// Per thread: the next step, the next result, the stream take (t1)
    /// and the grant in flight.
    #[derive(Clone, Copy, Default)]
    struct Cursor {
        step: usize,
        result: usize,
        taken: u32,
        grant: u32,
    }
    fn go(
        threads: &[Vec<Step>],
        seen: &[Vec<u32>],
        model: &Model,
        cursors: &[Cursor],
        end: &dyn Fn(&Model) -> bool,
    ) -> bool {
        if cursors.iter().zip(threads).all(|(c, t)| c.step == t.len()) {
            return end(model);
        }
        for (i, steps) in threads.iter().enumerate() {
            let mut cursor = cursors[i];
            let Some(&step) = steps.get(cursor.step) else { continue };
            let mut model = model.clone();
            let result = match step {
                Step::StreamTake { stream, max } => {
                    cursor.taken = model.streams[stream].take(max, true);
                    None
                }
                Step::ConnectionTake { stream, reserve } => {
                    let granted = model.connection.take(cursor.taken, !reserve);
                    let window = &mut model.streams[stream];
                    if reserve {
                        // The excess back, the grant sent: nothing held.
                        window.settle(cursor.taken, granted);
                        cursor.grant = 0;
                    } else {
                        // The excess back, the grant still held.
                        window.settle(cursor.taken - granted, 0);
                        cursor.grant = granted;
                    }
                    Some(granted)
                }
                Step::Settle { stream, sent } => {
                    let sent = sent.min(cursor.grant);
                    model.streams[stream].settle(cursor.grant, sent);
                    model.connection.settle(cursor.grant, sent);
                    cursor.grant = 0;
                    None
                }
                Step::Increase(target, n) => Some(model.target(target).shift(n.into())),
                Step::Delta(target, d) => Some(model.target(target).shift(d.into())),
            };
            if let Some(result) = result {
                if seen[i].get(cursor.result) != Some(&result) {
                    continue;
                }
                cursor.result += 1;
            }
            cursor.step += 1;
            let mut next = cursors.to_vec();
            next[i] = cursor;
            if go(threads, seen, &model, &next, end) {
                return true;
            }
        }
        false
    }
    go(threads, seen, &model, &vec![Cursor::default(); threads.len()], end)
}

/// Two streams share a connection window; a writer on each takes credit
/// (one holds and sends it all, one holds, sends 1 byte and drops the
/// rest) while the peer's reader applies a connection WINDOW_UPDATE, a
/// SETTINGS shrink of the first stream and a WINDOW_UPDATE of the second.
/// Every run is explained by the two-step model: no grant above the
/// credit, no credit lost, no zero while both windows had credit at the
/// instants taken.
#[test]
fn stream_holds_race_connection_update_and_settings() {
    stream_composition(false);
}

/// The same race with the first writer reserving (credit counted as sent
/// at once) instead of holding.
#[test]
fn stream_reserves_race_connection_update_and_settings() {
    stream_composition(true);
}

fn stream_composition(reserve: bool) {
    const CONNECTION: u32 = 3;
    const STREAMS: [u32; 2] = [3, 2];
    const UPDATE: u32 = 2;
    const SHRINK: i32 = -2;
    model(move || {
        let connection = StdArc::new(OutputWindow::new(CONNECTION).unwrap());
        let a = Arc::new(StreamOutput::new(connection.clone(), STREAMS[0]).unwrap());
        let b = Arc::new(StreamOutput::new(connection.clone(), STREAMS[1]).unwrap());
        let writer_a = {
            let a = a.clone();
            thread::spawn(move || {
                let granted = if reserve {
                    a.try_reserve(3).unwrap()
                } else {
                    let granted = a.try_hold(3).unwrap();
                    a.sent(granted).unwrap();
                    granted
                };
                vec![granted]
            })
        };
        let writer_b = {
            let b = b.clone();
            thread::spawn(move || {
                let mut grant = b.try_grant(2).unwrap();
                let granted = grant.len();
                if granted > 0 {
                    grant.sent(1).unwrap();
                }
                drop(grant);
                vec![granted]
            })
        };
        let peer = vec![
            u32::from(connection.increase(UPDATE).is_err()),
            u32::from(a.stream().apply_initial_window_delta(SHRINK).is_err()),
            u32::from(b.stream().increase(1).is_err()),
        ];
        let seen = vec![writer_a.join().unwrap(), writer_b.join().unwrap(), peer];
        let threads = vec![
            vec![
                Step::StreamTake { stream: 0, max: 3 },
                Step::ConnectionTake { stream: 0, reserve },
                Step::Settle { stream: 0, sent: u32::MAX },
            ],
            vec![
                Step::StreamTake { stream: 1, max: 2 },
                Step::ConnectionTake { stream: 1, reserve: false },
                Step::Settle { stream: 1, sent: 1 },
            ],
            vec![
                Step::Increase(Target::Connection, UPDATE),
                Step::Delta(Target::Stream(0), SHRINK),
                Step::Increase(Target::Stream(1), 1),
            ],
        ];
        let start = Model {
            connection: Window::new(CONNECTION),
            streams: STREAMS.iter().map(|&s| Window::new(s)).collect(),
        };
        let states = [connection.state(), a.stream().state(), b.stream().state()];
        let end = |model: &Model| {
            model.connection.matches(states[0])
                && model.streams[0].matches(states[1])
                && model.streams[1].matches(states[2])
        };
        assert!(
            explained(&threads, &seen, start, &end),
            "not explained by any interleaving: results {seen:?}, windows {states:?}"
        );
        // Nothing is left held, and the connection gave no more than it had.
        assert!(states.iter().all(|state| state.held == 0), "{states:?}");
        let granted = seen[0][0] + seen[1][0];
        assert!(granted <= CONNECTION + UPDATE);
        // No spurious zero: the first stream keeps a byte after the shrink
        // and the second can take only 2 of the connection's 3, so the
        // first is always granted; the second gets nothing only when the
        // first took all 3 before the update.
        assert!(seen[0][0] > 0, "{seen:?}");
        assert!(seen[1][0] > 0 || seen[0][0] == 3, "{seen:?}");
    });
}

/// A writer holds credit while its stream is aborted (or the connection
/// is): whatever the order, its grant's drop returns every unsent byte to
/// both windows exactly once, and an abort before the hold refuses it with
/// nothing taken.
#[test]
fn stream_abort_vs_grant_returns_connection_credit() {
    for connection_aborts in [false, true] {
        model(move || {
            let connection = StdArc::new(OutputWindow::new(10).unwrap());
            let stream = Arc::new(StreamOutput::new(connection.clone(), 10).unwrap());
            let writer = {
                let stream = stream.clone();
                thread::spawn(move || match stream.try_grant(6) {
                    Ok(mut grant) => {
                        assert_eq!(grant.len(), 6);
                        grant.sent(2).unwrap();
                        2
                    }
                    Err(Aborted) => 0,
                })
            };
            if connection_aborts {
                connection.abort();
            } else {
                stream.abort();
            }
            let sent = writer.join().unwrap();
            let (c, s) = (connection.state(), stream.stream().state());
            assert_eq!((c.window, c.held), (10 - sent, 0), "connection {c:?}");
            assert_eq!((s.window, s.held), (10 - sent, 0), "stream {s:?}");
        });
    }
}

// The races an adversarial review found when releases were applied blind
// (each once failed): a blind change's undo against another release's
// announcement, an abort, END_STREAM and a caller's over-release.

fn announced(release: Release) -> u32 {
    match release {
        Release::Update(n) => n,
        Release::Pending | Release::Aborted => 0,
    }
}

/// Regression (review): a release crosses the threshold (its `fetch_add`
/// lands) and goes to announce; END_STREAM disables updates; a release after END_STREAM
/// (the server's worker releasing padding right after `disable_updates`)
/// adds its credit blind and undoes the pending part with `fetch_sub`. If
/// the first release's announce CAS lands in between, it zeroes the pending
/// field *including the phantom credit*, and the undo borrows out of the
/// pending field into the flag bits: DISABLED is cleared, ABORTED is set,
/// pending becomes 2^31 - 5. All of these operations are legal.
#[test]
fn release_after_disable_vs_an_announce() {
    model(|| {
        let window = Arc::new(InputWindow::with_threshold(100, 10).unwrap());
        window.try_advance(60).unwrap();
        let app = {
            let window = window.clone();
            thread::spawn(move || window.release(20).unwrap())
        };
        // The worker: END_STREAM, then the padding goes back.
        window.disable_updates();
        assert_eq!(window.release(5).unwrap(), Release::Pending);
        app.join().unwrap();
        let state = window.state();
        assert!(!state.aborted, "nobody aborted: {state:?}");
        assert!(state.updates_disabled, "END_STREAM was seen: {state:?}");
        // The first release's credit is announced (before END_STREAM) or
        // owes nothing (after it); the padding owes nothing.
        assert_eq!(state.pending, 0, "{state:?}");
        assert_eq!(state.window, 65);
    });
}

/// Regression (review): the same borrow through an abort: a release after
/// the abort is legal (it returns `Aborted`), but its blind add and `fetch_sub` undo
/// race a pre-abort release's announce; the borrow *clears* ABORTED: the
/// window is live again, a second `abort` returns the unread bytes a
/// second time, and the next release finds pending credit
/// of 2^31 - 5 and the process aborts in `stray()`.
#[test]
fn release_after_abort_vs_an_announce() {
    model(|| {
        let window = Arc::new(InputWindow::with_threshold(100, 10).unwrap());
        window.try_advance(60).unwrap();
        let releaser = {
            let window = window.clone();
            thread::spawn(move || window.release(20).unwrap())
        };
        let unread = window.abort();
        assert_eq!(window.release(5).unwrap(), Release::Aborted);
        let first = releaser.join().unwrap();
        let state = window.state();
        assert!(state.aborted, "the abort was undone by a borrow: {state:?}");
        assert!(!state.updates_disabled, "nobody saw END_STREAM: {state:?}");
        assert_eq!(window.abort(), 0, "unread bytes returned twice (first time {unread})");
        let _ = first;
    });
}

/// Regression (review): the server's composition of the first race: a
/// stream's
/// `disable_updates` + padding release on the worker race the body reader's
/// release crossing the stream threshold. Once the stream word is
/// corrupted (spuriously ABORTED), the reader's later releases give nothing
/// to the connection and the reader's abort returns 0: the connection loses
/// the stream's credit for good (it stalls once this has happened enough).
#[test]
fn stream_disable_vs_announce_leaks_connection_credit() {
    model(|| {
        let connection = StdArc::new(InputWindow::with_threshold(1000, 999).unwrap());
        let stream = Arc::new(StreamInput::with_threshold(connection.clone(), 100, 10).unwrap());
        assert_eq!(stream.try_advance(60).unwrap().0, Advance::Accepted);
        let reader = {
            let stream = stream.clone();
            thread::spawn(move || {
                stream.release(20).unwrap();
            })
        };
        // The worker: END_STREAM, then 5 bytes of padding go back.
        stream.disable_updates();
        stream.release(5).unwrap();
        reader.join().unwrap();
        // The reader consumes 10 more, then drops the body.
        stream.release(10).unwrap();
        stream.abort().unwrap();
        assert_eq!(connection.available(), 1000, "every byte of the stream is back");
    });
}

/// Regression (review): a DATA
/// frame overdraws a *stream* window (a stream error: RST_STREAM, the
/// connection goes on) while the stream's reader aborts. The abort counts
/// the overdraw's blind subtraction as unread bytes and gives them to the
/// connection; then `StreamInput::try_advance` gives the refused frame back
/// to the connection too. When other streams hold connection credit, the
/// second give-back is accepted: the connection window ends 8 bytes above
/// the truth, and another stream's legitimate release is refused.
#[test]
fn stream_overdraw_vs_stream_abort_double_returns_connection_credit() {
    model(|| {
        let connection = StdArc::new(InputWindow::with_threshold(100, 99).unwrap());
        // Another stream holds 50 bytes of the connection window.
        connection.try_advance(50).unwrap();
        let stream = Arc::new(StreamInput::with_threshold(connection.clone(), 10, 9).unwrap());
        assert_eq!(stream.try_advance(5).unwrap().0, Advance::Accepted);
        let network = {
            let stream = stream.clone();
            thread::spawn(move || {
                let error = stream.try_advance(8).unwrap_err();
                assert!(matches!(error.error, FlowError::WindowExceeded { requested: 8, .. }));
            })
        };
        let _ = stream.abort();
        network.join().unwrap();
        assert_eq!(connection.available(), 50, "the stream's bytes came back exactly once");
        // The other stream's reader gives its 50 bytes back.
        assert_eq!(connection.release(50).map(announced), Ok(0));
    });
}

/// Regression (review): an over-release
/// (refused) racing a legitimate release that crosses the threshold. The
/// legitimate release's announce takes the over-release's phantom credit
/// (telling the peer of 30 bytes that are not in the window), and the
/// undo's borrow sets ABORTED and DISABLED.
#[test]
fn over_release_vs_an_announce() {
    model(|| {
        let window = Arc::new(InputWindow::with_threshold(100, 10).unwrap());
        window.try_advance(20).unwrap();
        let buggy = {
            let window = window.clone();
            thread::spawn(move || window.release(30))
        };
        let legit = window.release(15);
        assert!(matches!(buggy.join().unwrap(), Err(FlowError::OverRelease { released: 30, .. })));
        // The over-release changes nothing: the legitimate release is
        // judged against the real window and announces only its own credit.
        assert_eq!(legit, Ok(Release::Update(15)));
        assert_eq!(
            window.state(),
            InputState { window: 95, pending: 0, aborted: false, updates_disabled: false }
        );
    });
}

/// Regression (review): a legitimate release refused as an over-release
/// because a concurrent (buggy) over-release's blind add was in the
/// window. A refused release now never touches it.
#[test]
fn over_release_makes_a_legitimate_release_fail() {
    model(|| {
        let window = Arc::new(InputWindow::with_threshold(100, 90).unwrap());
        window.try_advance(20).unwrap();
        let buggy = {
            let window = window.clone();
            thread::spawn(move || window.release(30))
        };
        let legit = window.release(15);
        let _ = buggy.join().unwrap();
        assert_eq!(legit, Ok(Release::Pending), "a legitimate release refused");
    });
}

/// Regression (review): the abort race with no thread misusing anything
/// (two releases
/// and an abort, each once): one release lands after the abort and undoes
/// its add, the other's announce takes that phantom credit in between, and
/// the undo's borrow clears ABORTED and leaves pending at 2^31 - 20.
#[test]
fn two_releases_and_an_abort() {
    model(|| {
        let window = Arc::new(InputWindow::with_threshold(100, 10).unwrap());
        window.try_advance(60).unwrap();
        let other = {
            let window = window.clone();
            thread::spawn(move || window.release(20).unwrap())
        };
        let aborter = {
            let window = window.clone();
            thread::spawn(move || window.abort())
        };
        let mine = window.release(20).unwrap();
        let theirs = other.join().unwrap();
        let unread = aborter.join().unwrap();
        let given: u32 =
            [mine, theirs].iter().map(|r| if *r == Release::Aborted { 0 } else { 20 }).sum();
        assert_eq!(unread + given, 60);
        assert!(announced(mine) + announced(theirs) <= given);
        let state = window.state();
        assert!(state.aborted && !state.updates_disabled && state.pending <= 40, "{state:?}");
    });
}

/// Documented, not linearizable (harmless: nothing is announced after
/// END_STREAM): with 5 bytes already
/// pending, a release crossing the threshold races `disable_updates`. The
/// announce CAS that lands after the disable drops all pending credit and
/// returns `Pending`. No sequential order gives that: before the disable
/// the rules return `Update(25)`; after it they return `Pending` and keep
/// the 5 pending bytes (`InputState::release` leaves pending untouched once
/// updates are disabled).
#[test]
fn a_release_crossing_the_threshold_vs_disable_updates() {
    model(|| {
        let window = Arc::new(InputWindow::with_threshold(100, 10).unwrap());
        window.try_advance(60).unwrap();
        assert_eq!(window.release(5).unwrap(), Release::Pending);
        let disabler = {
            let window = window.clone();
            thread::spawn(move || window.disable_updates())
        };
        let release = window.release(20).unwrap();
        disabler.join().unwrap();
        let state = window.state();
        match release {
            Release::Update(n) => assert_eq!((n, state.pending), (25, 0)),
            // After the disable, as the rules (5); or before it, with its
            // announcement finding END_STREAM (25 left pending).
            Release::Pending => assert!(state.pending == 5 || state.pending == 25, "{state:?}"),
            Release::Aborted => panic!("nobody aborts"),
        }
        assert_eq!(state.window, 65);
    });
}

/// one stream release (crossing the stream threshold) racing
/// the stream's abort, with a frame after it: the connection gets every
/// byte back exactly once and the stream stays aborted.
#[test]
fn stream_release_vs_stream_abort() {
    model(|| {
        let connection = StdArc::new(InputWindow::with_threshold(1000, 999).unwrap());
        let stream = Arc::new(StreamInput::with_threshold(connection.clone(), 100, 10).unwrap());
        assert_eq!(stream.try_advance(60).unwrap().0, Advance::Accepted);
        let reader = {
            let stream = stream.clone();
            thread::spawn(move || {
                stream.release(20).unwrap();
            })
        };
        stream.abort().unwrap();
        reader.join().unwrap();
        assert_eq!(stream.try_advance(10).unwrap().0, Advance::Aborted);
        assert!(stream.stream().state().aborted);
        assert_eq!(connection.available(), 1000);
    });
}

/// Regression (review): an abort racing a
/// refused over-release counts its phantom credit as released, so it
/// returns too few unread bytes (here 0 instead of 20): a stream's abort
/// then gives the connection too little back, for good.
#[test]
fn over_release_vs_abort_undercounts_unread() {
    model(|| {
        let window = Arc::new(InputWindow::with_threshold(100, 90).unwrap());
        window.try_advance(20).unwrap();
        let buggy = {
            let window = window.clone();
            thread::spawn(move || window.release(30))
        };
        let unread = window.abort();
        let _ = buggy.join().unwrap();
        assert_eq!(unread, 20);
    });
}

/// A release crossing the threshold, an abort, a release after the abort
/// (legal: it returns `Aborted`), then one more release after the abort.
/// Regression (review): the announce/undo borrow once cleared ABORTED and
/// left the pending field at 2^31 - 5, and the last release aborted the
/// process in `stray()`. Expected: `Aborted`.
#[test]
fn a_release_after_the_abort_aborts_the_process() {
    model(|| {
        let window = Arc::new(InputWindow::with_threshold(100, 10).unwrap());
        window.try_advance(60).unwrap();
        let releaser = {
            let window = window.clone();
            thread::spawn(move || window.release(20).unwrap())
        };
        window.abort();
        assert_eq!(window.release(5).unwrap(), Release::Aborted);
        releaser.join().unwrap();
        assert_eq!(window.release(1).unwrap(), Release::Aborted);
    });
}

/// Regression (outside probe): a frame that overdraws a full window (the
/// peer breaking it) racing an over-release (the caller's bug). The frame
/// was applied blind and undone; an over-release judged in between saw
/// the lowered window and passed, the frame's undo then took the window
/// above `initial` for good, and every later operation waited for an undo
/// that never came. A refused frame now changes nothing.
#[test]
fn an_overdraw_never_lets_an_over_release_through() {
    model(|| {
        let window = Arc::new(InputWindow::with_threshold(100, 50).unwrap());
        let peer = {
            let window = window.clone();
            thread::spawn(move || window.try_advance(101))
        };
        let buggy = window.release(1);
        assert!(matches!(buggy, Err(FlowError::OverRelease { released: 1, outstanding: 0 })));
        assert!(matches!(
            peer.join().unwrap(),
            Err(FlowError::WindowExceeded { requested: 101, available: 100 })
        ));
        assert_eq!(window.try_advance(100), Ok(Advance::Accepted), "the window is whole");
    });
}

/// An over-release, a legitimate release and a frame race: the frame is
/// judged only against credit that is there (never the over-release's:
/// 96 bytes never fit, since at most 95 are ever free), the legitimate
/// release is counted once (kept, or taken back while the over-release is
/// in the window and added again), and the window ends exact.
#[test]
fn a_frame_never_uses_an_over_release_credit() {
    model(|| {
        let window = Arc::new(InputWindow::with_threshold(100, 90).unwrap());
        window.try_advance(20).unwrap();
        let buggy = {
            let window = window.clone();
            thread::spawn(move || window.release(30))
        };
        let peer = {
            let window = window.clone();
            thread::spawn(move || window.try_advance(96))
        };
        assert_eq!(window.release(15), Ok(Release::Pending));
        assert!(matches!(buggy.join().unwrap(), Err(FlowError::OverRelease { released: 30, .. })));
        assert!(matches!(
            peer.join().unwrap(),
            Err(FlowError::WindowExceeded { requested: 96, available: 80 | 95 })
        ));
        assert_eq!(
            window.state(),
            InputState { window: 95, pending: 15, aborted: false, updates_disabled: false }
        );
    });
}

/// Two over-releases at once (a double release on two threads), each too
/// much by itself: both are refused, neither waits for the other for good
/// (each is judged on a word the other never changed), and the window is
/// unchanged.
#[test]
fn two_over_releases_at_once_are_both_refused() {
    model(|| {
        let window = Arc::new(InputWindow::with_threshold(100, 90).unwrap());
        window.try_advance(20).unwrap();
        let other = {
            let window = window.clone();
            thread::spawn(move || window.release(30))
        };
        let mine = window.release(30);
        assert!(matches!(mine, Err(FlowError::OverRelease { released: 30, .. })));
        assert!(matches!(other.join().unwrap(), Err(FlowError::OverRelease { released: 30, .. })));
        assert_eq!(
            window.state(),
            InputState { window: 80, pending: 0, aborted: false, updates_disabled: false }
        );
    });
}

/// Regression (review): a buggy thread over-releases 100 (on 80
/// outstanding), then 45; a legitimate thread releases 40. In any order
/// exactly one of 45 and 40 fits (45 + 40 > 80). The legitimate release,
/// stepping back from the 100, found the 45 (judged against its own
/// credit) in the window and took its credit back: the 45's credit was
/// uncovered (usable by a frame, an announcement or the abort until its
/// undo) and the legitimate release was refused too. A refused release
/// now never touches the window. Found at
/// bound 4, so it runs there whatever the environment says (two threads
/// beside the main one: seconds).
#[test]
fn a_legitimate_release_never_uncovers_a_second_over_release() {
    let mut builder = loom::model::Builder::new();
    builder.max_branches = 100_000;
    builder.preemption_bound = Some(4);
    model_with(builder, || {
        let window = Arc::new(InputWindow::with_threshold(100, 90).unwrap());
        window.try_advance(80).unwrap();
        let buggy = {
            let window = window.clone();
            thread::spawn(move || {
                assert!(window.release(100).is_err(), "100 on 80 outstanding passed");
                window.release(45)
            })
        };
        let legit = {
            let window = window.clone();
            thread::spawn(move || window.release(40))
        };
        let second = buggy.join().unwrap();
        let legit = legit.join().unwrap();
        assert!(
            second.is_ok() != legit.is_ok(),
            "not one of 45 and 40 accepted: {second:?}, {legit:?}, {:?}",
            window.state()
        );
        let accepted = if second.is_ok() { 45 } else { 40 };
        assert_eq!(window.state().window, 20 + accepted);
    });
}

// A second review's races when releases were applied blind (each once
// failed): a release that met an over-release stepped back, judged by the
// current window alone, and took back credit a frame, an announcement or
// the abort had used once a second over-release took the window above
// `initial` again.

/// `model` at a fixed preemption bound, whatever `LOOM_MAX_PREEMPTIONS`
/// says: these models are small enough for 3 or 4.
fn model_bounded(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.max_branches = 100_000;
    builder.preemption_bound = Some(bound);
    model_with(builder, f);
}

/// A window of 100 with 80 outstanding (the announcing threshold given),
/// and a thread that legitimately releases 40 of them.
fn eighty_out_and_a_release_of_40(
    threshold: u32,
) -> (Arc<InputWindow>, thread::JoinHandle<Result<Release, FlowError>>) {
    let window = Arc::new(InputWindow::with_threshold(100, threshold).unwrap());
    window.try_advance(80).unwrap();
    let legit = {
        let window = window.clone();
        thread::spawn(move || window.release(40))
    };
    (window, legit)
}

/// `step_back` once decided "nobody has used this credit" from the
/// *current* word only (window above `initial`), but the window may have
/// come back to `initial` (first over-release undone), had the legitimate
/// release's credit announced, and gone above again (a second, large
/// over-release: no patience involved) in between: ABA. The withdrawal
/// then takes the credit back, and the re-add puts it into pending credit
/// a second time: announced twice.
///
/// One erring application thread: over-release 90 (80 outstanding), a
/// legitimate release of 1, over-release 90 again. A legitimate thread
/// releases 40. Legit total 41: announced + pending must be 41.
#[test]
fn a_step_back_after_the_window_settled_keeps_announced_credit() {
    model_bounded(3, || {
        let (window, legit) = eighty_out_and_a_release_of_40(10);
        assert!(window.release(90).is_err(), "90 on 80 outstanding passed");
        let one = window.release(1).expect("a legitimate release of 1 refused");
        assert!(window.release(90).is_err(), "90 passed");
        let legit = legit.join().unwrap().expect("a legitimate release of 40 refused");
        let state = window.state();
        assert_eq!(state.window, 61, "{state:?}");
        assert_eq!(
            announced(one) + announced(legit) + state.pending,
            41,
            "released 41, announced {one:?} + {legit:?}, pending {}",
            state.pending
        );
    });
}

/// The same ABA, with a frame using the legitimate credit in the middle:
/// once the second over-release is undone the window holds the truth
/// minus the withdrawn credit (here -10 for a truth of 30), and a frame of
/// 5 that fits in every sequential order is refused (FLOW_CONTROL_ERROR to
/// an honest peer).
#[test]
fn a_step_back_after_the_window_settled_keeps_credit_a_frame_used() {
    model_bounded(3, || {
        let (window, legit) = eighty_out_and_a_release_of_40(90);
        assert!(window.release(90).is_err(), "90 on 80 outstanding passed");
        let big = window.try_advance(30);
        assert!(window.release(200).is_err(), "200 passed");
        // 30 accepted => the 40 was in before it => 30 left; 30 refused =>
        // 20 or 60 left. 5 fits every way.
        let small = window.try_advance(5);
        let legit = legit.join().unwrap();
        assert!(matches!(legit, Ok(Release::Pending)), "legit: {legit:?}");
        assert_eq!(small, Ok(Advance::Accepted), "a fitting frame refused (frame of 30: {big:?})");
        let counted = if big.is_ok() { 35 } else { 5 };
        assert_eq!(window.state().window, 60 - counted);
    });
}

/// The same ABA with an abort where the second frame was: the abort's
/// unread count is read from the window without the withdrawn (but used)
/// credit: more than the initial window, which no sequential order gives.
#[test]
fn a_step_back_after_the_window_settled_keeps_the_abort_exact() {
    model_bounded(3, || {
        let (window, legit) = eighty_out_and_a_release_of_40(90);
        assert!(window.release(90).is_err(), "90 on 80 outstanding passed");
        let big = window.try_advance(30);
        assert!(window.release(200).is_err(), "200 passed");
        let unread = window.abort();
        let legit = legit.join().unwrap().expect("legit refused");
        let advanced = 80 + if big.is_ok() { 30 } else { 0 };
        let given = if legit == Release::Aborted { 0 } else { 40 };
        assert!(unread <= 100, "abort counted {unread} unread on a window of 100 ({legit:?})");
        assert_eq!(unread, advanced - given, "frame {big:?}, legit {legit:?}");
    });
}

/// The first two models without the erring thread's second
/// over-release must pass (the ABA needs the window to go back above).
#[test]
fn one_over_release_beside_a_release_announces_exactly() {
    model_bounded(3, || {
        let (window, legit) = eighty_out_and_a_release_of_40(10);
        assert!(window.release(90).is_err());
        let one = window.release(1).expect("a legitimate release of 1 refused");
        let legit = legit.join().unwrap().expect("a legitimate release of 40 refused");
        let state = window.state();
        assert_eq!(state.window, 61);
        assert_eq!(announced(one) + announced(legit) + state.pending, 41);
    });
}

/// `release(0)` is a no-op in the rules (Pending, nothing changes). When
/// releases were applied blind, its `fetch_add(0)` could find another
/// release's credit above the threshold before that one announced, and
/// announce it itself.
#[test]
fn a_release_of_zero_never_announces() {
    model_bounded(3, || {
        let window = Arc::new(InputWindow::with_threshold(100, 10).unwrap());
        window.try_advance(60).unwrap();
        let other = {
            let window = window.clone();
            thread::spawn(move || window.release(20).unwrap())
        };
        let zero = window.release(0).unwrap();
        let other = other.join().unwrap();
        let state = window.state();
        assert_eq!(announced(zero) + announced(other) + state.pending, 20);
        assert_eq!(zero, Release::Pending, "release(0) announced (other: {other:?})");
    });
}

/// a frame of 0 and a frame of exactly the window race a
/// legitimate release: neither is ever refused and the window ends exact.
#[test]
fn zero_and_exact_frames_vs_a_release() {
    model_bounded(3, || {
        let window = Arc::new(InputWindow::with_threshold(100, 90).unwrap());
        window.try_advance(60).unwrap();
        let releaser = {
            let window = window.clone();
            thread::spawn(move || window.release(10))
        };
        assert_eq!(window.try_advance(0), Ok(Advance::Accepted));
        assert_eq!(window.try_advance(40), Ok(Advance::Accepted));
        assert_eq!(releaser.join().unwrap(), Ok(Release::Pending));
        assert_eq!(window.state().window, 10);
        assert!(matches!(window.try_advance(11), Err(FlowError::WindowExceeded { .. })));
    });
}

/// an over-release racing `disable_updates` and a legitimate
/// release: the flags survive (no borrow out of pending), the legitimate
/// release is accepted, the window ends exact, nothing is left pending
/// that was not released.
#[test]
fn an_over_release_vs_disable_updates_vs_a_release() {
    model_bounded(2, || {
        let window = Arc::new(InputWindow::with_threshold(100, 10).unwrap());
        window.try_advance(20).unwrap();
        let buggy = {
            let window = window.clone();
            thread::spawn(move || window.release(30))
        };
        let disabler = {
            let window = window.clone();
            thread::spawn(move || window.disable_updates())
        };
        let legit = window.release(15).expect("legit refused");
        assert!(buggy.join().unwrap().is_err());
        disabler.join().unwrap();
        let state = window.state();
        assert!(state.updates_disabled && !state.aborted, "{state:?}");
        assert_eq!(state.window, 95);
        let owed = announced(legit) + state.pending;
        assert!(owed == 0 || owed == 15, "legit {legit:?}, {state:?}");
    });
}

/// An abort vs an over-release vs a legitimate release (the step back):
/// the abort's unread count and the release's answer agree.
#[test]
fn an_over_release_vs_abort_vs_a_release() {
    model_bounded(2, || {
        let window = Arc::new(InputWindow::with_threshold(100, 90).unwrap());
        window.try_advance(20).unwrap();
        let buggy = {
            let window = window.clone();
            thread::spawn(move || window.release(30))
        };
        let aborter = {
            let window = window.clone();
            thread::spawn(move || window.abort())
        };
        let legit = window.release(15).expect("legit refused");
        let buggy = buggy.join().unwrap();
        let unread = aborter.join().unwrap();
        assert!(
            matches!(buggy, Err(FlowError::OverRelease { .. }) | Ok(Release::Aborted)),
            "{buggy:?}"
        );
        let given = if legit == Release::Aborted { 0 } else { 15 };
        assert_eq!(unread + given, 20, "legit {legit:?}, unread {unread}");
    });
}

/// The ABA with the abort in the middle: the abort counts the legitimate
/// 40 as given back (its add was in a settled word), a release after the
/// abort that over-releases lands, the legitimate release withdraws, finds
/// the abort on its re-add and answers `Aborted` ("nothing was given
/// back"). A stream gives the connection neither the 40 (release said
/// Aborted) nor counts them unread (abort said given back): lost for good.
#[test]
fn a_step_back_after_the_window_settled_agrees_with_the_abort() {
    model_bounded(3, || {
        let (window, legit) = eighty_out_and_a_release_of_40(90);
        assert!(window.release(90).is_err(), "90 on 80 outstanding passed");
        let unread = window.abort();
        assert_eq!(window.release(200), Ok(Release::Aborted));
        let legit = legit.join().unwrap().expect("legit refused");
        let given = if legit == Release::Aborted { 0 } else { 40 };
        assert_eq!(unread + given, 80, "abort said {unread} unread, legit said {legit:?}");
    });
}

/// The ABA as real threads met it when releases were blind: the
/// legitimate release was not preempted at an odd instruction, it was
/// yielding in the step back's patience loop by design (a second
/// over-release of 45 had been judged against its credit). While it
/// yielded, the erring thread's 45 was undone, the peer's frame of 30 used
/// the legitimate 40, and a third over-release (200) landed: the release's
/// next look found the window above `initial` by more than its credit and
/// withdrew. The window was then 40 short (-10 for a truth of 30), and a
/// frame of 5 was refused.
/// (Real threads: `over_release_races.rs`.)
#[test]
fn a_step_back_waiting_out_three_over_releases_keeps_used_credit() {
    model_bounded(4, || {
        let (window, legit) = eighty_out_and_a_release_of_40(90);
        assert!(window.release(100).is_err(), "100 on 80 outstanding passed");
        let second = window.release(45);
        let big = window.try_advance(30);
        assert!(window.release(200).is_err(), "200 passed");
        let small = window.try_advance(5);
        let legit = legit.join().unwrap();
        if second.is_ok() {
            return; // 45 went in before the 40 (which then is the excess)
        }
        assert_eq!(legit, Ok(Release::Pending), "a legitimate release refused");
        assert_eq!(small, Ok(Advance::Accepted), "a fitting frame refused (frame of 30: {big:?})");
    });
}

// The waiter slots of `OutputWindow::reserve` (a review's models, each
// checked against two mutants: a `stop_waiting` that always clears
// `waiting`, keys that ignore the round; both deadlock here).

/// A window the futures can borrow across threads.
fn leaked(initial: u32) -> &'static OutputWindow {
    Box::leak(Box::new(OutputWindow::new(initial).unwrap()))
}

fn poll_noop<F: std::future::Future + Unpin>(f: &mut F) -> std::task::Poll<F::Output> {
    std::pin::Pin::new(f).poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
}

/// A future waits (slot stored), then an update wakes it (new round) while
/// another thread drops it (stale key or live key) and the main task waits
/// for the credit: the drop's `stop_waiting` (clearing `waiting` when the
/// list looks empty) must never cost the main waiter its wake.
#[test]
fn dropped_waiter_vs_increase_vs_new_waiter() {
    model(|| {
        let window = leaked(0);
        let mut abandoned = window.reserve(1);
        assert!(poll_noop(&mut abandoned).is_pending());
        let dropper = thread::spawn(move || drop(abandoned));
        let updater = thread::spawn(move || window.increase(1).unwrap());
        let got = loom::future::block_on(window.reserve(1)).unwrap();
        dropper.join().unwrap();
        updater.join().unwrap();
        assert_eq!(got, 1);
        assert_eq!(window.state(), OutputState { window: 0, held: 0, aborted: false });
    });
}

/// A future polled with one waker (a noop: its first task) is moved to
/// another thread and polled there with that thread's waker, racing an
/// update: the slot must carry the new waker, or the update must be seen.
#[test]
fn future_moved_to_another_task_vs_increase() {
    model(|| {
        let window = leaked(0);
        let mut moved = window.reserve(1);
        assert!(poll_noop(&mut moved).is_pending());
        let mover = thread::spawn(move || loom::future::block_on(moved).unwrap());
        window.increase(1).unwrap();
        assert_eq!(mover.join().unwrap(), 1);
    });
}

/// Two futures wait; one is woken by a first update and dropped without
/// being polled again (its key is stale), a second update comes, and the
/// other (polled again from its own thread) must be served.
#[test]
fn woken_then_dropped_vs_second_round() {
    model(|| {
        let window = leaked(0);
        let mut first = window.reserve(1);
        assert!(poll_noop(&mut first).is_pending());
        let waiter = thread::spawn(move || {
            let mut got = 0;
            while got < 2 {
                got += loom::future::block_on(window.reserve(2 - got)).unwrap();
            }
            got
        });
        let dropper = thread::spawn(move || {
            window.increase(1).unwrap();
            drop(first);
        });
        window.increase(1).unwrap();
        dropper.join().unwrap();
        assert_eq!(waiter.join().unwrap(), 2);
        assert_eq!(window.state(), OutputState { window: 0, held: 0, aborted: false });
    });
}

/// A waiter that is served (its `stop_waiting` clears `waiting`, the last
/// one out) races a second waiter's registration and a transition.
#[test]
fn served_waiter_clears_flag_vs_new_waiter_vs_give_back() {
    model(|| {
        let window = leaked(1);
        assert_eq!(window.try_hold(1), Ok(1));
        let mut first = window.reserve(1);
        assert!(poll_noop(&mut first).is_pending());
        let a = thread::spawn(move || {
            window.give_back(1).unwrap();
            // Served or not, it stops waiting (Ready clears; drop clears).
            let got = match poll_noop(&mut first) {
                std::task::Poll::Ready(r) => r.unwrap(),
                std::task::Poll::Pending => 0,
            };
            drop(first);
            if got > 0 {
                window.increase(got).unwrap(); // hand it on
            }
        });
        let got = loom::future::block_on(window.reserve(1)).unwrap();
        a.join().unwrap();
        assert_eq!(got, 1);
    });
}
