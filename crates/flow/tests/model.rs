//! proptest state machines: random operation sequences against a plain
//! sequential model written here (independently of the crate's rules), for
//! the CAS windows and both lock-based twins, and for a stream's send side
//! (`StreamOutput`) over each of them.
#![cfg(not(falconet_flow_loom))]

use std::sync::Arc;

use falconet_flow::{
    Aborted, Advance, FlowError, InputFlow, InputWindow, MAX_WINDOW, OutputFlow, OutputWindow,
    ParkingLotInputWindow, ParkingLotOutputWindow, Release, StdInputWindow, StdOutputWindow,
    StreamOutput,
};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum InputOp {
    Advance(u32),
    Release(u32),
    Abort,
    DisableUpdates,
}

/// Byte counts: mostly small (to land on the thresholds of small windows),
/// some anywhere in `u32` and at the RFC's maximum (to reach the edges of
/// large ones, and past them).
fn amount() -> impl Strategy<Value = u32> {
    prop_oneof![
        6 => 0..300u32,
        1 => any::<u32>(),
        1 => (MAX_WINDOW - 300)..=MAX_WINDOW,
        1 => Just(MAX_WINDOW),
    ]
}

fn input_op() -> impl Strategy<Value = InputOp> {
    prop_oneof![
        4 => amount().prop_map(InputOp::Advance),
        4 => amount().prop_map(InputOp::Release),
        1 => Just(InputOp::Abort),
        1 => Just(InputOp::DisableUpdates),
    ]
}

/// An initial window anywhere in `u32`, with its edges: 0, 1, the largest
/// (2^31-1) and past it (refused).
fn initial_window() -> impl Strategy<Value = u32> {
    prop_oneof![
        3 => 0..2000u32,
        1 => Just(0u32),
        1 => Just(1u32),
        1 => (MAX_WINDOW - 2000)..=MAX_WINDOW,
        1 => any::<u32>(),
    ]
}

/// A threshold for `initial`: below it (valid), at it, just past it, or
/// anywhere in `u32` (mostly refused).
fn threshold_for(initial: u32) -> impl Strategy<Value = u32> {
    prop_oneof![
        4 => 0..=initial.saturating_sub(1),
        1 => Just(initial.saturating_sub(1)),
        1 => Just(initial),
        1 => Just(initial.saturating_add(1)),
        1 => any::<u32>(),
    ]
}

/// The receive window as a reader of RFC 9113 6.9 and Kestrel would write it.
struct InputModel {
    initial: i64,
    threshold: i64,
    available: i64,
    owed: i64,
    aborted: bool,
    silent: bool,
}

fn check_input<W: InputFlow>(
    initial: u32,
    threshold: u32,
    ops: Vec<InputOp>,
) -> Result<(), TestCaseError> {
    // The constructor's rule, as the RFC and a user need it: a window of at
    // most 2^31-1 bytes, and a threshold its credit can pass.
    let refusal = if initial > MAX_WINDOW {
        Some(FlowError::InitialTooLarge { initial })
    } else if threshold >= initial.max(1) {
        Some(FlowError::ThresholdTooLarge { threshold, initial })
    } else {
        None
    };
    let window = match (W::with_threshold(initial, threshold), refusal) {
        (Ok(window), None) => window,
        (Err(error), Some(expected)) => {
            prop_assert_eq!(error, expected);
            return Ok(());
        }
        (built, expected) => {
            return Err(TestCaseError::fail(format!(
                "with_threshold({initial}, {threshold}): {:?}, expected {expected:?}",
                built.err()
            )));
        }
    };
    let mut model = InputModel {
        initial: initial.into(),
        threshold: threshold.into(),
        available: initial.into(),
        owed: 0,
        aborted: false,
        silent: false,
    };
    for op in ops {
        match op {
            InputOp::Advance(n) => {
                let expected = if i64::from(n) > model.available {
                    Err(FlowError::WindowExceeded {
                        requested: n,
                        available: model.available as u32,
                    })
                } else if model.aborted {
                    Ok(Advance::Aborted)
                } else {
                    model.available -= i64::from(n);
                    Ok(Advance::Accepted)
                };
                prop_assert_eq!(window.try_advance(n), expected);
            }
            InputOp::Release(n) => {
                let outstanding = model.initial - model.available;
                let expected = if model.aborted {
                    Ok(Release::Aborted)
                } else if i64::from(n) > outstanding {
                    Err(FlowError::OverRelease { released: n, outstanding: outstanding as u32 })
                } else {
                    model.available += i64::from(n);
                    if model.silent {
                        Ok(Release::Pending)
                    } else {
                        model.owed += i64::from(n);
                        if model.owed > model.threshold {
                            // One WINDOW_UPDATE carries at most 2^31-1.
                            let update = model.owed.min(MAX_WINDOW.into());
                            model.owed -= update;
                            Ok(Release::Update(update as u32))
                        } else {
                            Ok(Release::Pending)
                        }
                    }
                };
                prop_assert_eq!(window.release(n), expected);
            }
            InputOp::Abort => {
                let expected =
                    if model.aborted { 0 } else { (model.initial - model.available) as u32 };
                model.aborted = true;
                prop_assert_eq!(window.abort(), expected);
            }
            InputOp::DisableUpdates => {
                model.silent = true;
                window.disable_updates();
            }
        }
        let state = window.state();
        prop_assert_eq!(i64::from(state.window), model.available);
        prop_assert_eq!(i64::from(state.pending), model.owed);
        prop_assert_eq!(state.aborted, model.aborted);
    }
    Ok(())
}

