//! No sequence of calls, with arguments biased to the edges, makes
//! a window (CAS or twins) panic, and StreamInput's two windows agree with
//! a composition of the lock twins.
#![cfg(not(falconet_flow_loom))]

use std::sync::Arc;

use falconet_flow::{InputFlow, InputWindow, MAX_WINDOW, StdInputWindow, StreamInput};
use proptest::prelude::*;

fn edge() -> impl Strategy<Value = u32> {
    prop_oneof![
        Just(0u32),
        Just(1),
        Just(MAX_WINDOW - 1),
        Just(MAX_WINDOW),
        Just(MAX_WINDOW + 1),
        Just(u32::MAX),
        Just(MAX_WINDOW / 2),
        Just(MAX_WINDOW / 2 + 1),
        any::<u32>(),
        0u32..100,
    ]
}

#[derive(Clone, Debug)]
enum Op {
    Advance(u32),
    Release(u32),
    Abort,
    Disable,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => edge().prop_map(Op::Advance),
        4 => edge().prop_map(Op::Release),
        1 => Just(Op::Abort),
        1 => Just(Op::Disable),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn stream_input_cas_and_twins_agree_and_never_panic(
        conn_initial in edge(),
        conn_threshold in edge(),
        stream_initial in edge(),
        ops in proptest::collection::vec(op(), 0..40),
    ) {
        let cas_conn = <InputWindow as InputFlow>::with_threshold(conn_initial, conn_threshold);
        let twin_conn = StdInputWindow::with_threshold(conn_initial, conn_threshold);
        prop_assert_eq!(cas_conn.as_ref().err(), twin_conn.as_ref().err());
        let (Ok(cas_conn), Ok(twin_conn)) = (cas_conn, twin_conn) else { return Ok(()) };
        let cas = StreamInput::new(Arc::new(cas_conn), stream_initial);
        let twin = StreamInput::new(Arc::new(twin_conn), stream_initial);
        prop_assert_eq!(cas.as_ref().err(), twin.as_ref().err());
        let (Ok(cas), Ok(twin)) = (cas, twin) else { return Ok(()) };
        for op in ops {
            match op {
                Op::Advance(n) => prop_assert_eq!(format!("{:?}", cas.try_advance(n)), format!("{:?}", twin.try_advance(n))),
                Op::Release(n) => prop_assert_eq!(cas.release(n), twin.release(n)),
                Op::Abort => prop_assert_eq!(cas.abort(), twin.abort()),
                Op::Disable => { cas.disable_updates(); twin.disable_updates(); }
            }
            prop_assert_eq!(cas.stream().state(), twin.stream().state());
            prop_assert_eq!(cas.connection().state(), twin.connection().state());
        }
    }

    #[test]
    fn a_window_with_reset_never_panics(
        initial in edge(), threshold in edge(), again in edge(),
        ops in proptest::collection::vec(op(), 0..60),
    ) {
        let Ok(mut cas) = <InputWindow as InputFlow>::with_threshold(initial, threshold) else { return Ok(()) };
        let Ok(twin) = StdInputWindow::with_threshold(initial, threshold) else { panic!("twin refused") };
        for op in &ops {
            match *op {
                Op::Advance(n) => prop_assert_eq!(cas.try_advance(n), twin.try_advance(n)),
                Op::Release(n) => prop_assert_eq!(cas.release(n), twin.release(n)),
                Op::Abort => prop_assert_eq!(cas.abort(), twin.abort()),
                Op::Disable => { cas.disable_updates(); twin.disable_updates(); }
            }
        }
        if cas.reset(again).is_ok() {
            for op in &ops {
                if let Op::Advance(n) = *op { let _ = cas.try_advance(n); }
                if let Op::Release(n) = *op { let _ = cas.release(n); }
            }
        }
    }
}

/// A reset stream side is a new stream of the same connection: a fresh
/// window of `initial`, updates enabled again, the connection's credit as
/// it was; a size past 2^31-1 changes nothing.
#[test]
fn reset_makes_a_new_stream_of_the_same_connection() {
    let connection = std::sync::Arc::new(falconet_flow::InputWindow::new(1 << 20).unwrap());
    let mut stream = falconet_flow::StreamInput::new(connection.clone(), 100).unwrap();
    stream.try_advance(60).unwrap();
    stream.release(60).unwrap();
    stream.disable_updates();
    assert_eq!(stream.reset(200), Ok(None), "nothing unread to return");
    assert_eq!(stream.stream().available(), 200);
    assert_eq!(connection.available(), 1 << 20);
    stream.try_advance(150).unwrap();
    assert_eq!(stream.release(150).unwrap().stream, Some(150), "updates enabled again");
    assert!(stream.reset(1 << 31).is_err());
    assert_eq!(stream.stream().available(), 200);
}

