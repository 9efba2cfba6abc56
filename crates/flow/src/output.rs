//! The send window in one `AtomicU64`, changed by a single CAS, with an
//! async `reserve` that waits for credit.
//!
//! ```text
//!   63       62 ................... 32   31 .................. 0
//! +--------+-------------------------+-------------------------+
//! |ABORTED |       held (31)         | window (i32, two's      |
//! |        |                         |  complement)            |
//! +--------+-------------------------+-------------------------+
//! ```
//!
//! Every operation applies the rules of [`OutputState`] to an unpacked copy
//! and installs the result with one CAS: free credit (`window`), credit
//! held and not yet settled (`held`, see `output_state.rs` for why the
//! overflow rule needs it in the same word) and `ABORTED` change together.
//!
//! # Waiting for credit
//!
//! [`reserve`](OutputWindow::reserve) sleeps until the window is *usable*
//! (positive or aborted). Any number of tasks may wait at once (each
//! stream's writer on the connection's window): their wakers sit in
//! `waiters` behind a lock. The word has no bit left for "a task waits",
//! so that flag, `waiting`, is an `AtomicBool` beside it, written only with
//! the lock held (it mirrors "a waker is stored"). Two roles:
//!
//! - a **waiter**, with the lock held, stores its waker in its own slot
//!   (one per waiting future), sets `waiting`, then reads the word again
//!   with a read-modify-write: usable, it goes on and takes the credit;
//!   still unusable, it sleeps;
//! - a **transition** is a change whose CAS takes the word from unusable to
//!   usable (`increase`, `apply_initial_window_delta`, `give_back`,
//!   `abort`), or aborts a window that was usable (a waiter may watch a
//!   window with credit for its abort: `StreamOutput::grant` waits on the
//!   stream's and the connection's at once). After its CAS it reads
//!   `waiting`; if set, it takes every
//!   waker under the lock, clears `waiting` and wakes them all (outside the
//!   lock). Each woken task takes what credit it finds or waits again: the
//!   credit is shared, so the window cannot know whom it serves. Other
//!   changes (a reservation, a hold, `sent`, an update that leaves the
//!   window unusable or found it usable) never look.
//!
//! No wake is lost: every change of the word is a read-modify-write, so they
//! form one total order (the word's modification order), and each, being
//! AcqRel, synchronises with every earlier one (a release sequence that
//! nothing but RMWs continues). If the waiter's re-read found the word
//! unusable, the first transition after it in that order happens after the
//! waiter set `waiting`, so it sees it set (or cleared by a wake that came
//! after the waker was stored) and finds the waker, the lock ordering its
//! critical section after the waiter's. If a transition came before the
//! re-read, the re-read sees the usable word, or a later unusable one and
//! then a later transition wakes. Each waiter runs this on its own, so two
//! or more change nothing in the argument.
//!
//! A reservation that stops waiting takes its waker out under the lock:
//! when it gets its answer, and when its future is dropped (a timeout
//! around `reserve`, a cancelled task). The last one out clears `waiting`,
//! which is again the mirror of the list. So a window that stays empty
//! while a million timed-out waits come and go holds only the wakers of
//! the futures waiting now. (Clearing `waiting` cannot lose a wake: no
//! waker is stored, and any later waiter sets it again before its re-read.)
//!
//! # Ordering
//!
//! As in `input.rs`: every decision is made from a value read by an RMW
//! (linearizable, no error from a stale load, the line taken exclusive at
//! once), with AcqRel throughout. `waiting` is Relaxed: the RMWs on the
//! word order it, as above; the waker itself is published by the lock.

use core::future::Future;
use core::mem;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};

use crate::error::FlowError;
use crate::grant::Grant;
use crate::input_state::MAX_WINDOW;
use crate::output_state::{Aborted, OutputState};
use crate::primitive::{AtomicBool, AtomicU64, Mutex, Ordering, lock};

/// The window field (bits 0..=31, an `i32`).
const WINDOW_MASK: u64 = u32::MAX as u64;
/// Bits of the held field: it holds 0..=2^31-1.
const HELD_BITS: u32 = 31;
/// The held field's first bit.
const HELD_SHIFT: u32 = 32;
/// The held field (bits 32..=62).
const HELD_MASK: u64 = ((1 << HELD_BITS) - 1) << HELD_SHIFT;
/// `abort` has happened.
const ABORTED: u64 = 1 << 63;

