//! The receive window's sequential behaviour at the edges, against the
//! rules (`ParkingLotInputWindow` applies `InputState`'s functions under a
//! lock). Every sequence of up to three operations over edge amounts, for
//! edge windows and thresholds (among them the edges of the former
//! wait-free window: a 1 MiB release, a 256 MiB window), plus long random
//! sequences over the same edge amounts.
#![cfg(not(falconet_flow_loom))]

use falconet_flow::{InputFlow, InputWindow, MAX_WINDOW, ParkingLotInputWindow};
use proptest::prelude::*;

/// The largest release the former wait-free window applied blind.
const AMOUNT: u32 = 1 << 20;
/// The largest window that was wait-free.
const WFMW: u32 = (1 << 28) - 1;

#[derive(Clone, Copy, Debug)]
enum Op {
    Advance(u32),
    Release(u32),
    Abort,
    Disable,
}

fn initials() -> Vec<u32> {
    vec![
        0,
        1,
        2,
        3,
        AMOUNT - 1,
        AMOUNT,
        AMOUNT + 1,
        2 * AMOUNT + 1,
        WFMW - 1,
        WFMW,
        WFMW + 1,
        MAX_WINDOW,
    ]
}

fn thresholds(initial: u32) -> Vec<u32> {
    let mut t = vec![0, initial / 2, initial.saturating_sub(1), AMOUNT, AMOUNT - 1];
    t.retain(|&t| t < initial.max(1));
    t.sort_unstable();
    t.dedup();
    t
}

fn amounts(initial: u32, threshold: u32) -> Vec<u32> {
    let mut a = vec![
        0,
        1,
        threshold,
        threshold + 1,
        initial.saturating_sub(1),
        initial,
        initial.saturating_add(1),
        initial / 2 + 1,
        AMOUNT - 1,
        AMOUNT,
        AMOUNT + 1,
        MAX_WINDOW,
        u32::MAX,
    ];
    a.sort_unstable();
    a.dedup();
    a
}

fn run(initial: u32, threshold: u32, ops: &[Op]) -> Result<(), String> {
    let fast = InputWindow::with_threshold(initial, threshold).unwrap();
    let rules = ParkingLotInputWindow::with_threshold(initial, threshold).unwrap();
    for (i, op) in ops.iter().enumerate() {
        let (got, want) = match *op {
            Op::Advance(n) => {
                (format!("{:?}", fast.try_advance(n)), format!("{:?}", rules.try_advance(n)))
            }
            Op::Release(n) => (format!("{:?}", fast.release(n)), format!("{:?}", rules.release(n))),
            Op::Abort => (format!("{:?}", fast.abort()), format!("{:?}", InputFlow::abort(&rules))),
            Op::Disable => {
                fast.disable_updates();
                InputFlow::disable_updates(&rules);
                (String::new(), String::new())
            }
        };
        let (gs, ws) = (fast.state(), InputFlow::state(&rules));
        if got != want || gs != ws {
            return Err(format!(
                "initial {initial} threshold {threshold} ops {:?}: op {i}: {got} vs rules {want}; \
                 state {gs:?} vs rules {ws:?}",
                &ops[..=i]
            ));
        }
    }
    Ok(())
}

#[test]
fn every_three_operations_at_the_edges_agree_with_the_rules() {
    let mut checked = 0u64;
    for initial in initials() {
        for threshold in thresholds(initial) {
            let mut ops = vec![Op::Abort, Op::Disable];
            for n in amounts(initial, threshold) {
                ops.push(Op::Advance(n));
                ops.push(Op::Release(n));
            }
            for a in &ops {
                for b in &ops {
                    for c in &ops {
                        run(initial, threshold, &[*a, *b, *c]).unwrap();
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked > 100_000, "{checked}");
}

fn edge_case() -> impl Strategy<Value = (u32, u32, Vec<Op>)> {
    proptest::sample::select(initials())
        .prop_flat_map(|initial| (Just(initial), proptest::sample::select(thresholds(initial))))
        .prop_flat_map(|(initial, threshold)| {
            let amounts = amounts(initial, threshold);
            let op = prop_oneof![
                4 => proptest::sample::select(amounts.clone()).prop_map(Op::Advance),
                4 => proptest::sample::select(amounts).prop_map(Op::Release),
                1 => Just(Op::Abort),
                1 => Just(Op::Disable),
            ];
            (Just(initial), Just(threshold), proptest::collection::vec(op, 1..16))
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]
    #[test]
    fn long_sequences_at_the_edges_agree_with_the_rules((initial, threshold, ops) in edge_case()) {
        run(initial, threshold, &ops).map_err(TestCaseError::fail)?;
    }
}
