//! `Expect: 100-continue` on a lent HTTP/1 body: one atomic word.
//!
//! As hyper does, the `100 (Continue)` that asks the client for a lent
//! body goes out only once the application reads the body, so that a
//! request refused unread (a 404, a 401) does not cost its client the
//! upload. The body's reader, the response's head and the worker each
//! move one word ([`ContinueWord`]):
//!
//! ```text
//!   NONE  --lend, expected--> OWED    the client waits; the body is unread
//!   OWED  --first read------> WANTED  (the reader wakes the worker)
//!   WANTED --worker, no head of the response yet--> NONE, writes the 100
//!   OWED | WANTED --the response's head ends on the worker--> NONE
//!   OWED | WANTED --the response's head ends elsewhere--> IN_FLIGHT
//!   IN_FLIGHT --the worker takes what the responder wrote--> NONE
//! ```
//!
//! Where the head ends, `WANTED` puts the 100 in front of the head, and
//! `OWED` sends none and makes the head say `Connection: close` (the
//! client, told nothing, may or may not send the body: the connection
//! cannot be read past it).
//!
//! The head's end and the worker's write each take `WANTED` by one
//! read-modify-write, so exactly one of them answers it. A responder on
//! another thread settles the word before its head goes into its output
//! pipe, and the worker reads that head from the pipe (Acquire, after the
//! responder's Release), so the responder's move precedes any later one
//! of the worker's: a worker that won the word has not seen a byte of
//! that head, and its 100 goes first.
//!
//! Until the word is `NONE` the client waits for us and owes no body
//! bytes, so no I/O timeout may blame it ([`ContinueWord::pending`]).
//! That is why a head that ends on another thread leaves `IN_FLIGHT`,
//! not `NONE`: until the worker has taken it from the pipe, the client
//! has heard nothing (neither the 100 nor the final answer) and still
//! waits, however long the application took.
//!
//! The loom models below (cfg `falconet_server_loom`, run by
//! `scripts/loom.sh`) check each race: a read against the worker's 100
//! and the head's end, on the worker and on another thread, with the
//! timer's question asked at every step of the worker; a proptest model
//! (`model` below) follows random sequences of every move against the
//! diagram above.

#[cfg(falconet_server_loom)]
use loom::sync::atomic::{AtomicU8, Ordering};
#[cfg(not(falconet_server_loom))]
use std::sync::atomic::{AtomicU8, Ordering};

/// Nothing owed: no `Expect: 100-continue` on the lent body, or settled.
const NONE: u8 = 0;
/// The client waits for `100 (Continue)`; the body has not been read.
const OWED: u8 = 1;
/// The application reads the body: the 100 is to go out now.
const WANTED: u8 = 2;
/// A responder on another thread ended the head (with the 100 in front,
/// or with `Connection: close`); the worker has not taken it yet.
const IN_FLIGHT: u8 = 3;

/// The `100 (Continue)` interim response.
pub(crate) const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// What the end of a response's head does about `Expect: 100-continue`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Continue {
    /// Nothing owed.
    Nothing,
    /// The body was read: the 100 goes in front of the head.
    Send,
    /// The body was never read and the client never told to send it: no
    /// 100, and the connection closes after this response.
    Unsolicited,
}

/// Where an owed `100 (Continue)` stands (module docs).
#[derive(Debug)]
pub(crate) struct ContinueWord(AtomicU8);

impl ContinueWord {
    /// Nothing owed.
    pub(crate) fn new() -> Self {
        Self(AtomicU8::new(NONE))
    }

    /// A body is lent (on the worker): whether its client waits for the
    /// 100.
    pub(crate) fn lend(&self, expects: bool) {
        // Relaxed: the body and any responder reach the application after
        // this, through whatever hands them over (a spawn, a channel).
        self.0.store(if expects { OWED } else { NONE }, Ordering::Relaxed);
    }

    /// The lent body is being read: whether this call asked for the 100
    /// (the caller wakes the worker). Later reads cost one load.
    pub(crate) fn want(&self) -> bool {
        self.advance(OWED, WANTED)
    }

