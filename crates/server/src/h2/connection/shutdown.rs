//! Closing the connection: the graceful two-step GOAWAY (RFC 9113 §6.8)
//! and an abort.

use super::*;

/// The largest client stream id (section 5.1.1).
const MAX_STREAM_ID: u32 = (1 << 31) - 1;

impl Connection {
    /// Graceful shutdown in two steps (RFC 9113 6.8): a GOAWAY naming
    /// 2^31-1 and a PING tell the client to open no more streams; the
    /// PING's acknowledgement, a round trip later, means every stream it
    /// opened before it saw the GOAWAY has arrived, and the final GOAWAY
    /// names the last of them. Those streams finish; newer ones are ignored.
    pub fn shutdown(&mut self) {
        if self.draining || self.phase == Phase::Closed {
            return;
        }
        self.draining = true;
        frame::encode_goaway(&mut self.out, MAX_STREAM_ID, ErrorCode::NO_ERROR, b"");
        frame::encode_ping(&mut self.out, SHUTDOWN_PING, false);
    }

    /// The connection is closing while idle (keep-alive timeout, or the
    /// server stopping): the final GOAWAY at once, without the round trip.
    pub fn goodbye(&mut self) {
        self.draining = true;
        self.final_goaway();
    }

    /// A graceful shutdown whose PING has not come back in time (a client
    /// that does not answer PINGs, or a long round trip): the final GOAWAY
    /// now, naming the last stream seen, so the client learns which
    /// streams may have been processed. Returns whether it queued one.
    pub fn finish_shutdown(&mut self) -> bool {
        if !self.draining || self.goaway.is_some() || self.phase == Phase::Closed {
            return false;
        }
        self.final_goaway();
        true
    }

    /// The last stream id a GOAWAY names: the last seen, but never more
    /// than a final GOAWAY already named (6.8: the id must not increase;
    /// streams opened after it are ignored, not processed).
    pub(super) fn goaway_id(&self) -> u32 {
        self.goaway.map_or(self.last_stream, |last| last.min(self.last_stream))
    }

    /// Whether `id` is a stream the client opened after our final GOAWAY:
    /// its frames are ignored (6.8), DATA still counted against the
    /// connection's window.
    pub(super) fn ignored(&self, id: u32) -> bool {
        self.goaway.is_some_and(|last| id > last)
    }

    /// The shutdown PING came back: the final GOAWAY.
    pub(super) fn final_goaway(&mut self) {
        if self.goaway.is_none() && self.phase != Phase::Closed {
            frame::encode_goaway(&mut self.out, self.last_stream, ErrorCode::NO_ERROR, b"");
            self.goaway = Some(self.last_stream);
        }
    }

    /// Ends the connection now with GOAWAY(`code`) (a timeout, a server
    /// that must close): nothing more is read.
    pub fn abort(&mut self, code: ErrorCode) {
        self.fail(code, "closed by the server");
    }
}