fn unpack(word: u64) -> OutputState {
    OutputState {
        window: (word & WINDOW_MASK) as u32 as i32,
        held: ((word & HELD_MASK) >> HELD_SHIFT) as u32,
        aborted: word & ABORTED != 0,
    }
}

/// Packs a state the rules produced. `held <= window + held <= 2^31-1` by
/// the rules' invariant (`output_state.rs`); a value out of range would
/// spill into `ABORTED`, so it is checked in every build, as in `input.rs`.
fn pack(state: OutputState) -> u64 {
    assert!(state.held <= MAX_WINDOW, "held credit out of range: {state:?}");
    u64::from(state.window as u32)
        | (u64::from(state.held) << HELD_SHIFT)
        | if state.aborted { ABORTED } else { 0 }
}

/// Whether a waiting reservation can go on.
pub(crate) fn usable(state: OutputState) -> bool {
    state.window > 0 || state.aborted
}

/// A send window (what we may send the peer), lock-free: one packed
/// `AtomicU64`, every transition one CAS.
///
/// Credit is taken two ways: [`try_reserve`](Self::try_reserve) counts it
/// as sent at once; [`try_hold`](Self::try_hold) (or the token
/// [`try_grant`](Self::try_grant)) holds it until the caller settles it
/// with [`sent`](Self::sent) or [`give_back`](Self::give_back).
///
/// ```
/// use falconet_flow::OutputWindow;
///
/// let window = OutputWindow::new(100)?;
/// assert_eq!(window.try_reserve(64), Ok(64));
/// assert_eq!(window.try_reserve(64), Ok(36)); // a partial grant
/// window.apply_initial_window_delta(-50)?;    // SETTINGS shrank it
/// assert_eq!(window.available(), -50);
/// window.increase(1000)?;                     // WINDOW_UPDATE
/// assert_eq!(window.try_hold(64), Ok(64));    // held, not sent yet
/// window.sent(16)?;                           // a 16-byte DATA frame
/// window.give_back(48)?;                      // the rest stays unsent
/// assert_eq!((window.available(), window.held()), (934, 0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct OutputWindow {
    word: AtomicU64,
    /// A waker is stored in `waiters`: written only with `waiters`
    /// locked, read by a transition without the lock (see the module docs).
    waiting: AtomicBool,
    /// The waiting tasks' wakers; locked only to wait and to wake.
    waiters: Mutex<Waiters>,
}

/// The wakers of the tasks waiting in [`OutputWindow::reserve`]: one slot
/// per waiting future, named by the future's [`Key`]. A wake takes every
/// waker and starts a new round, so a key from an earlier round names
/// nothing. A future that stops waiting (it got its credit, or it was
/// dropped: a timeout, a cancelled task) empties its slot for the next
/// waiter, so memory, and the time to register, stay bounded by the futures
/// waiting now, however many came and went while the window stayed empty.
/// The vectors keep their capacity from one wait to the next.
#[derive(Debug, Default)]
struct Waiters {
    /// How many wakes have emptied the list.
    round: u64,
    slots: Vec<Option<Waker>>,
    /// The empty slots below `slots.len()`, reused first.
    vacant: Vec<usize>,
}

/// A waiting future's slot in [`Waiters`] (a [`Reserve`]'s, or a
/// `Granting`'s in each of its two windows), valid in its round only.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Key {
    round: u64,
    slot: usize,
}

impl Waiters {
    /// Stores `waker` for the future holding `key`: in its own slot if the
    /// key is from this round (replacing a waker that would wake another
    /// task), otherwise in a new slot, whose key it writes.
    fn register(&mut self, key: &mut Option<Key>, waker: &Waker) {
        if let Some(Key { round, slot }) = *key
            && round == self.round
        {
            match &mut self.slots[slot] {
                Some(stored) if stored.will_wake(waker) => {}
                stored => *stored = Some(waker.clone()),
            }
            return;
        }
        let slot = match self.vacant.pop() {
            Some(slot) => {
                self.slots[slot] = Some(waker.clone());
                slot
            }
            None => {
                self.slots.push(Some(waker.clone()));
                self.slots.len() - 1
            }
        };
        *key = Some(Key { round: self.round, slot });
    }

    /// The future holding `key` waits no more: its slot, if a wake has not
    /// already emptied it, is free again.
    fn remove(&mut self, key: Key) {
        if key.round == self.round && self.slots[key.slot].take().is_some() {
            self.vacant.push(key.slot);
        }
    }

