//! HTTP/2 flow-control windows (RFC 9113 section 6.9) whose whole state is
//! one `AtomicU64`, changed by a single compare-and-swap.
//!
//! ```
//! use falconet_flow::{Advance, InputWindow, OutputWindow, Release};
//!
//! // Receiving: count DATA frames, give credit back, announce it in bulk.
//! let input = InputWindow::new(65_535)?;
//! assert_eq!(input.try_advance(32_768)?, Advance::Accepted);
//! assert_eq!(input.release(32_768)?, Release::Update(32_768)); // send WINDOW_UPDATE
//!
//! // Sending: take credit, partial grants, WINDOW_UPDATE, SETTINGS shifts.
//! let output = OutputWindow::new(65_535)?;
//! assert_eq!(output.try_reserve(100_000)?, 65_535);
//! output.increase(1_000)?;
//! assert_eq!(output.try_reserve(4_096)?, 1_000);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What is in the word
//!
//! - [`InputWindow`]: window (31 bits), pending update credit (31 bits),
//!   aborted, updates-disabled: 64 bits exactly (`input.rs` draws it).
//!   Every step changes the whole state at once: the update decision and
//!   the pending reset are one CAS, "aborted" and "updates disabled" are
//!   bits of the word, so the gap in Kestrel's unmerged CAS attempt
//!   (pending credit in a second CAS, a plain bool flag, overflow only
//!   debug-asserted) cannot happen here. Every frame, release and abort is
//!   one CAS of the sequential rules, aimed by a load; a refused one
//!   changes nothing (`input.rs` says why releases are no longer applied
//!   blind).
//! - [`OutputWindow`]: a signed 32-bit window of free credit (negative
//!   after a SETTINGS change, 6.9.2), the credit *held* (taken by
//!   [`try_hold`](OutputWindow::try_hold), not yet sent or given back; 31
//!   bits) and aborted: 64 bits exactly (`output.rs`). A flag beside the
//!   word says a task waits in the async [`reserve`](OutputWindow::reserve).
//! - [`StreamInput`]: a stream's window composed with its connection's:
//!   both count a frame or neither does, and an abort returns the stream's
//!   unread bytes to the connection exactly once.
//! - [`StreamOutput`]: a stream's send window composed with its
//!   connection's: a grant takes `min(max, stream, connection)` from both
//!   or neither, and held credit is sent or given back on both
//!   (`stream_output.rs` states what the two steps guarantee).
//! - [`Grant`] and [`StreamGrant`]: held credit as a token that settles
//!   what it sends and gives the rest back when dropped.
//!
//! # Held credit and the 2^31-1 limit
//!
//! RFC 9113 6.9.1 counts a send window as credit minus bytes *sent*, and a
//! WINDOW_UPDATE that takes it past 2^31-1 is a FLOW_CONTROL_ERROR. Credit
//! that is held but not sent still counts for the peer, so updates are
//! checked against free plus held credit ([`OutputState::flow_window`]),
//! and a give-back, which only moves credit from held to free, can never
//! overflow (`output_state.rs` draws the transitions). Settle held bytes as
//! sent before the frame can reach the peer.
//!
//! ```
//! use std::sync::Arc;
//! use falconet_flow::{MAX_WINDOW, OutputWindow, StreamOutput};
//!
//! let connection = Arc::new(OutputWindow::new(MAX_WINDOW - 100)?);
//! let stream = StreamOutput::new(connection.clone(), MAX_WINDOW)?;
//! let mut grant = stream.try_grant(u32::MAX)?;  // all of the connection
//! connection.increase(100)?;                    // the peer's window: 2^31-1
//! assert!(connection.increase(1).is_err());     // FLOW_CONTROL_ERROR
//! grant.sent(16_384)?;                          // one frame went out
//! drop(grant);                                  // the rest comes back
//! assert_eq!(connection.available(), MAX_WINDOW as i32 - 16_384);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The rules themselves live once, as sequential state machines
//! ([`InputState`], [`OutputState`]); the CAS windows and the lock-based
//! twins ([`ParkingLotInputWindow`], [`StdInputWindow`] and their output
//! counterparts) all apply them, behind the [`InputFlow`] and
//! [`OutputFlow`] traits.
//!
//! # Errors
//!
//! [`FlowError`], each variant with its RFC 9113 code ([`FlowError::code`]):
//! `WindowExceeded`, `WindowOverflow`, `WindowUnderflow`, `OverRelease` and
//! `InitialTooLarge` are FLOW_CONTROL_ERROR, `ZeroIncrement` is
//! PROTOCOL_ERROR; `ThresholdTooLarge` (a receive window whose update
//! threshold is not below its initial size) is a local configuration error
//! and `NotHeld` (more send credit settled than is held) a caller's
//! accounting bug, neither ever sent. [`Aborted`] refuses reservations and
//! holds on an aborted send window. [`StreamFlowError`] says which window ([`Scope`]) refused a
//! frame. No operation panics on bad input, and a refused operation changes
//! nothing: no other thread ever sees it (one exception, a caller's bug:
//! when bytes of a [`StreamInput`] were released on its connection
//! directly, the stream's `release` or `abort` that the connection then
//! refuses has already settled the stream's own window).

#![forbid(unsafe_code)]

mod error;
mod grant;
mod input;
mod input_state;
mod locked;
mod output;
mod output_state;
mod primitive;
mod stream;
mod stream_output;
mod traits;

pub use error::{ErrorCode, FlowError};
pub use grant::Grant;
pub use input::InputWindow;
pub use input_state::{Advance, InputState, MAX_WINDOW, Release};
pub use locked::{
    LockedInputWindow, LockedOutputWindow, ParkingLotInputWindow, ParkingLotOutputWindow,
    StateLock, StdInputWindow, StdOutputWindow,
};
pub use output::{OutputWindow, Reserve};
pub use output_state::{Aborted, OutputState};
pub use stream::{Scope, StreamFlowError, StreamInput, Updates};
pub use stream_output::{Granting, StreamGrant, StreamOutput};
pub use traits::{InputFlow, OutputFlow};

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
