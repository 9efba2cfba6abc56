//! HTTP/2 (RFC 9113), layer by layer. The server speaks it on the same
//! port as HTTP/1.1: a connection that opens with the preface (h2c with
//! prior knowledge, RFC 9113 3.3) is served by these layers, with the same
//! application API (`serve.rs`). `docs/rfc9113.md` in the repository maps
//! each rule of RFC 9113 and RFC 7541 to the code that keeps it and the
//! test that shows it.
//!
//! - [`frame`]: frames decoded into borrowed views with every per-frame
//!   rule of section 6 as a typed [`frame::FrameError`], and the frames a
//!   server sends, encoded.
//! - [`hpack`]: field compression (RFC 7541), bounded against HPACK bombs.
//! - [`head`]: a request's fields, checked against section 8 while they
//!   are decoded.
//! - [`connection`]: one connection's state machine (preface, SETTINGS,
//!   stream states, field blocks, flow control on `falconet-flow`, the
//!   limits against known attacks), driven with bytes like [`Session`](crate::Session).

mod budget;
mod clock;
pub mod connection;
pub mod frame;
pub mod head;
pub mod hpack;
mod recent;
mod roomy;
pub(crate) mod serve;
pub(crate) mod upgrade;
