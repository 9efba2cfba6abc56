//! Each HTTP/2 stream's own timeout clock. The connection's timer judges
//! the connection by its last progress (`conn.rs`), so a stream that
//! stalls while its siblings move would live as long as they do: a client
//! could keep one stream's upload stalled (and the application thread
//! reading it blocked) for ever by moving another, or an application keep
//! one stream unanswered while it answers the rest. So each stream also
//! has a clock, read at each of the timer's ticks:
//!
//! - the stream's *mark* is a count that grows with everything that moves
//!   it (a request frame for it that carries data the application wants or
//!   ends the request, a response frame, a byte of its lent body read by
//!   the application), with the bytes so far of a request frame
//!   for it still arriving (a slow link: a frame that takes longer than
//!   the I/O timeout to come whole is progress as it comes);
//! - its *holder* is who it waits for now: the client (a body it owes, the
//!   application wants, and it has credit to send), the application (an
//!   answer, a body it is behind on), or nobody to blame alone: a body
//!   held back by the connection's window, which another stream uses; a
//!   response waiting for the stream's credit (the client's flow control
//!   at work: a consumer it paused while it reads other streams); a
//!   request or an answer waiting for room among the connection's staged
//!   responses. The connection's timers judge those: its output clock
//!   and `io_timeout` close a client that takes nothing at all;
//! - a tick that finds the mark moved or the holder changed starts the
//!   clock again, at that tick; one that finds neither changed for the
//!   holder's limit (`io_timeout` for the client, `response_timeout` for
//!   the application) finds the stream late.
//!
//! A tick that finds the connection stood still (its output over the
//! limit and no turn since the last tick: no input read, no response
//! pumped, so no stream could move) *holds* every clock: that time counts
//! against no one, and no clock restarts.
//!
//! A stream's clock starts at the first tick after its last change, so it
//! is late by up to a tick, never early; a change of holder restarts it,
//! so an application that reads a body long after it came does not leave
//! the client less than its full time for the next bytes.

/// Who a stream waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Holder {
    /// Nobody to blame alone: its body waits for the connection's window,
    /// which other streams hold, or its request or response for the
    /// stream's credit or for room.
    Nobody,
    /// Request body bytes the client owes (and the application wants).
    Client,
    /// An answer, or a lent body's bytes the application has not read.
    Application,
}

/// A stream's mark: what only grows while it moves, and the bytes of a
/// frame of it still arriving.
pub(crate) type Mark = (u64, u64);

/// One stream's clock (see the module docs).
#[derive(Clone, Copy, Debug)]
pub(crate) struct StreamClock {
    /// The stream's mark at the last tick; `None` before the first.
    mark: Option<Mark>,
    holder: Holder,
    /// The tick (ms on the timer's clock) that last found a change, moved
    /// on by the time of each [`hold`](Self::hold).
    since: u64,
    /// The last tick or hold.
    last: u64,
}

impl StreamClock {
    /// A clock no tick has read yet: the first starts it.
    pub(crate) const fn new() -> Self {
        Self { mark: None, holder: Holder::Nobody, since: 0, last: 0 }
    }

    /// A tick at `now` (ms) that found the connection stood still (its
    /// output waiting, nothing read): the time since the last tick counts
    /// against no one, and the clock is not reset.
    pub(crate) fn hold(&mut self, now: u64) {
        if self.mark.is_some() {
            self.since = self.since.saturating_add(now.saturating_sub(self.last));
        }
        self.last = now;
    }