    /// How many futures wait.
    fn len(&self) -> usize {
        self.slots.len() - self.vacant.len()
    }

    /// Takes every waker, ending the round.
    fn take_all(&mut self) -> Vec<Option<Waker>> {
        self.round += 1;
        self.vacant.clear();
        mem::take(&mut self.slots)
    }
}

impl OutputWindow {
    /// A window of `initial` bytes.
    ///
    /// # Errors
    /// [`FlowError::InitialTooLarge`] above 2^31-1.
    pub fn new(initial: u32) -> Result<Self, FlowError> {
        Ok(Self {
            word: AtomicU64::new(pack(OutputState::new(initial)?)),
            waiting: AtomicBool::new(false),
            waiters: Mutex::new(Waiters::default()),
        })
    }

    /// Applies `rule` in one CAS; wakes the waiters if the result made an
    /// unusable window usable, or aborted it. A refusal changes nothing.
    ///
    /// # Ordering
    /// AcqRel on the read and the CAS: every change is an RMW, which the
    /// wake protocol needs (module docs); Relaxed on a failed CAS, whose
    /// value is thrown away (the loop reads again with an RMW).
    #[inline]
    fn update<R, E>(&self, rule: impl Fn(&mut OutputState) -> Result<R, E>) -> Result<R, E> {
        loop {
            // An RMW, not a load: the latest value, and the line exclusive.
            let current = self.word.fetch_add(0, Ordering::AcqRel);
            let before = unpack(current);
            let mut state = before;
            let result = rule(&mut state);
            let new = pack(state);
            if result.is_err() || new == current {
                return result;
            }
            if self.word.compare_exchange(current, new, Ordering::AcqRel, Ordering::Relaxed).is_ok()
            {
                if (!usable(before) && usable(state)) || (!before.aborted && state.aborted) {
                    self.wake();
                }
                return result;
            }
        }
    }

    /// A transition's half of the wake protocol: wake every stored waker.
    #[inline]
    fn wake(&self) {
        // Relaxed: the CAS just done (AcqRel) comes after the waiter's RMW
        // in the word's order, so it already ordered the waiter's store.
        if !self.waiting.load(Ordering::Relaxed) {
            return;
        }
        self.wake_slow();
    }

    #[cold]
    fn wake_slow(&self) {
        let mut slots = {
            let mut waiters = lock(&self.waiters);
            // Under the lock: `waiting` mirrors the list.
            self.waiting.store(false, Ordering::Relaxed);
            waiters.take_all()
        };
        // Outside the lock: a waker may run code that waits again.
        for waker in slots.drain(..).flatten() {
            waker.wake();
        }
        if slots.capacity() > 0 {
            // The list's memory goes back for the next wait, unless a
            // waiter has started a list of its own meanwhile.
            let mut waiters = lock(&self.waiters);
            if waiters.slots.capacity() == 0 {
                waiters.slots = slots;
            }
        }
    }

    /// Takes up to `max` bytes of credit now, counted as sent: `max` if the
    /// window allows, less if not (a partial grant), 0 when it is empty or
    /// negative. Use [`try_hold`](Self::try_hold) when some of it may stay
    /// unsent.
    ///
    /// ```
    /// use falconet_flow::OutputWindow;
    ///
    /// let window = OutputWindow::new(10)?;
    /// assert_eq!(window.try_reserve(4), Ok(4));
    /// assert_eq!(window.try_reserve(u32::MAX), Ok(6));
    /// assert_eq!(window.try_reserve(1), Ok(0));
    /// # Ok::<(), falconet_flow::FlowError>(())
    /// ```
    ///
    /// # Errors
    /// [`Aborted`] once the window is aborted.
    #[inline]
    pub fn try_reserve(&self, max: u32) -> Result<u32, Aborted> {
        self.update(|state| state.reserve(max))
    }

    /// Takes up to `max` bytes of credit now (as
    /// [`try_reserve`](Self::try_reserve) does) and holds it: it counts as
    /// unsent until [`sent`](Self::sent) or [`give_back`](Self::give_back)
    /// settles it. For an event loop that stores the number; see
    /// [`try_grant`](Self::try_grant) for a token that gives back on drop.
    ///
    /// ```
    /// use falconet_flow::OutputWindow;
    ///
    /// let window = OutputWindow::new(100)?;
    /// let held = window.try_hold(60)?;
    /// assert_eq!((window.available(), window.held()), (40, 60));
    /// window.sent(50)?;           // a 50-byte DATA frame
    /// window.give_back(held - 50)?;
    /// assert_eq!((window.available(), window.held()), (50, 0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Aborted`] once the window is aborted.
    #[inline]
    pub fn try_hold(&self, max: u32) -> Result<u32, Aborted> {
        self.update(|state| state.hold(max))
    }