    /// Whether the client waits for us: a `100 (Continue)` is owed and
    /// not sent, or a head that settled it is not yet taken. It owes no
    /// body bytes meanwhile.
    pub(crate) fn pending(&self) -> bool {
        // Relaxed: every move to or from `NONE` is the worker's, and the
        // timer asks under the connection's lock, after the worker's last
        // move; the application's moves (to `WANTED`, to `IN_FLIGHT`)
        // only keep the word pending.
        self.0.load(Ordering::Relaxed) != NONE
    }

    /// The worker, with no byte of the response's head written: whether
    /// to write the 100 now (the application asked for the body).
    pub(crate) fn take_wanted(&self) -> bool {
        self.advance(WANTED, NONE)
    }

    /// A response's head is ending on the worker, which writes it out in
    /// the same step: what it does about the 100. Settles the word.
    pub(crate) fn settle_here(&self) -> Continue {
        if self.0.load(Ordering::Relaxed) == NONE {
            return Continue::Nothing;
        }
        // Relaxed: one read-modify-write against the reader's, so one of
        // the two sees the other (module docs).
        match self.0.swap(NONE, Ordering::Relaxed) {
            WANTED => Continue::Send,
            OWED => Continue::Unsolicited,
            _ => Continue::Nothing,
        }
    }

    /// A response's head is ending on another thread and goes into its
    /// output pipe next: what it does about the 100. The word stays
    /// pending until the worker took the head ([`head_taken`](Self::head_taken)).
    pub(crate) fn settle_elsewhere(&self) -> Continue {
        let mut word = self.0.load(Ordering::Relaxed);
        loop {
            let settled = match word {
                WANTED => Continue::Send,
                OWED => Continue::Unsolicited,
                _ => return Continue::Nothing,
            };
            // Relaxed: as `settle_here`; the output pipe orders this move
            // before the worker reads the head (module docs).
            match self.0.compare_exchange_weak(
                word,
                IN_FLIGHT,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return settled,
                Err(now) => word = now,
            }
        }
    }

    /// The worker took bytes (or the end) a responder wrote into its pipe:
    /// a head that ended elsewhere is now the worker's to send.
    pub(crate) fn head_taken(&self) {
        self.advance(IN_FLIGHT, NONE);
    }

    /// Moves the word from `from` to `to`; whether this call did. One
    /// load first, so that the common case (nothing owed) writes nothing.
    fn advance(&self, from: u8, to: u8) -> bool {
        // Relaxed: the word's own modification order decides who answers
        // (module docs); the wake's queue lock and the output pipe order
        // the rest.
        self.0.load(Ordering::Relaxed) == from
            && self.0.compare_exchange(from, to, Ordering::Relaxed, Ordering::Relaxed).is_ok()
    }
}

/// The word against the module docs' diagram, as a sequential model:
/// random sequences of every move, each step's answer and `pending`
/// compared with the diagram's.
#[cfg(all(test, not(falconet_server_loom)))]
mod model {
    use super::*;
    use proptest::prelude::*;

