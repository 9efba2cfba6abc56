//! StreamInput::with_threshold / reset_with_threshold at edge values (from
//! an independent review), the CAS window against its parking_lot twin, and the
//! server's shares (1/2, 1/4, 1/16, 1/256) of every small window.
#![cfg(not(falconet_flow_loom))]

use std::sync::Arc;

use falconet_flow::{InputFlow, InputWindow, MAX_WINDOW, ParkingLotInputWindow, StreamInput};

/// The (stream, connection) WINDOW_UPDATE of each release.
type Announced = Vec<(Option<u32>, Option<u32>)>;

fn run<W: InputFlow>(initial: u32, threshold: u32) -> Result<Announced, String> {
    let connection = Arc::new(W::with_threshold(MAX_WINDOW, 0).map_err(|e| format!("{e:?}"))?);
    let stream = StreamInput::with_threshold(connection, initial, threshold)
        .map_err(|e| format!("{e:?}"))?;
    let mut seen = Vec::new();
    let mut left = initial;
    let mut step = 1;
    while left > 0 {
        let n = step.min(left);
        stream.try_advance(n).map_err(|e| format!("{e:?}"))?;
        let updates = stream.release(n).map_err(|e| format!("{e:?}"))?;
        seen.push((updates.stream, updates.connection));
        left -= n;
        step = step.saturating_mul(3);
    }
    // Every released byte was announced or is still pending below the threshold.
    let announced: u64 = seen.iter().filter_map(|(s, _)| s.map(u64::from)).sum();
    let pending = u64::from(initial) - announced;
    if pending > u64::from(threshold) {
        return Err(format!("{pending} pending past the threshold {threshold}"));
    }
    Ok(seen)
}

#[test]
fn thresholds_at_the_edges_agree_between_twins() {
    for initial in
        [0u32, 1, 2, 3, 255, 256, 257, 65_535, 1 << 20, MAX_WINDOW - 1, MAX_WINDOW, MAX_WINDOW + 1]
    {
        for threshold in [
            0,
            1,
            initial / 256,
            initial / 16,
            initial / 4,
            initial / 2,
            initial.saturating_sub(1),
            initial,
            initial.saturating_add(1),
        ] {
            let cas = run::<InputWindow>(initial, threshold);
            let locked = run::<ParkingLotInputWindow>(initial, threshold);
            assert_eq!(cas, locked, "initial {initial} threshold {threshold}");
            let valid =
                initial <= MAX_WINDOW && (threshold < initial || (initial == 0 && threshold == 0));
            assert_eq!(cas.is_ok(), valid, "initial {initial} threshold {threshold}: {cas:?}");
        }
    }
}

#[test]
fn reset_with_threshold_after_use() {
    let connection = Arc::new(InputWindow::with_threshold(1 << 20, 1 << 19).unwrap());
    let mut stream = StreamInput::with_threshold(connection.clone(), 100, 50).unwrap();
    stream.try_advance(60).unwrap();
    assert_eq!(stream.release(60).unwrap().stream, Some(60));
    stream.try_advance(40).unwrap();
    // Reset with 40 bytes unreleased: the stream's window is new.
    stream.reset_with_threshold(1, 0).unwrap();
    stream.try_advance(1).unwrap();
    assert!(stream.try_advance(1).is_err(), "a window of 1");
    assert_eq!(stream.release(1).unwrap().stream, Some(1));
}