#[derive(Clone, Debug)]
enum OutputOp {
    Reserve(u32),
    Hold(u32),
    Sent(u32),
    GiveBack(u32),
    /// `sent` or `give_back` of the held count plus this offset (so the
    /// edge "exactly what is held" and one past it are hit often).
    SentNearHeld(i8),
    GiveBackNearHeld(i8),
    /// `try_grant(max)`, `sent(min(sent, len))`, then the drop.
    Grant {
        max: u32,
        sent: u32,
    },
    Increase(u32),
    Delta(i32),
    Abort,
}

fn output_op() -> impl Strategy<Value = OutputOp> {
    let settle = || prop_oneof![0..500u32, any::<u32>(), Just(MAX_WINDOW), Just(u32::MAX)];
    prop_oneof![
        4 => prop_oneof![0..500u32, any::<u32>()].prop_map(OutputOp::Reserve),
        3 => prop_oneof![0..500u32, any::<u32>()].prop_map(OutputOp::Hold),
        1 => settle().prop_map(OutputOp::Sent),
        1 => settle().prop_map(OutputOp::GiveBack),
        1 => (-2..=2i8).prop_map(OutputOp::SentNearHeld),
        2 => (-2..=2i8).prop_map(OutputOp::GiveBackNearHeld),
        2 => (prop_oneof![0..500u32, any::<u32>()], prop_oneof![0..500u32, any::<u32>()])
            .prop_map(|(max, sent)| OutputOp::Grant { max, sent }),
        3 => increment().prop_map(OutputOp::Increase),
        2 => delta().prop_map(OutputOp::Delta),
        1 => Just(OutputOp::Abort),
    ]
}

/// The send window as a reader of RFC 9113 6.9.1 writes it: credit free to
/// take, credit held (taken, not yet sent), and the window the peer counts
/// (their sum), which no update may take past 2^31-1.
struct OutputModel {
    free: i64,
    held: i64,
    aborted: bool,
}

impl OutputModel {
    fn take(&mut self, max: u32) -> Result<u32, Aborted> {
        if self.aborted {
            return Err(Aborted);
        }
        let granted = if self.free <= 0 { 0 } else { i64::from(max).min(self.free) };
        self.free -= granted;
        Ok(granted as u32)
    }

    fn shift(&mut self, by: i64) -> Result<(), FlowError> {
        let peer_counts = self.free + self.held + by;
        if peer_counts > i64::from(MAX_WINDOW) {
            return Err(FlowError::WindowOverflow { would_be: peer_counts });
        }
        if self.free + by < i64::from(i32::MIN) {
            return Err(FlowError::WindowUnderflow { would_be: self.free + by });
        }
        self.free += by;
        Ok(())
    }

    /// `n` held bytes leave `held`: into `free` when given back.
    fn settle(&mut self, n: u32, back: bool) -> Result<(), FlowError> {
        if i64::from(n) > self.held {
            return Err(FlowError::NotHeld { requested: n, held: self.held as u32 });
        }
        self.held -= i64::from(n);
        if back {
            self.free += i64::from(n);
        }
        Ok(())
    }

    fn near_held(&self, offset: i8) -> u32 {
        (self.held + i64::from(offset)).clamp(0, u32::MAX.into()) as u32
    }
}