    /// The diagram's states.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum State {
        None,
        Owed,
        Wanted,
        InFlight,
    }

    #[derive(Clone, Copy, Debug)]
    enum Op {
        Lend(bool),
        Want,
        TakeWanted,
        SettleHere,
        SettleElsewhere,
        HeadTaken,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            any::<bool>().prop_map(Op::Lend),
            Just(Op::Want),
            Just(Op::TakeWanted),
            Just(Op::SettleHere),
            Just(Op::SettleElsewhere),
            Just(Op::HeadTaken),
        ]
    }

    /// One move of the diagram: the next state and the answer, as the
    /// caller reads it (a `bool` for the moves that say whether they
    /// moved, a `Continue` for the settles).
    fn step(state: State, op: Op) -> (State, Option<bool>, Option<Continue>) {
        use State::*;
        match (op, state) {
            (Op::Lend(expects), _) => {
                (if expects { Owed } else { None }, Option::None, Option::None)
            }
            (Op::Want, Owed) => (Wanted, Some(true), Option::None),
            (Op::Want, s) => (s, Some(false), Option::None),
            (Op::TakeWanted, Wanted) => (None, Some(true), Option::None),
            (Op::TakeWanted, s) => (s, Some(false), Option::None),
            (Op::SettleHere, Wanted) => (None, Option::None, Some(Continue::Send)),
            (Op::SettleHere, Owed) => (None, Option::None, Some(Continue::Unsolicited)),
            // A head on the worker ends whatever was in flight too.
            (Op::SettleHere, _) => (None, Option::None, Some(Continue::Nothing)),
            (Op::SettleElsewhere, Wanted) => (InFlight, Option::None, Some(Continue::Send)),
            (Op::SettleElsewhere, Owed) => (InFlight, Option::None, Some(Continue::Unsolicited)),
            (Op::SettleElsewhere, s) => (s, Option::None, Some(Continue::Nothing)),
            (Op::HeadTaken, InFlight) => (None, Option::None, Option::None),
            (Op::HeadTaken, s) => (s, Option::None, Option::None),
        }
    }

    proptest! {
        #[test]
        fn the_word_follows_its_diagram(ops in proptest::collection::vec(op(), 1..40)) {
            let word = ContinueWord::new();
            let mut state = State::None;
            for op in ops {
                let (next, moved, settled) = step(state, op);
                match op {
                    Op::Lend(expects) => word.lend(expects),
                    Op::Want => prop_assert_eq!(Some(word.want()), moved),
                    Op::TakeWanted => prop_assert_eq!(Some(word.take_wanted()), moved),
                    Op::SettleHere => prop_assert_eq!(Some(word.settle_here()), settled),
                    Op::SettleElsewhere => {
                        prop_assert_eq!(Some(word.settle_elsewhere()), settled);
                    }
                    Op::HeadTaken => word.head_taken(),
                }
                state = next;
                prop_assert_eq!(word.pending(), state != State::None, "{:?} after {:?}", state, op);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_never_expected_owes_nothing() {
        let word = ContinueWord::new();
        word.lend(false);
        assert!(!word.pending());
        assert!(!word.want());
        assert!(!word.take_wanted());
        assert_eq!(word.settle_here(), Continue::Nothing);
        assert_eq!(word.settle_elsewhere(), Continue::Nothing);
        assert!(!word.pending());
    }

    #[test]
    fn the_worker_answers_a_read_once() {
        let word = ContinueWord::new();
        word.lend(true);
        assert!(word.want());
        assert!(!word.want(), "asked once");
        assert!(word.pending());
        assert!(word.take_wanted());
        assert!(!word.pending(), "the 100 is out: the client owes the body");
        assert_eq!(word.settle_here(), Continue::Nothing);
    }

    #[test]
    fn a_head_on_the_worker_settles_at_once() {
        for (read, settled) in [(false, Continue::Unsolicited), (true, Continue::Send)] {
            let word = ContinueWord::new();
            word.lend(true);
            if read {
                word.want();
            }
            assert_eq!(word.settle_here(), settled);
            assert!(!word.pending());
            assert!(!word.take_wanted());
        }
    }

    #[test]
    fn a_head_elsewhere_keeps_the_client_waiting_until_taken() {
        for (read, settled) in [(false, Continue::Unsolicited), (true, Continue::Send)] {
            let word = ContinueWord::new();
            word.lend(true);
            if read {
                word.want();
            }
            assert_eq!(word.settle_elsewhere(), settled);
            assert!(word.pending(), "the client has heard nothing yet");
            assert!(!word.take_wanted(), "the 100, if any, is in front of the head");
            assert!(!word.want(), "too late to ask");
            word.head_taken();
            assert!(!word.pending());
            // A second look at the pipe changes nothing.
            word.head_taken();
            assert!(!word.pending());
        }
    }

    #[test]
    fn the_next_lend_starts_afresh() {
        let word = ContinueWord::new();
        word.lend(true);
        assert_eq!(word.settle_elsewhere(), Continue::Unsolicited);
        word.lend(false);
        assert!(!word.pending());
        word.lend(true);
        assert!(word.pending());
    }
}

#[cfg(all(test, falconet_server_loom))]
mod loom_models {
    use super::*;
    use loom::sync::Arc;
    use loom::sync::atomic::AtomicU8;
    use loom::thread;

    /// The stand-in for a responder's output pipe: what its head carries
    /// once written (Release), read by the worker (Acquire), as the
    /// pipe's own protocol orders it.
    const NO_HEAD: u8 = 0;
    const HEAD: u8 = 1;
    const HEAD_AFTER_100: u8 = 2;

    /// What the worker did over its drives.
    #[derive(Default)]
    struct Worker {
        /// It wrote the 100 itself.
        wrote_100: bool,
        /// The head it took from the pipe (`NO_HEAD` if none yet).
        taken: u8,
    }

    impl Worker {
        /// One drive: the 100 if wanted, the timer's question, the pipe.
        fn drive(&mut self, word: &ContinueWord, pipe: &AtomicU8) {
            if self.taken == NO_HEAD && word.take_wanted() {
                self.wrote_100 = true;
            }
            self.timer(word);
            let head = pipe.load(Ordering::Acquire);
            if self.taken == NO_HEAD && head != NO_HEAD {
                word.head_taken();
                self.taken = head;
            }
            self.timer(word);
        }

        /// The timer may blame the client for a missing body only once
        /// the client heard something: our 100, or the head (the final
        /// answer, which it now has).
        fn timer(&self, word: &ContinueWord) {
            if !word.pending() {
                assert!(
                    self.wrote_100 || self.taken != NO_HEAD,
                    "the client is blamed while it still waits for us"
                );
            }
        }
    }

    /// The body read on one thread, the response's head ended on another,
    /// the worker driving the connection twice meanwhile.
    #[test]
    fn a_read_against_a_head_elsewhere_and_the_worker() {
        loom::model(|| {
            let word = Arc::new(ContinueWord::new());
            let pipe = Arc::new(AtomicU8::new(NO_HEAD));
            word.lend(true);
            let reader = {
                let word = Arc::clone(&word);
                thread::spawn(move || word.want())
            };
            let responder = {
                let (word, pipe) = (Arc::clone(&word), Arc::clone(&pipe));
                thread::spawn(move || {
                    let settled = word.settle_elsewhere();
                    let head = if settled == Continue::Send { HEAD_AFTER_100 } else { HEAD };
                    pipe.store(head, Ordering::Release);
                    settled
                })
            };
            let mut worker = Worker::default();
            worker.drive(&word, &pipe);
            worker.drive(&word, &pipe);
            let asked = reader.join().unwrap();
            let settled = responder.join().unwrap();
            // The last drive, woken by the pipe.
            worker.drive(&word, &pipe);
            assert!(!word.pending(), "settled and taken");
            let hundreds = usize::from(worker.wrote_100) + usize::from(settled == Continue::Send);
            // A read that asked gets its 100 exactly once; one that came
            // after the head ended gets none (the head closes).
            assert_eq!(hundreds, usize::from(asked));
            assert_eq!(settled == Continue::Unsolicited, !asked);
        });
    }

    /// The body read on another thread while the worker ends the head
    /// itself (an inline or polled response).
    #[test]
    fn a_read_against_a_head_on_the_worker() {
        loom::model(|| {
            let word = Arc::new(ContinueWord::new());
            word.lend(true);
            let reader = {
                let word = Arc::clone(&word);
                thread::spawn(move || word.want())
            };
            let wrote_100 = word.take_wanted();
            let settled = word.settle_here();
            assert!(!word.pending(), "the head is out: nothing is owed");
            let asked = reader.join().unwrap();
            let hundreds = usize::from(wrote_100) + usize::from(settled == Continue::Send);
            assert_eq!(hundreds, usize::from(asked));
            assert_eq!(settled == Continue::Unsolicited, !asked);
        });
    }
}
