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
//!   Advancing, releasing (with the update decision and the pending reset),
//!   aborting: each is one CAS of the whole state, so no step of one can
//!   interleave with another: the gap in Kestrel's unmerged CAS attempt
//!   (pending credit in a second CAS, a plain bool flag, overflow only
//!   debug-asserted) cannot happen here.
//! - [`OutputWindow`]: a signed 32-bit window (negative after a SETTINGS
//!   change, 6.9.2), aborted, and a waiting bit for the async
//!   [`reserve`](OutputWindow::reserve) (`output.rs`).
//! - [`StreamInput`]: a stream's window composed with its connection's:
//!   both count a frame or neither does, and an abort returns the stream's
//!   unread bytes to the connection exactly once.
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
//! threshold is not below its initial size) is a local configuration error,
//! never sent. [`Aborted`] refuses reservations on an aborted send
//! window. [`StreamFlowError`] says which window ([`Scope`]) refused a
//! frame. No operation panics on bad input, and a refused operation changes
//! nothing.

#![forbid(unsafe_code)]

mod error;
mod input;
mod input_state;
mod locked;
mod output;
mod output_state;
mod primitive;
mod stream;
mod traits;

pub use error::{ErrorCode, FlowError};
pub use input::InputWindow;
pub use input_state::{Advance, InputState, MAX_WINDOW, Release};
pub use locked::{
    LockedInputWindow, LockedOutputWindow, ParkingLotInputWindow, ParkingLotOutputWindow,
    StateLock, StdInputWindow, StdOutputWindow,
};
pub use output::{OutputWindow, Reserve};
pub use output_state::{Aborted, OutputState};
pub use stream::{Scope, StreamFlowError, StreamInput, Updates};
pub use traits::{InputFlow, OutputFlow};

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
