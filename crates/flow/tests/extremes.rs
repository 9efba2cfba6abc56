//! The windows at the edges of every argument's range: the CAS window and
//! both lock twins, fed the same calls, must decide the same, and no input
//! may reach a state the packed word cannot hold.
#![cfg(not(falconet_flow_loom))]

use falconet_flow::{
    Advance, FlowError, InputFlow, InputWindow, MAX_WINDOW, ParkingLotInputWindow, Release,
    StdInputWindow,
};

/// `with_threshold` on all three implementations: the same answer.
fn build_all(
    initial: u32,
    threshold: u32,
) -> Result<(InputWindow, ParkingLotInputWindow, StdInputWindow), FlowError> {
    let cas = <InputWindow as InputFlow>::with_threshold(initial, threshold);
    let parking_lot = ParkingLotInputWindow::with_threshold(initial, threshold);
    let std = StdInputWindow::with_threshold(initial, threshold);
    assert_eq!(cas.as_ref().err(), parking_lot.as_ref().err(), "{initial} {threshold}");
    assert_eq!(cas.as_ref().err(), std.as_ref().err(), "{initial} {threshold}");
    Ok((cas?, parking_lot?, std?))
}

#[test]
fn a_threshold_the_window_can_never_exceed_is_refused() {
    // Credit is announced once pending > threshold; pending never exceeds
    // the window for a peer that keeps to it, so a threshold at or above the
    // initial window would never announce: the peer stalls for good. And at
    // 2^31 or above, pending credit no longer fits its field.
    for (initial, threshold) in [
        (MAX_WINDOW, u32::MAX),
        (MAX_WINDOW, MAX_WINDOW),
        (MAX_WINDOW, 1 << 31),
        (65_535, 65_535),
        (1, 1),
        (0, 1),
    ] {
        assert_eq!(
            build_all(initial, threshold).err(),
            Some(FlowError::ThresholdTooLarge { threshold, initial }),
            "{initial} {threshold}"
        );
    }
    // The largest valid thresholds, and a zero window.
    for (initial, threshold) in [(MAX_WINDOW, MAX_WINDOW - 1), (65_535, 65_534), (1, 0), (0, 0)] {
        assert!(build_all(initial, threshold).is_ok(), "{initial} {threshold}");
    }
}

#[test]
fn a_peer_sending_past_what_it_was_told_cannot_flip_the_aborted_bit() {
    // The largest window with the largest threshold: a peer that sends the
    // whole window again while credit is still unannounced (Kestrel's rule
    // counts frames against the window including that credit).
    let (cas, parking_lot, std) = build_all(MAX_WINDOW, MAX_WINDOW - 1).unwrap();
    for window in [&cas as &dyn InputOps, &parking_lot, &std] {
        assert_eq!(window.advance(MAX_WINDOW), Ok(Advance::Accepted));
        assert_eq!(window.release(MAX_WINDOW - 1), Ok(Release::Pending));
        // Past what it was told (1 byte), within the local window.
        assert_eq!(window.advance(MAX_WINDOW - 1), Ok(Advance::Accepted));
        // 2^32 - 4 bytes of credit: more than one WINDOW_UPDATE may carry
        // (2^31 - 1). The update is capped and the rest stays pending.
        assert_eq!(window.release(MAX_WINDOW - 1), Ok(Release::Update(MAX_WINDOW)));
        let state = window.snapshot();
        assert!(!state.aborted, "the aborted bit was flipped");
        assert_eq!((state.pending, state.window), (MAX_WINDOW - 2, MAX_WINDOW - 1));
        assert_eq!(window.advance(MAX_WINDOW - 1), Ok(Advance::Accepted));
        assert_eq!(window.release(1), Ok(Release::Pending), "MAX - 1 is not > MAX - 1");
        assert_eq!(window.release(1), Ok(Release::Update(MAX_WINDOW)));
        assert!(!window.snapshot().aborted);
    }
}

/// The three windows behind one object-safe face, for the test above.
trait InputOps {
    fn advance(&self, n: u32) -> Result<Advance, FlowError>;
    fn release(&self, n: u32) -> Result<Release, FlowError>;
    fn snapshot(&self) -> falconet_flow::InputState;
}

impl<W: InputFlow> InputOps for W {
    fn advance(&self, n: u32) -> Result<Advance, FlowError> {
        self.try_advance(n)
    }
    fn release(&self, n: u32) -> Result<Release, FlowError> {
        InputFlow::release(self, n)
    }
    fn snapshot(&self) -> falconet_flow::InputState {
        self.state()
    }
}

#[test]
fn the_three_windows_agree_at_the_top_of_the_threshold_range() {
    // Whatever the constructor says, it says it for all three; if it
    // accepts, a peer's sends and the application's releases must get the
    // same answers from all three, and only `abort` may abort.
    let cas = <InputWindow as InputFlow>::with_threshold(MAX_WINDOW, u32::MAX);
    let parking_lot = ParkingLotInputWindow::with_threshold(MAX_WINDOW, u32::MAX);
    let std = StdInputWindow::with_threshold(MAX_WINDOW, u32::MAX);
    let (Ok(cas), Ok(parking_lot), Ok(std)) = (cas, parking_lot, std) else {
        return; // refused by all three (checked above as the same error)
    };
    let windows = [&cas as &dyn InputOps, &parking_lot, &std];
    for _ in 0..2 {
        let advanced: Vec<_> = windows.iter().map(|w| w.advance(MAX_WINDOW)).collect();
        let released: Vec<_> = windows.iter().map(|w| w.release(MAX_WINDOW)).collect();
        assert!(advanced.windows(2).all(|pair| pair[0] == pair[1]), "{advanced:?}");
        assert!(released.windows(2).all(|pair| pair[0] == pair[1]), "{released:?}");
    }
    let states: Vec<_> = windows.iter().map(|w| w.snapshot()).collect();
    assert!(states.iter().all(|state| !state.aborted), "aborted without abort(): {states:?}");
    assert!(states.windows(2).all(|pair| pair[0] == pair[1]), "{states:?}");
}