    /// The tick at `now` (ms) finds the stream at `mark`, waiting for
    /// `holder`. Returns the holder if it has kept the stream waiting for
    /// its limit (`io` for the client, `response` for the application;
    /// `None`: no limit) without a change; the clock is then not reset,
    /// so the caller acts on it once and ends the stream.
    pub(crate) fn tick(
        &mut self,
        now: u64,
        mark: Mark,
        holder: Holder,
        io: u64,
        response: Option<u64>,
    ) -> Option<Holder> {
        self.last = now;
        if self.mark != Some(mark) || self.holder != holder {
            *self = Self { mark: Some(mark), holder, since: now, last: now };
            return None;
        }
        let limit = match holder {
            Holder::Nobody => None,
            Holder::Client => Some(io),
            Holder::Application => response,
        }?;
        (now.saturating_sub(self.since) >= limit).then_some(holder)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IO: u64 = 1_000;
    const RESPONSE: Option<u64> = Some(3_000);

    #[test]
    fn the_first_tick_starts_the_clock_even_long_after_the_stream_began() {
        let mut clock = StreamClock::new();
        assert_eq!(clock.tick(u64::MAX - 1, (0, 0), Holder::Client, IO, RESPONSE), None);
        assert_eq!(clock.tick(u64::MAX, (0, 0), Holder::Client, IO, RESPONSE), None);
    }

    #[test]
    fn a_holder_is_late_at_its_limit_and_not_a_tick_before() {
        for (holder, limit) in [(Holder::Client, IO), (Holder::Application, RESPONSE.unwrap())] {
            let mut clock = StreamClock::new();
            assert_eq!(clock.tick(500, (7, 0), holder, IO, RESPONSE), None);
            assert_eq!(
                clock.tick(500 + limit - 1, (7, 0), holder, IO, RESPONSE),
                None,
                "{holder:?}"
            );
            assert_eq!(clock.tick(500 + limit, (7, 0), holder, IO, RESPONSE), Some(holder));
            // Not reset: a caller that did not end the stream hears again.
            assert_eq!(clock.tick(500 + limit + 1, (7, 0), holder, IO, RESPONSE), Some(holder));
        }
    }

    #[test]
    fn progress_restarts_the_clock() {
        let mut clock = StreamClock::new();
        clock.tick(0, (1, 0), Holder::Client, IO, RESPONSE);
        assert_eq!(clock.tick(999, (2, 0), Holder::Client, IO, RESPONSE), None);
        assert_eq!(clock.tick(1_998, (2, 0), Holder::Client, IO, RESPONSE), None);
        assert_eq!(clock.tick(1_999, (2, 0), Holder::Client, IO, RESPONSE), Some(Holder::Client));
    }

    #[test]
    fn a_frame_arriving_is_a_change_and_its_completion_too() {
        let mut clock = StreamClock::new();
        clock.tick(0, (4, 0), Holder::Client, IO, RESPONSE);
        assert_eq!(clock.tick(900, (4, 10), Holder::Client, IO, RESPONSE), None);
        assert_eq!(clock.tick(1_800, (4, 300), Holder::Client, IO, RESPONSE), None);
        // Whole: the count grows by one, what arrives goes back to none.
        assert_eq!(clock.tick(2_700, (5, 0), Holder::Client, IO, RESPONSE), None);
        assert_eq!(clock.tick(3_699, (5, 0), Holder::Client, IO, RESPONSE), None);
        assert_eq!(clock.tick(3_700, (5, 0), Holder::Client, IO, RESPONSE), Some(Holder::Client));
    }

    #[test]
    fn a_mark_that_wraps_is_still_a_change() {
        let mut clock = StreamClock::new();
        clock.tick(0, (u64::MAX, 0), Holder::Client, IO, RESPONSE);
        assert_eq!(clock.tick(IO, (0, 0), Holder::Client, IO, RESPONSE), None);
        assert_eq!(clock.tick(2 * IO - 1, (0, 0), Holder::Client, IO, RESPONSE), None);
    }

    #[test]
    fn a_new_holder_gets_its_whole_time() {
        let mut clock = StreamClock::new();
        clock.tick(0, (5, 0), Holder::Application, IO, RESPONSE);
        // The application held it 2.9 s, then the client owes: its full
        // second counts from that tick, not from the last progress.
        assert_eq!(clock.tick(2_900, (5, 0), Holder::Client, IO, RESPONSE), None);
        assert_eq!(clock.tick(3_899, (5, 0), Holder::Client, IO, RESPONSE), None);
        assert_eq!(clock.tick(3_900, (5, 0), Holder::Client, IO, RESPONSE), Some(Holder::Client));
    }

    #[test]
    fn nobody_and_an_unlimited_application_are_never_late() {
        let mut clock = StreamClock::new();
        clock.tick(0, (5, 0), Holder::Nobody, IO, RESPONSE);
        assert_eq!(clock.tick(u64::MAX, (5, 0), Holder::Nobody, IO, RESPONSE), None);
        let mut clock = StreamClock::new();
        clock.tick(0, (5, 0), Holder::Application, IO, None);
        assert_eq!(clock.tick(u64::MAX, (5, 0), Holder::Application, IO, None), None);
    }

    #[test]
    fn a_clock_that_goes_backwards_is_not_late() {
        let mut clock = StreamClock::new();
        clock.tick(5_000, (5, 0), Holder::Client, IO, RESPONSE);
        assert_eq!(clock.tick(0, (5, 0), Holder::Client, IO, RESPONSE), None);
    }

    #[test]
    fn time_held_counts_against_no_one() {
        let mut clock = StreamClock::new();
        clock.hold(50); // before the first tick: nothing to move
        clock.tick(100, (1, 0), Holder::Client, IO, RESPONSE);
        clock.hold(600);
        clock.hold(900);
        // 800 ms held: the client has had 100 ms of its second.
        assert_eq!(clock.tick(1_000, (1, 0), Holder::Client, IO, RESPONSE), None);
        assert_eq!(clock.tick(1_899, (1, 0), Holder::Client, IO, RESPONSE), None);
        assert_eq!(clock.tick(1_900, (1, 0), Holder::Client, IO, RESPONSE), Some(Holder::Client));
    }
}