    /// [`try_hold`](Self::try_hold) as a [`Grant`]: the token settles
    /// what it sends with [`Grant::sent`] and gives the rest back when it
    /// is dropped.
    ///
    /// ```
    /// use falconet_flow::OutputWindow;
    ///
    /// let window = OutputWindow::new(100)?;
    /// {
    ///     let mut grant = window.try_grant(64)?;
    ///     assert_eq!(grant.len(), 64);
    ///     grant.sent(10)?; // a 10-byte frame went out; then an error
    /// } // the 54 unsent bytes return to the window
    /// assert_eq!((window.available(), window.held()), (90, 0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Aborted`] once the window is aborted.
    pub fn try_grant(&self, max: u32) -> Result<Grant<'_, Self>, Aborted> {
        crate::OutputFlow::try_grant(self, max)
    }

    /// `n` held bytes were sent: they leave the held count for good.
    /// Settle before the frame can reach the peer (see the crate docs on
    /// held credit).
    ///
    /// ```
    /// use falconet_flow::{FlowError, OutputWindow};
    ///
    /// let window = OutputWindow::new(100)?;
    /// window.try_hold(30)?;
    /// window.sent(30)?;
    /// assert_eq!(window.sent(1), Err(FlowError::NotHeld { requested: 1, held: 0 }));
    /// assert_eq!((window.available(), window.held()), (70, 0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`FlowError::NotHeld`] when `n` is more than is held (nothing
    /// changes).
    #[inline]
    pub fn sent(&self, n: u32) -> Result<(), FlowError> {
        self.update(|state| state.sent(n))
    }

    /// `n` held bytes will not be sent: they return to the free window
    /// (and wake a waiting [`reserve`](Self::reserve)). Never an overflow:
    /// the window the peer counts already includes them.
    ///
    /// ```
    /// use falconet_flow::{FlowError, MAX_WINDOW, OutputWindow};
    ///
    /// let window = OutputWindow::new(MAX_WINDOW - 100)?;
    /// let held = window.try_hold(u32::MAX)?;
    /// window.increase(100)?; // the peer's window is now 2^31-1
    /// assert!(window.increase(1).is_err()); // FLOW_CONTROL_ERROR
    /// window.give_back(held)?;  // back into the window, within 2^31-1
    /// assert_eq!(window.available(), MAX_WINDOW as i32);
    /// assert_eq!(window.give_back(1), Err(FlowError::NotHeld { requested: 1, held: 0 }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`FlowError::NotHeld`] when `n` is more than is held (nothing
    /// changes).
    #[inline]
    pub fn give_back(&self, n: u32) -> Result<(), FlowError> {
        self.update(|state| state.give_back(n))
    }

    /// Waits until some credit is available and takes up to `max` bytes
    /// of it (at least 1 when `max > 0`), counted as sent as by
    /// [`try_reserve`](Self::try_reserve).
    ///
    /// Any number of tasks may wait on one window (every stream's writer
    /// on the connection's, each for credit it already took from its
    /// stream: [`StreamOutput`](crate::StreamOutput#waiting-for-credit)
    /// shows how): each credit-giving change (`increase`,
    /// `give_back`, a growing `apply_initial_window_delta`, `abort`) wakes
    /// them all, and each takes what it finds in turn or waits again. No
    /// order among them is kept. Dropping the future cancels the wait:
    /// nothing is taken until it returns, and its waker leaves the window
    /// (wrapping it in a timeout that keeps firing leaves nothing behind).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use falconet_flow::OutputWindow;
    ///
    /// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
    /// let connection = Arc::new(OutputWindow::new(0)?);
    /// let streams: Vec<_> = (0..3)
    ///     .map(|_| tokio::spawn({
    ///         let connection = Arc::clone(&connection);
    ///         async move { connection.reserve(100).await }
    ///     }))
    ///     .collect();
    /// tokio::task::yield_now().await; // all three wait
    /// connection.increase(250)?;
    /// let mut granted = Vec::new();
    /// for stream in streams {
    ///     granted.push(stream.await??);
    /// }
    /// granted.sort();
    /// assert_eq!(granted, [50, 100, 100]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Aborted`] when the window is aborted, also while waiting.
    pub fn reserve(&self, max: u32) -> Reserve<'_> {
        Reserve { window: self, max, key: None }
    }

    /// A WINDOW_UPDATE of `n` arrived (RFC 9113 6.9); wakes a waiting
    /// [`reserve`](Self::reserve).
    ///
    /// # Errors
    /// [`FlowError::ZeroIncrement`] (PROTOCOL_ERROR) for 0,
    /// [`FlowError::WindowOverflow`] (FLOW_CONTROL_ERROR) when it would
    /// take the window the peer counts (free plus held,
    /// [`OutputState::flow_window`]) past 2^31-1.
    pub fn increase(&self, n: u32) -> Result<(), FlowError> {
        self.update(|state| state.increase(n))
    }

    /// SETTINGS_INITIAL_WINDOW_SIZE changed by `delta` (RFC 9113 6.9.2):
    /// the window moves by it and may go negative.
    ///
    /// # Errors
    /// [`FlowError::WindowOverflow`] (FLOW_CONTROL_ERROR) when free plus
    /// held credit would pass 2^31-1, [`FlowError::WindowUnderflow`] when
    /// the free window would fall below -2^31.
    pub fn apply_initial_window_delta(&self, delta: i32) -> Result<(), FlowError> {
        self.update(|state| state.apply_delta(delta))
    }

    /// Aborts the window: every reservation and hold fails from now on, a
    /// waiting one too; updates are ignored. Held credit still settles.
    pub fn abort(&self) {
        let _ = self.update(|state| {
            state.abort();
            Ok::<(), Aborted>(())
        });
    }

    /// The whole state, as one snapshot.
    pub fn state(&self) -> OutputState {
        // Acquire pairs with the Release half of the RMW that wrote the
        // word (every change is an AcqRel RMW, module docs).
        unpack(self.word.load(Ordering::Acquire))
    }

    /// The bytes we may send (negative after a shrinking SETTINGS change).
    pub fn available(&self) -> i32 {
        self.state().window
    }

    /// Credit held and not yet settled (see [`try_hold`](Self::try_hold)).
    ///
    /// ```
    /// use falconet_flow::OutputWindow;
    ///
    /// let window = OutputWindow::new(100)?;
    /// window.try_hold(30)?;
    /// window.sent(10)?;
    /// assert_eq!(window.held(), 20);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn held(&self) -> u32 {
        self.state().held
    }

    /// One poll of a waiting reservation: the waiter's half of the wake
    /// protocol (module docs). `key` names the future's waker slot once it
    /// has waited.
    fn poll_reserve(
        &self,
        cx: &mut Context<'_>,
        max: u32,
        key: &mut Option<Key>,
    ) -> Poll<Result<u32, Aborted>> {
        loop {
            if let Some(result) = self.reserve_if_usable(max) {
                self.stop_waiting(key);
                return Poll::Ready(result);
            }
            // Nothing to take: wait, unless the word became usable
            // meanwhile; then go round and take the credit.
            if !usable(self.watch(cx, key)) {
                return Poll::Pending;
            }
        }
    }

    /// The waiter's half of the wake protocol (module docs): leaves the
    /// waker (in `key`'s slot), says so, then looks at the word again with
    /// an RMW, whose state it returns. A transition after that RMW sees
    /// `waiting` and wakes the waker; one before it shows in the state.
    /// The waker stays until [`stop_waiting`](Self::stop_waiting) or a
    /// wake.
    pub(crate) fn watch(&self, cx: &mut Context<'_>, key: &mut Option<Key>) -> OutputState {
        let mut waiters = lock(&self.waiters);
        waiters.register(key, cx.waker());
        // Relaxed, under the lock: the RMW below orders it before every
        // later change of the word.
        self.waiting.store(true, Ordering::Relaxed);
        // AcqRel: the release that the next transition's CAS acquires
        // (module docs).
        unpack(self.word.fetch_add(0, Ordering::AcqRel))
    }

    /// A reservation that has waited waits no more (it got its answer, or
    /// its future was dropped): its waker leaves the list, and `waiting`
    /// is cleared when no other is left, so transitions stop looking.
    pub(crate) fn stop_waiting(&self, key: &mut Option<Key>) {
        if let Some(key) = key.take() {
            let mut waiters = lock(&self.waiters);
            waiters.remove(key);
            if waiters.len() == 0 {
                // Under the lock: `waiting` mirrors the list (module docs).
                self.waiting.store(false, Ordering::Relaxed);
            }
        }
    }

    /// How many reservations wait (tests: cancelled ones must not count).
    #[cfg(test)]
    fn waiters(&self) -> usize {
        lock(&self.waiters).len()
    }

    /// A reservation if the window is usable (or `max` is 0); `None` to
    /// wait.
    fn reserve_if_usable(&self, max: u32) -> Option<Result<u32, Aborted>> {
        loop {
            // An RMW, not a load: see `update`.
            let current = self.word.fetch_add(0, Ordering::AcqRel);
            let mut state = unpack(current);
            if max > 0 && !usable(state) {
                return None;
            }
            let result = state.reserve(max);
            let new = pack(state);
            if new == current
                || self
                    .word
                    .compare_exchange(current, new, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            {
                return Some(result);
            }
        }
    }
}