fn check_output<W: OutputFlow>(initial: u32, ops: Vec<OutputOp>) -> Result<(), TestCaseError> {
    let window = match W::with_initial(initial) {
        Ok(window) => {
            prop_assert!(initial <= MAX_WINDOW);
            window
        }
        Err(error) => {
            prop_assert!(initial > MAX_WINDOW);
            prop_assert_eq!(error, FlowError::InitialTooLarge { initial });
            return Ok(());
        }
    };
    let mut model = OutputModel { free: initial.into(), held: 0, aborted: false };
    for op in ops {
        match op {
            OutputOp::Reserve(max) => {
                let expected = model.take(max);
                prop_assert_eq!(window.try_reserve(max), expected);
            }
            OutputOp::Hold(max) => {
                let expected = model.take(max);
                if let Ok(granted) = expected {
                    model.held += i64::from(granted);
                }
                prop_assert_eq!(window.try_hold(max), expected);
            }
            OutputOp::Sent(n) => prop_assert_eq!(window.sent(n), model.settle(n, false)),
            OutputOp::GiveBack(n) => prop_assert_eq!(window.give_back(n), model.settle(n, true)),
            OutputOp::SentNearHeld(offset) => {
                let n = model.near_held(offset);
                prop_assert_eq!(window.sent(n), model.settle(n, false));
            }
            OutputOp::GiveBackNearHeld(offset) => {
                let n = model.near_held(offset);
                prop_assert_eq!(window.give_back(n), model.settle(n, true));
            }
            OutputOp::Grant { max, sent } => {
                let expected = model.take(max);
                match (window.try_grant(max), expected) {
                    (Ok(mut grant), Ok(granted)) => {
                        prop_assert_eq!(grant.len(), granted);
                        prop_assert_eq!(window.state().held, model.held as u32 + granted);
                        let sent = sent.min(granted);
                        prop_assert_eq!(grant.sent(sent), Ok(()));
                        // The unsent rest goes back when the grant drops.
                        model.free += i64::from(granted - sent);
                    }
                    (Err(error), Err(expected)) => prop_assert_eq!(error, expected),
                    (grant, expected) => {
                        return Err(TestCaseError::fail(format!(
                            "try_grant({max}): {:?}, expected {expected:?}",
                            grant.map(|grant| grant.len())
                        )));
                    }
                }
            }
            OutputOp::Increase(n) => {
                let expected = if n == 0 {
                    Err(FlowError::ZeroIncrement)
                } else if model.aborted {
                    Ok(())
                } else {
                    model.shift(n.into())
                };
                prop_assert_eq!(window.increase(n), expected);
            }
            OutputOp::Delta(delta) => {
                let expected = if model.aborted { Ok(()) } else { model.shift(delta.into()) };
                prop_assert_eq!(window.apply_initial_window_delta(delta), expected);
            }
            OutputOp::Abort => {
                model.aborted = true;
                window.abort();
            }
        }
        let state = window.state();
        prop_assert_eq!(i64::from(state.window), model.free);
        prop_assert_eq!(i64::from(state.held), model.held);
        prop_assert_eq!(state.aborted, model.aborted);
        prop_assert!(state.flow_window() <= i64::from(MAX_WINDOW));
    }
    Ok(())
}

#[derive(Clone, Debug)]
enum StreamOp {
    Hold(u32),
    Reserve(u32),
    Grant {
        max: u32,
        sent: u32,
    },
    SentNearHeld(i8),
    GiveBackNearHeld(i8),
    Sent(u32),
    GiveBack(u32),
    StreamIncrease(u32),
    ConnectionIncrease(u32),
    StreamDelta(i32),
    /// Another stream took (and sent) this much of the connection.
    OtherStream(u32),
    Abort,
    ConnectionAbort,
}

/// A WINDOW_UPDATE increment: small, or near and past 2^31-1.
fn increment() -> impl Strategy<Value = u32> {
    prop_oneof![0..500u32, (MAX_WINDOW - 1000)..=u32::MAX]
}

/// A SETTINGS_INITIAL_WINDOW_SIZE change: small, or the extremes.
fn delta() -> impl Strategy<Value = i32> {
    prop_oneof![-1000..1000i32, Just(i32::MIN), Just(i32::MAX)]
}

