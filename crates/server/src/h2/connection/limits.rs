//! The limits against floods (rapid reset, empty and ignored frames,
//! control frames queued faster than they are read): each costs the
//! client from a budget, and an empty budget closes the connection.

use super::*;

impl Connection {
    pub(super) fn spend_budget(&mut self) {
        if !self.budget.spend() {
            self.fail(ErrorCode::ENHANCE_YOUR_CALM, "too many resets");
        }
    }

    /// Spends one of the allowance of frames the server ignores; past it,
    /// the connection fails.
    pub(super) fn ignore_frame(&mut self) {
        if self.ignored_allowance == 0 {
            return self.fail(ErrorCode::ENHANCE_YOUR_CALM, "ignored frame flood");
        }
        self.ignored_allowance -= 1;
    }

    /// Counts a frame that does no work; true (and the connection
    /// failed) past the limit.
    pub(super) fn empty_frame(&mut self) -> bool {
        self.empty_frames += 1;
        if self.empty_frames > self.config.max_empty_frames {
            self.fail(ErrorCode::ENHANCE_YOUR_CALM, "empty frame flood");
            return true;
        }
        false
    }

    /// An acknowledgement or reset the client made us send was queued, from
    /// `start` in the output.
    pub(super) fn control_queued(&mut self, start: usize) {
        self.answer_bytes += (self.out.len() - start) as u64;
        self.queued_control += 1;
        if self.queued_control > self.config.max_queued_control.max(1) {
            self.fail(ErrorCode::ENHANCE_YOUR_CALM, "control frame flood");
        }
    }
}