/// The future of [`OutputWindow::reserve`]. Dropping it before it is
/// ready cancels the wait: nothing was taken, and its waker leaves the
/// window's list at once.
#[must_use = "futures do nothing unless polled"]
#[derive(Debug)]
pub struct Reserve<'a> {
    window: &'a OutputWindow,
    max: u32,
    /// This future's waker slot, once it has waited.
    key: Option<Key>,
}

impl Future for Reserve<'_> {
    type Output = Result<u32, Aborted>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        this.window.poll_reserve(cx, this.max, &mut this.key)
    }
}

impl Drop for Reserve<'_> {
    fn drop(&mut self) {
        self.window.stop_waiting(&mut self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_round_trips_every_field_at_its_extremes() {
        for window in [i32::MIN, -1, 0, 1, i32::MAX] {
            for held in [0, 1, MAX_WINDOW - 1, MAX_WINDOW] {
                for aborted in [false, true] {
                    let state = OutputState { window, held, aborted };
                    assert_eq!(unpack(pack(state)), state);
                }
            }
        }
        assert_eq!(WINDOW_MASK & HELD_MASK, 0);
        assert_eq!((WINDOW_MASK | HELD_MASK) & ABORTED, 0);
        assert_eq!(WINDOW_MASK | HELD_MASK | ABORTED, u64::MAX);
        assert_eq!(HELD_MASK >> HELD_SHIFT, u64::from(MAX_WINDOW));
    }

    /// Polls `future` once with a waker that does nothing.
    fn poll_once<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
        Pin::new(future).poll(&mut Context::from_waker(Waker::noop()))
    }

    /// Waits dropped while the window stays empty (a timeout around
    /// `reserve`, again and again) leave no slot behind, and the last one
    /// out clears `waiting`.
    #[test]
    fn cancelled_reservations_leave_nothing_behind() {
        let window = OutputWindow::new(0).unwrap();
        let mut staying = window.reserve(1);
        assert!(poll_once(&mut staying).is_pending());
        for _ in 0..1000 {
            let mut quitting = window.reserve(1);
            assert!(poll_once(&mut quitting).is_pending());
            assert_eq!(window.waiters(), 2);
        }
        assert_eq!(window.waiters(), 1);
        assert!(lock(&window.waiters).slots.len() <= 2, "slots are reused");
        drop(staying);
        assert_eq!(window.waiters(), 0);
        assert!(!window.waiting.load(Ordering::Relaxed));
    }

    /// A future polled again keeps its one slot; one woken, served, and
    /// one woken to wait again, each leave the list as they should.
    #[test]
    fn each_waiting_future_has_one_slot_across_rounds() {
        let window = OutputWindow::new(0).unwrap();
        let (mut first, mut second) = (window.reserve(1), window.reserve(1));
        for _ in 0..3 {
            assert!(poll_once(&mut first).is_pending());
            assert!(poll_once(&mut second).is_pending());
        }
        assert_eq!(window.waiters(), 2);
        window.increase(1).unwrap(); // wakes both: a new round
        assert_eq!(window.waiters(), 0);
        assert_eq!(poll_once(&mut first), Poll::Ready(Ok(1)));
        assert!(poll_once(&mut second).is_pending(), "nothing left: waits again");
        assert_eq!(window.waiters(), 1);
        drop(first); // served: its stale key names no slot
        assert_eq!(window.waiters(), 1);
        drop(second);
        assert_eq!(window.waiters(), 0);
    }
}