fn stream_op() -> impl Strategy<Value = StreamOp> {
    let amount = || prop_oneof![0..500u32, any::<u32>(), Just(MAX_WINDOW), Just(u32::MAX)];
    prop_oneof![
        4 => amount().prop_map(StreamOp::Hold),
        2 => amount().prop_map(StreamOp::Reserve),
        2 => (amount(), amount()).prop_map(|(max, sent)| StreamOp::Grant { max, sent }),
        2 => (-2..=2i8).prop_map(StreamOp::SentNearHeld),
        2 => (-2..=2i8).prop_map(StreamOp::GiveBackNearHeld),
        1 => amount().prop_map(StreamOp::Sent),
        1 => amount().prop_map(StreamOp::GiveBack),
        2 => increment().prop_map(StreamOp::StreamIncrease),
        2 => increment().prop_map(StreamOp::ConnectionIncrease),
        2 => delta().prop_map(StreamOp::StreamDelta),
        1 => amount().prop_map(StreamOp::OtherStream),
        1 => Just(StreamOp::Abort),
        1 => Just(StreamOp::ConnectionAbort),
    ]
}

/// Go's rule for a stream's send side: take `min(max, stream, connection)`
/// from both or from neither; an aborted window on either side refuses.
/// Settling moves the same bytes on both.
fn model_take(
    stream: &mut OutputModel,
    connection: &mut OutputModel,
    max: u32,
    hold: bool,
) -> Result<u32, Aborted> {
    if stream.aborted || connection.aborted {
        return Err(Aborted);
    }
    let granted = [i64::from(max), stream.free, connection.free].into_iter().min().unwrap().max(0);
    for window in [&mut *stream, &mut *connection] {
        window.free -= granted;
        if hold {
            window.held += granted;
        }
    }
    Ok(granted as u32)
}

fn check_stream_output<W: OutputFlow>(
    connection_initial: u32,
    stream_initial: u32,
    ops: Vec<StreamOp>,
) -> Result<(), TestCaseError> {
    let Ok(connection) = W::with_initial(connection_initial) else {
        prop_assert!(connection_initial > MAX_WINDOW);
        return Ok(());
    };
    let connection = Arc::new(connection);
    let output = match StreamOutput::new(connection.clone(), stream_initial) {
        Ok(output) => output,
        Err(error) => {
            prop_assert_eq!(error, FlowError::InitialTooLarge { initial: stream_initial });
            return Ok(());
        }
    };
    let mut conn = OutputModel { free: connection_initial.into(), held: 0, aborted: false };
    let mut stream = OutputModel { free: stream_initial.into(), held: 0, aborted: false };
    let settle = |stream: &mut OutputModel, conn: &mut OutputModel, n: u32, back: bool| {
        stream.settle(n, back)?;
        conn.settle(n, back)
    };
    for op in ops {
        match op {
            StreamOp::Hold(max) => {
                let expected = model_take(&mut stream, &mut conn, max, true);
                prop_assert_eq!(output.try_hold(max), expected);
            }
            StreamOp::Reserve(max) => {
                let expected = model_take(&mut stream, &mut conn, max, false);
                prop_assert_eq!(output.try_reserve(max), expected);
            }
            StreamOp::Grant { max, sent } => {
                let expected = model_take(&mut stream, &mut conn, max, false);
                match (output.try_grant(max), expected) {
                    (Ok(mut grant), Ok(granted)) => {
                        prop_assert_eq!(grant.len(), granted);
                        let sent = sent.min(granted);
                        prop_assert_eq!(grant.sent(sent), Ok(()));
                        stream.free += i64::from(granted - sent);
                        conn.free += i64::from(granted - sent);
                    }
                    (Err(error), Err(expected)) => prop_assert_eq!(error, expected),
                    (grant, expected) => {
                        return Err(TestCaseError::fail(format!(
                            "try_grant({max}): {:?}, expected {expected:?}",
                            grant.map(|grant| grant.len())
                        )));
                    }
                }
            }
            StreamOp::SentNearHeld(offset) => {
                let n = stream.near_held(offset);
                prop_assert_eq!(output.sent(n), settle(&mut stream, &mut conn, n, false));
            }
            StreamOp::GiveBackNearHeld(offset) => {
                let n = stream.near_held(offset);
                prop_assert_eq!(output.give_back(n), settle(&mut stream, &mut conn, n, true));
            }
            StreamOp::Sent(n) => {
                prop_assert_eq!(output.sent(n), settle(&mut stream, &mut conn, n, false));
            }
            StreamOp::GiveBack(n) => {
                prop_assert_eq!(output.give_back(n), settle(&mut stream, &mut conn, n, true));
            }
            StreamOp::StreamIncrease(n) => {
                let expected = if n == 0 {
                    Err(FlowError::ZeroIncrement)
                } else if stream.aborted {
                    Ok(())
                } else {
                    stream.shift(n.into())
                };
                prop_assert_eq!(output.stream().increase(n), expected);
            }
            StreamOp::ConnectionIncrease(n) => {
                let expected = if n == 0 {
                    Err(FlowError::ZeroIncrement)
                } else if conn.aborted {
                    Ok(())
                } else {
                    conn.shift(n.into())
                };
                prop_assert_eq!(output.connection().increase(n), expected);
            }
            StreamOp::StreamDelta(delta) => {
                let expected = if stream.aborted { Ok(()) } else { stream.shift(delta.into()) };
                prop_assert_eq!(output.stream().apply_initial_window_delta(delta), expected);
            }
            StreamOp::OtherStream(max) => {
                let expected = conn.take(max);
                prop_assert_eq!(connection.try_reserve(max), expected);
            }
            StreamOp::Abort => {
                stream.aborted = true;
                output.abort();
            }
            StreamOp::ConnectionAbort => {
                conn.aborted = true;
                connection.abort();
            }
        }
        for (state, model) in [(output.stream().state(), &stream), (connection.state(), &conn)] {
            prop_assert_eq!(i64::from(state.window), model.free);
            prop_assert_eq!(i64::from(state.held), model.held);
            prop_assert_eq!(state.aborted, model.aborted);
        }
        // Every byte the stream holds, the connection holds too.
        prop_assert_eq!(output.stream().state().held, connection.state().held);
    }
    Ok(())
}