/// A stream side's own threshold, at its edges: credit is announced once
/// strictly more than `threshold` bytes are pending (0: every release; just
/// under the window: only the last byte's release); a threshold of the
/// whole window or more is refused, at construction and at reset (which
/// then changes nothing).
#[test]
fn stream_thresholds_at_their_edges() {
    use falconet_flow::{FlowError, InputWindow, StreamInput};
    let connection = std::sync::Arc::new(InputWindow::with_threshold(1 << 20, 0).unwrap());
    let mut eager = StreamInput::with_threshold(connection.clone(), 100, 0).unwrap();
    eager.try_advance(1).unwrap();
    let updates = eager.release(1).unwrap();
    assert_eq!((updates.stream, updates.connection), (Some(1), Some(1)));

    let lazy = StreamInput::with_threshold(connection.clone(), 100, 99).unwrap();
    lazy.try_advance(100).unwrap();
    assert_eq!(lazy.release(99).unwrap().stream, None, "99 pending is not past 99");
    assert_eq!(lazy.release(1).unwrap().stream, Some(100));

    assert!(matches!(
        StreamInput::with_threshold(connection.clone(), 100, 100),
        Err(FlowError::ThresholdTooLarge { .. })
    ));
    assert!(StreamInput::with_threshold(connection.clone(), 0, 0).is_ok(), "both 0");
    assert!(eager.reset_with_threshold(200, 200).is_err());
    assert_eq!(eager.stream().available(), 100, "a refused reset changes nothing");
    eager.reset_with_threshold(200, 150).unwrap();
    eager.try_advance(151).unwrap();
    assert_eq!(eager.release(150).unwrap().stream, None);
    assert_eq!(eager.release(1).unwrap().stream, Some(151));
}

/// A stream side reset while its old stream holds bytes nobody consumed
/// (its reader gone, never aborted): they go back to the connection, as
/// an abort would return them, once; a second reset returns nothing. The
/// connection's credit was lost for good before (a day-one review's
/// find), and its window shrank with each such reuse.
#[test]
fn reset_returns_the_old_streams_unread_bytes_to_the_connection() {
    use falconet_flow::{InputWindow, StreamInput};
    let connection = std::sync::Arc::new(InputWindow::new(100).unwrap());
    let mut stream = StreamInput::new(connection.clone(), 100).unwrap();
    stream.try_advance(60).unwrap();
    stream.release(10).unwrap();
    assert_eq!(stream.reset(100), Ok(Some(60)), "the 50 unread plus the 10 pending, announced");
    assert_eq!(connection.state().window, 100);
    assert_eq!(connection.state().pending, 0);
    assert_eq!(stream.reset(100), Ok(None));
    // Below the connection's threshold: returned, not yet announced.
    stream.try_advance(20).unwrap();
    assert_eq!(stream.reset(100), Ok(None));
    assert_eq!((connection.state().window, connection.state().pending), (100, 20));
    // An aborted stream's bytes are not returned twice.
    stream.try_advance(30).unwrap();
    assert_eq!(stream.abort(), Ok(None), "50 pending: not past half");
    assert_eq!(stream.reset(100), Ok(None));
    assert_eq!((connection.state().window, connection.state().pending), (100, 50));
}

/// `reset` when the connection's accounting disagrees (a caller released
/// the old stream's bytes on the connection directly): the abort's
/// `OverRelease` comes out, the stream is new all the same, and the
/// connection is not credited twice.
#[test]
fn reset_after_a_release_on_the_connection_directly_is_an_error_and_a_new_stream() {
    use falconet_flow::{FlowError, InputWindow, StreamInput};
    let connection = std::sync::Arc::new(InputWindow::new(100).unwrap());
    let mut stream = StreamInput::new(connection.clone(), 100).unwrap();
    stream.try_advance(60).unwrap();
    connection.release(60).unwrap(); // the misuse: behind the stream's back
    let before = connection.state();
    assert!(matches!(stream.reset(100), Err(FlowError::OverRelease { .. })));
    assert_eq!(connection.state(), before, "not credited twice");
    assert_eq!(stream.stream().available(), 100, "a new stream all the same");
    stream.try_advance(100).unwrap();
    assert_eq!(stream.release(100).unwrap().stream, Some(100));
}
