//! proptest state machines: random operation sequences against a plain
//! sequential model written here (independently of the crate's rules), for
//! the CAS windows and both lock-based twins.
#![cfg(not(falconet_flow_loom))]

use falconet_flow::{
    Aborted, Advance, FlowError, InputFlow, InputWindow, MAX_WINDOW, OutputFlow, OutputWindow,
    ParkingLotInputWindow, ParkingLotOutputWindow, Release, StdInputWindow, StdOutputWindow,
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
    Increase(u32),
    Delta(i32),
    Abort,
}

fn output_op() -> impl Strategy<Value = OutputOp> {
    prop_oneof![
        4 => prop_oneof![0..500u32, any::<u32>()].prop_map(OutputOp::Reserve),
        3 => prop_oneof![0..500u32, (MAX_WINDOW - 1000)..=u32::MAX].prop_map(OutputOp::Increase),
        2 => prop_oneof![-1000..1000i32, Just(i32::MIN), Just(i32::MAX)].prop_map(OutputOp::Delta),
        1 => Just(OutputOp::Abort),
    ]
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
    let (mut credit, mut aborted) = (i64::from(initial), false);
    let shift = |credit: &mut i64, by: i64| {
        let would_be = *credit + by;
        if would_be > i64::from(MAX_WINDOW) {
            Err(FlowError::WindowOverflow { would_be })
        } else if would_be < i64::from(i32::MIN) {
            Err(FlowError::WindowUnderflow { would_be })
        } else {
            *credit = would_be;
            Ok(())
        }
    };
    for op in ops {
        match op {
            OutputOp::Reserve(max) => {
                let expected = if aborted {
                    Err(Aborted)
                } else {
                    let granted = if credit <= 0 { 0 } else { i64::from(max).min(credit) };
                    credit -= granted;
                    Ok(granted as u32)
                };
                prop_assert_eq!(window.try_reserve(max), expected);
            }
            OutputOp::Increase(n) => {
                let expected = if n == 0 {
                    Err(FlowError::ZeroIncrement)
                } else if aborted {
                    Ok(())
                } else {
                    shift(&mut credit, n.into())
                };
                prop_assert_eq!(window.increase(n), expected);
            }
            OutputOp::Delta(delta) => {
                let expected = if aborted { Ok(()) } else { shift(&mut credit, delta.into()) };
                prop_assert_eq!(window.apply_initial_window_delta(delta), expected);
            }
            OutputOp::Abort => {
                aborted = true;
                window.abort();
            }
        }
        let state = window.state();
        prop_assert_eq!(i64::from(state.window), credit);
        prop_assert_eq!(state.aborted, aborted);
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
}