fn config() -> ProptestConfig {
    if cfg!(miri) {
        ProptestConfig { cases: 8, failure_persistence: None, ..ProptestConfig::default() }
    } else {
        ProptestConfig { cases: 256, ..ProptestConfig::default() }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn cas_input((initial, threshold) in initial_window().prop_flat_map(|i| (Just(i), threshold_for(i))), ops in prop::collection::vec(input_op(), 1..100)) {
        check_input::<InputWindow>(initial, threshold, ops)?;
    }

    #[test]
    fn parking_lot_input((initial, threshold) in initial_window().prop_flat_map(|i| (Just(i), threshold_for(i))), ops in prop::collection::vec(input_op(), 1..100)) {
        check_input::<ParkingLotInputWindow>(initial, threshold, ops)?;
    }

    #[test]
    fn std_input((initial, threshold) in initial_window().prop_flat_map(|i| (Just(i), threshold_for(i))), ops in prop::collection::vec(input_op(), 1..100)) {
        check_input::<StdInputWindow>(initial, threshold, ops)?;
    }

    #[test]
    fn cas_input_at_the_maximum(threshold in prop_oneof![Just(MAX_WINDOW / 2), Just(MAX_WINDOW - 1), 0..MAX_WINDOW], ops in prop::collection::vec(input_op(), 1..50)) {
        check_input::<InputWindow>(MAX_WINDOW, threshold, ops)?;
    }

    #[test]
    fn cas_output(initial in initial_window(), ops in prop::collection::vec(output_op(), 1..100)) {
        check_output::<OutputWindow>(initial, ops)?;
    }

    #[test]
    fn parking_lot_output(initial in initial_window(), ops in prop::collection::vec(output_op(), 1..100)) {
        check_output::<ParkingLotOutputWindow>(initial, ops)?;
    }

    #[test]
    fn std_output(initial in initial_window(), ops in prop::collection::vec(output_op(), 1..100)) {
        check_output::<StdOutputWindow>(initial, ops)?;
    }

    #[test]
    fn cas_stream_output(connection in initial_window(), stream in initial_window(), ops in prop::collection::vec(stream_op(), 1..100)) {
        check_stream_output::<OutputWindow>(connection, stream, ops)?;
    }

    #[test]
    fn parking_lot_stream_output(connection in initial_window(), stream in initial_window(), ops in prop::collection::vec(stream_op(), 1..100)) {
        check_stream_output::<ParkingLotOutputWindow>(connection, stream, ops)?;
    }

    #[test]
    fn std_stream_output(connection in initial_window(), stream in initial_window(), ops in prop::collection::vec(stream_op(), 1..100)) {
        check_stream_output::<StdOutputWindow>(connection, stream, ops)?;
    }
}
