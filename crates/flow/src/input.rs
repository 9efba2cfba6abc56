//! The receive window in one `AtomicU64`: one CAS per DATA frame, one
//! `fetch_add` per release, a CAS only to announce credit.
//!
//! ```text
//!   63        62      61 ............... 31 30 ............... 0
//! +---------+-------+----------------------+--------------------+
//! |DISABLED |ABORTED| pending credit (31)  | BIAS + window (31) |
//! +---------+-------+----------------------+--------------------+
//! ```
//!
//! # Two ways to change the word
//!
//! A window of up to [`InputWindow::WAIT_FREE_MAX_WINDOW`] bytes (256 MiB,
//! far above any window a server configures) has **wait-free releases**:
//! its window field holds the window plus `BIAS` (2^30), so the field has
//! room on both sides of every legal value (guard bits, about 2^30 below
//! and 3 * 2^28 above), and the pending field has about 1.75 * 2^30 above
//! its largest legal value. So a release can apply its change blind and
//! judge it from the value the read-modify-write returns; a frame takes one
//! CAS (lock-free):
//!
//! - **`try_advance(n)`**: one CAS on the word, subtracting `n` only if it
//!   fits, so a refused frame (FLOW_CONTROL_ERROR) or one after the abort
//!   changes nothing. (It used to be a blind `fetch_sub`, undone when the
//!   frame did not fit: while the undo was in flight the window was low, and
//!   an over-release judged then passed. A peer that overdrew its window
//!   while the application over-released could take the window above
//!   `initial` for good, and every later operation waited for an undo that
//!   never came.) The CAS retries only when a release lands between the
//!   frame's load and its CAS.
//! - **`release(n)`**: `fetch_add(n << PENDING | n)`, the credit back into
//!   the window and into pending credit at once. The returned word says
//!   whether that was an over-release or a release after the abort (both
//!   undone) or after END_STREAM (the pending part undone), and whether
//!   pending credit crossed the threshold. Only then a CAS loop takes the
//!   whole pending field (whoever's CAS lands first announces all of it; a
//!   release that finds it taken announces nothing).
//! - **`disable_updates`**: one `fetch_or`. **`abort`**: one CAS (it reads
//!   the unread count, which must not include a refused over-release).
//! - A release above [`InputWindow::WAIT_FREE_MAX_AMOUNT`] (1 MiB; a DATA
//!   frame is at most 16 KiB unless SETTINGS_MAX_FRAME_SIZE raised it)
//!   takes a CAS loop on the same layout, so no blind change is ever larger
//!   than 1 MiB.
//!
//! A larger window (up to the RFC's 2^31-1) has no room for guard bits: its
//! word holds the fields edge to edge (`BIAS` is 0) and every operation is
//! one CAS over the unpacked [`InputState`], the sequential rules the lock
//! twins apply too. The decisions are the same either way; the proptest
//! model checks both kinds against one sequential model.
//!
//! # Refused changes in flight
//!
//! An operation that succeeds takes effect at its read-modify-write. A
//! refused one changes nothing once it returns, and while its undo is in
//! flight (a few instructions) the rest of the window is protected from it:
//!
//! - **An over-release** (the caller's accounting bug) is the only change
//!   that takes the window field above `initial`, and only releases change
//!   the word blind. A frame, an announcement or the abort that finds the
//!   window above `initial` waits (yields) until the undo lands. A release
//!   that finds it there steps back: it keeps its add once the window is
//!   back at or under `initial` (the credit fits, and a frame may have used
//!   it), takes it back while the window stays above `initial` even
//!   without it (nothing takes credit from such a window, so nobody has
//!   used it), and in between (its credit alone stands between the window
//!   and its bound: it is the excess, or a later over-release judged
//!   against its credit is about to be undone) yields up to
//!   `STEP_BACK_PATIENCE` (64) times before taking it back. So an
//!   over-release's phantom credit is not accepted, announced or counted
//!   when frames and legitimate releases race it, two over-releases at
//!   once are both refused, and a thread over-releasing again and again
//!   leaves the window exact. The price is waiting on the erring thread.
//! - **Not exact under a preempted over-release.** If the erring thread is
//!   descheduled for those 64 yields between a second over-release's add
//!   and its undo (the add judged against a legitimate release that is
//!   stepping back from its first over-release), the legitimate release
//!   takes its credit back: it is refused too, and the second one's credit
//!   is uncovered until its undo (a frame, an announcement or the abort may
//!   use it; the window then holds less than the peer was given). It takes
//!   the caller's bug, twice in a row, and a preemption of a few
//!   instructions' window (loom's
//!   `a_legitimate_release_never_uncovers_a_second_over_release` is the
//!   schedule without the preemption).
//! - **After the abort** releases are undone (a frame changes nothing); until then other
//!   operations on the aborted window may see them (an answer of `Aborted`
//!   where the rules would refuse, or the reverse).
//! - **Pending credit never borrows.** The undo of a release's pending
//!   part takes back `n` or whatever is left, in one CAS, and announcements
//!   take nothing once END_STREAM or the abort is set (only releases that
//!   will undo themselves add to it then), so the flags are never touched
//!   by arithmetic.
//! - **Not linearizable**: a release whose announcement finds END_STREAM
//!   or the abort set (both landed after its add) returns `Pending` and
//!   leaves its credit pending, where the rules would have announced it
//!   (before) or not counted it (after). The window has the credit either
//!   way, and nothing is announced after END_STREAM.
//!
//! Each in-flight change moves a field by at most 1 MiB. An operation that
//! finds a field 512 MiB outside its legal range aborts the process, as
//! `Arc` does when its count could overflow: that takes 512 threads inside
//! refused operations on one window at the same instant, and the room left
//! beyond (2^29 below the window field, 2^28 above it, more above pending
//! credit) takes 256 more before a carry or a borrow could leave a field.
//!
//! # Ordering
//!
//! AcqRel on every read-modify-write. The word publishes nothing but
//! itself, but windows are composed: a stream counts a frame against its
//! connection first, then against itself, and an abort that sees the
//! stream's count must see the connection's too (loom's
//! `stream_and_connection_under_abort` failed with Relaxed operations: the
//! abort's release to the connection was refused as an over-release). The
//! CAS paths start with an RMW (`fetch_add(0)`) rather than a load: the
//! latest value, and the line taken exclusive at once, so no error is ever
//! reported from a stale load. A frame starts from a load, which only aims
//! its CAS: a refusal or `Aborted` is returned only once an RMW has read
//! the same word.

use crate::error::FlowError;
use crate::input_state::{Advance, InputState, MAX_WINDOW, Release};
use crate::primitive::{AtomicU64, Ordering};

/// Bits of the window field.
const WINDOW_BITS: u32 = 31;
/// The window field (bits 0..=30).
const WINDOW_MASK: u64 = (1 << WINDOW_BITS) - 1;
/// The pending-credit field (bits 31..=61).
const PENDING_SHIFT: u32 = WINDOW_BITS;
const PENDING_MASK: u64 = ((1 << 31) - 1) << PENDING_SHIFT;
/// `abort` has happened.
const ABORTED: u64 = 1 << 62;
/// END_STREAM was seen: no more WINDOW_UPDATEs.
const UPDATES_DISABLED: u64 = 1 << 63;
/// What a wait-free window's field holds on top of the window: the guard
/// below it (an overdraw borrows from here, never from the pending field).
const BIAS: u64 = 1 << 30;
/// How many times a release stepping back from an over-release yields
/// before it takes back credit that another over-release may have been
/// judged against (see `InputWindow::step_back`). A few under loom, whose
/// models explore every schedule of those yields.
#[cfg(not(falconet_flow_loom))]
const STEP_BACK_PATIENCE: u32 = 64;
#[cfg(falconet_flow_loom)]
const STEP_BACK_PATIENCE: u32 = 2;
/// How far outside its legal range a wait-free window's field may be seen
/// before the process aborts. Each change in flight moves a field by at
/// most 1 MiB, so a field strays this far only with 512 of them in flight
/// at once; the room left beyond the limit (2^29 below the window, 2^28
/// above it, more above pending credit) takes 256 more before a carry or a
/// borrow could leave the field.
const STRAY_LIMIT: i64 = 1 << 29;

/// Unpacks a word (of a window whose field carries `bias`). A wait-free
/// word caught between a refused change and its undo is clamped into the
/// fields' ranges; a CAS word is always exact.
fn unpack(word: u64, bias: u64) -> InputState {
    let window = (word & WINDOW_MASK) as i64 - bias as i64;
    InputState {
        window: window.clamp(0, MAX_WINDOW.into()) as u32,
        pending: ((word & PENDING_MASK) >> PENDING_SHIFT) as u32,
        aborted: word & ABORTED != 0,
        updates_disabled: word & UPDATES_DISABLED != 0,
    }
}

/// Packs a state the rules produced. Every field is in range by the rules'
/// invariants (`window <= initial <= 2^31-1`, `pending <= threshold <
/// 2^31-1`, and `initial + BIAS < 2^31` for a wait-free window); a value out
/// of range would spill into the flags, so it is checked in every build,
/// not only with debug assertions.
fn pack(state: InputState, bias: u64) -> u64 {
    let window = u64::from(state.window) + bias;
    assert!(
        window <= WINDOW_MASK && u64::from(state.pending) << PENDING_SHIFT <= PENDING_MASK,
        "window or pending credit out of range: {state:?}"
    );
    window
        | (u64::from(state.pending) << PENDING_SHIFT)
        | if state.aborted { ABORTED } else { 0 }
        | if state.updates_disabled { UPDATES_DISABLED } else { 0 }
}

/// A field strayed further than 512 refused operations in flight at once
/// can take it: continuing could corrupt the word.
#[cold]
fn stray() -> ! {
    eprintln!("falconet-flow: a receive window's word strayed out of range; aborting");
    std::process::abort()
}

/// A receive window (what the peer may send us), lock-free: one packed
/// `AtomicU64`: for windows of up to
/// [`WAIT_FREE_MAX_WINDOW`](Self::WAIT_FREE_MAX_WINDOW) bytes a release is
/// wait-free (one read-modify-write) and a frame one CAS; above, one CAS
/// per transition. See [`InputFlow`](crate::InputFlow) for the operations; the
/// methods here are the same, inherent.
///
/// ```
/// use falconet_flow::{Advance, InputWindow, Release};
///
/// let window = InputWindow::new(65_535)?;
/// assert_eq!(window.try_advance(40_000)?, Advance::Accepted); // a DATA frame
/// assert_eq!(window.release(30_000)?, Release::Pending);     // not above half yet
/// assert_eq!(window.release(10_000)?, Release::Update(40_000)); // send WINDOW_UPDATE
/// assert!(window.try_advance(70_000).is_err()); // FLOW_CONTROL_ERROR
/// # Ok::<(), falconet_flow::FlowError>(())
/// ```
#[derive(Debug)]
pub struct InputWindow {
    word: AtomicU64,
    initial: u32,
    threshold: u32,
    /// `BIAS` for a wait-free window, 0 for a CAS one.
    bias: u64,
}

impl InputWindow {
    /// The largest window whose releases are wait-free (2^28-1 bytes,
    /// 256 MiB): its fields have room for guard bits. Larger ones (up to
    /// 2^31-1) change by CAS.
    pub const WAIT_FREE_MAX_WINDOW: u32 = (1 << 28) - 1;

    /// The largest release a wait-free window applies with one
    /// read-modify-write (1 MiB); a larger one takes a CAS. (Frames always
    /// take one CAS.)
    pub const WAIT_FREE_MAX_AMOUNT: u32 = 1 << 20;

    /// A window of `initial` bytes announcing credit once more than half of
    /// it is pending.
    ///
    /// # Errors
    /// [`FlowError::InitialTooLarge`] above 2^31-1.
    pub fn new(initial: u32) -> Result<Self, FlowError> {
        Self::with_threshold(initial, initial / 2)
    }

    /// A window announcing credit once strictly more than `threshold` bytes
    /// are pending. `threshold` must be below `initial` (0 for a window of
    /// 0): a peer that keeps to the window never leaves more than `initial`
    /// bytes pending.
    ///
    /// # Errors
    /// [`FlowError::InitialTooLarge`] above 2^31-1;
    /// [`FlowError::ThresholdTooLarge`] when `threshold >= initial` (and
    /// `initial > 0`), or `threshold > 0` with `initial == 0`.
    pub fn with_threshold(initial: u32, threshold: u32) -> Result<Self, FlowError> {
        let state = InputState::new(initial, threshold)?;
        let bias = if initial <= Self::WAIT_FREE_MAX_WINDOW { BIAS } else { 0 };
        Ok(Self { word: AtomicU64::new(pack(state, bias)), initial, threshold, bias })
    }

    /// Whether this window's releases take the wait-free path (its initial
    /// size is at most [`WAIT_FREE_MAX_WINDOW`](Self::WAIT_FREE_MAX_WINDOW)).
    pub fn is_wait_free(&self) -> bool {
        self.bias != 0
    }

    /// Applies `rule` to the state in one CAS (retrying on contention);
    /// a refusal changes nothing. Only for a CAS window: a wait-free word
    /// may be caught mid-undo, which the rules cannot represent.
    #[inline]
    fn update<R>(
        &self,
        rule: impl Fn(&mut InputState) -> Result<R, FlowError>,
    ) -> Result<R, FlowError> {
        debug_assert_eq!(self.bias, 0, "the rules' CAS only runs on a CAS window");
        loop {
            // An RMW, not a load: the latest value, and the line exclusive.
            let current = self.word.fetch_add(0, Ordering::AcqRel);
            let mut state = unpack(current, 0);
            let result = rule(&mut state);
            let new = pack(state, 0);
            if result.is_err() || new == current {
                return result;
            }
            if self.word.compare_exchange(current, new, Ordering::AcqRel, Ordering::Relaxed).is_ok()
            {
                return result;
            }
        }
    }

    /// The window in a wait-free `word`, signed: outside `0..=initial` only
    /// while refused changes are being undone (or, after an over-release,
    /// until the frames it let in are released).
    #[inline]
    fn window_of(&self, word: u64) -> i64 {
        let window = (word & WINDOW_MASK) as i64 - BIAS as i64;
        if !(-STRAY_LIMIT..=i64::from(self.initial) + STRAY_LIMIT).contains(&window) {
            stray();
        }
        window
    }

    /// The pending credit in a wait-free `word`: above the threshold only
    /// until a release's announcement takes it.
    #[inline]
    fn pending_of(&self, word: u64) -> u64 {
        let pending = (word & PENDING_MASK) >> PENDING_SHIFT;
        if pending as i64 > i64::from(self.threshold) + STRAY_LIMIT {
            stray();
        }
        pending
    }

    /// A DATA frame of `n` bytes arrived (RFC 9113 6.9.1).
    ///
    /// # Errors
    /// [`FlowError::WindowExceeded`] (FLOW_CONTROL_ERROR) when `n` is more
    /// than the window, even after an abort.
    #[inline]
    pub fn try_advance(&self, n: u32) -> Result<Advance, FlowError> {
        self.advance_counting_abort(n).0
    }

    /// `try_advance`, and whether an `abort` counted a refused frame's
    /// bytes as unread: never, since a refused frame changes nothing in
    /// the word (kept for [`InputFlow::try_advance_counting_abort`](crate::InputFlow::try_advance_counting_abort)).
    #[inline]
    pub(crate) fn advance_counting_abort(&self, n: u32) -> (Result<Advance, FlowError>, bool) {
        if self.bias == 0 {
            return (self.update(|state| state.advance(n)), false);
        }
        (self.advance_by_cas(n), false)
    }

    /// `try_advance` on a wait-free window: one CAS that subtracts only
    /// what fits, so a refused frame never touches the word. (A frame
    /// applied blind and then undone lowered the window for a moment, and
    /// an over-release judged in that moment passed as a release: its
    /// credit, once the frame was undone, took the window above `initial`
    /// for good, and every operation waited for an undo that never came.)
    #[inline]
    fn advance_by_cas(&self, n: u32) -> Result<Advance, FlowError> {
        // A load is enough to aim the CAS, which checks it; a refusal is
        // only ever judged on an RMW's value, the latest (below).
        let mut current = self.word.load(Ordering::Acquire);
        loop {
            let window;
            (current, window) = self.settled(current);
            if window >= i64::from(n) && current & ABORTED == 0 {
                // window >= n: no borrow out of the field.
                let new = current - u64::from(n);
                match self.word.compare_exchange_weak(
                    current,
                    new,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => return Ok(Advance::Accepted),
                    Err(now) => {
                        current = now;
                        continue;
                    }
                }
            }
            let latest = self.word.fetch_add(0, Ordering::AcqRel);
            if latest != current {
                current = latest;
                continue;
            }
            if window < i64::from(n) {
                return Err(FlowError::WindowExceeded { requested: n, available: clamp(window) });
            }
            // The reader is gone: the frame fits, but is not counted.
            return Ok(Advance::Aborted);
        }
    }

    /// The application consumed `n` bytes: they return to the window, and a
    /// [`Release::Update`] says when to send WINDOW_UPDATE.
    ///
    /// # Errors
    /// [`FlowError::OverRelease`] when more is released than was consumed.
    #[inline]
    pub fn release(&self, n: u32) -> Result<Release, FlowError> {
        if self.bias == 0 {
            let (initial, threshold) = (self.initial, self.threshold);
            return self.update(|state| state.release(n, initial, threshold));
        }
        if n > Self::WAIT_FREE_MAX_AMOUNT {
            return self.release_by_cas(n);
        }
        let credit = u64::from(n) << PENDING_SHIFT;
        // The window field holds at most BIAS + initial + STRAY_LIMIT
        // < 2^31 - n and pending credit at most threshold + STRAY_LIMIT
        // < 2^31 - n: no carry leaves either field.
        let delta = credit | u64::from(n);
        let before = self.word.fetch_add(delta, Ordering::AcqRel);
        let window = self.window_of(before);
        if before & (ABORTED | UPDATES_DISABLED) != 0
            || window + i64::from(n) > i64::from(self.initial)
        {
            return self.release_refused(n, before);
        }
        // window + n <= initial: no over-release is in flight, so pending
        // credit holds no phantom.
        Ok(self.owed(n, before))
    }

    /// A wait-free release whose `fetch_add` returned `before` was after
    /// the abort or END_STREAM, or gave back more than was consumed, or met
    /// another thread's refused over-release. Undoes, and decides.
    #[cold]
    fn release_refused(&self, n: u32, mut before: u64) -> Result<Release, FlowError> {
        let delta = (u64::from(n) << PENDING_SHIFT) | u64::from(n);
        loop {
            if before & ABORTED != 0 {
                self.undo_release(n, true);
                return Ok(Release::Aborted);
            }
            if self.window_of(before) <= i64::from(self.initial) {
                break;
            }
            // Another thread's refused over-release is in the window: this
            // release cannot be judged against it. Step back until it is
            // undone, unless the window came back first.
            match self.step_back(n) {
                None => {
                    self.wait_for_undo();
                    before = self.word.fetch_add(delta, Ordering::AcqRel);
                }
                Some(current) if current & UPDATES_DISABLED != 0 => {
                    self.undo_release(n, false);
                    return Ok(Release::Pending);
                }
                // After an abort that counted this release as given back:
                // nothing to announce.
                Some(current) if current & ABORTED != 0 => return Ok(Release::Pending),
                Some(current) if self.pending_of(current) > u64::from(self.threshold) => {
                    return Ok(self.announce(current));
                }
                Some(_) => return Ok(Release::Pending),
            }
        }
        let window = self.window_of(before);
        if window + i64::from(n) > i64::from(self.initial) {
            self.undo_release(n, true);
            let outstanding = clamp(i64::from(self.initial) - window);
            return Err(FlowError::OverRelease { released: n, outstanding });
        }
        if before & UPDATES_DISABLED != 0 {
            // The window keeps the credit; nothing will be announced.
            self.undo_release(n, false);
            return Ok(Release::Pending);
        }
        Ok(self.owed(n, before))
    }

    /// Takes back the add of a release that met another thread's refused
    /// over-release, but only while the window is still above `initial`:
    /// nothing takes credit from a window there, so nobody has used this
    /// release's credit, and no refused over-release was judged against
    /// it. Once the window is back at or under `initial`, the add stays:
    /// the credit fits, and a frame may already have used it (taking it
    /// back then would leave the window short of the truth, and an
    /// over-release judged meanwhile would pass). Returns the word the add
    /// was kept in, or `None` when it was taken back.
    #[cold]
    fn step_back(&self, n: u32) -> Option<u64> {
        // An RMW, not a load: keeping the add is judged on the latest word.
        let mut current = self.word.fetch_add(0, Ordering::AcqRel);
        let mut patience = STEP_BACK_PATIENCE;
        loop {
            let window = self.window_of(current);
            if window <= i64::from(self.initial) {
                return Some(current);
            }
            if window - i64::from(n) <= i64::from(self.initial) && patience > 0 {
                // Without this credit the window would be within bounds:
                // this release is the excess (an over-release too), or a
                // later over-release, judged against this credit, is in
                // the word and about to be undone. Taking the credit back
                // now would uncover that one's: give it a moment.
                patience -= 1;
                self.wait_for_undo();
                current = self.word.fetch_add(0, Ordering::AcqRel);
                continue;
            }
            let pending = (current & PENDING_MASK) >> PENDING_SHIFT;
            // The window field is above BIAS + initial and holds this
            // release's add: taking it back borrows nothing.
            let new = current - (pending.min(u64::from(n)) << PENDING_SHIFT) - u64::from(n);
            match self.word.compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return None,
                Err(now) => current = now,
            }
        }
    }

    /// What a counted release (its add returned `before`) owes the peer:
    /// nothing while pending credit stays at or below the threshold, else
    /// an announcement.
    #[inline]
    fn owed(&self, n: u32, before: u64) -> Release {
        if self.pending_of(before) + u64::from(n) <= u64::from(self.threshold) {
            return Release::Pending;
        }
        let delta = (u64::from(n) << PENDING_SHIFT) | u64::from(n);
        self.announce(before.wrapping_add(delta))
    }

    /// Takes back what a refused or silent release added blind: `n` from
    /// the window when `window` (a refused one), and `n` from pending
    /// credit, or all of it if less is there (another release's announce
    /// took some of `n` with it: pending credit never borrows into the
    /// flags). One CAS loop; only refused releases and releases after
    /// END_STREAM take it.
    #[cold]
    fn undo_release(&self, n: u32, window: bool) {
        let mut current = self.word.load(Ordering::Acquire);
        loop {
            let pending = (current & PENDING_MASK) >> PENDING_SHIFT;
            let mut new = current - (pending.min(u64::from(n)) << PENDING_SHIFT);
            if window {
                // This release's own add is still in the field.
                new -= u64::from(n);
            }
            match self.word.compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return,
                Err(now) => current = now,
            }
        }
    }

    /// Pending credit crossed the threshold with a release: take all of it
    /// in one CAS (starting from `current`, the word that release left), or
    /// find that another release took it. After END_STREAM or the abort
    /// nothing is taken (a release after either adds its credit blind and
    /// takes it back; pending credit there belongs to no announcement), and
    /// the release returns `Pending`, leaving its credit pending.
    fn announce(&self, mut current: u64) -> Release {
        loop {
            // A refused over-release's credit is in pending too: never
            // announce it.
            (current, _) = self.settled(current);
            if current & (UPDATES_DISABLED | ABORTED) != 0 {
                return Release::Pending;
            }
            let pending = self.pending_of(current);
            if pending <= u64::from(self.threshold) {
                return Release::Pending; // another release announced it
            }
            let new = current & !PENDING_MASK;
            match self.word.compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire) {
                // pending <= threshold + STRAY_LIMIT < 2^31 - 1: one
                // WINDOW_UPDATE carries it.
                Ok(_) => return Release::Update(pending as u32),
                Err(now) => current = now,
            }
        }
    }

    /// `release` of more than `WAIT_FREE_MAX_AMOUNT` on a wait-free
    /// window: one CAS that adds only what is owed, so it never strays.
    fn release_by_cas(&self, n: u32) -> Result<Release, FlowError> {
        let mut current = self.word.fetch_add(0, Ordering::AcqRel);
        loop {
            let window;
            (current, window) = self.settled(current);
            if current & ABORTED != 0 {
                return Ok(Release::Aborted);
            }
            if window + i64::from(n) > i64::from(self.initial) {
                let outstanding = clamp(i64::from(self.initial) - window);
                return Err(FlowError::OverRelease { released: n, outstanding });
            }
            // window + n <= initial: no carry out of the window field.
            let returned = current + u64::from(n);
            let (new, release) = if current & UPDATES_DISABLED != 0 {
                (returned, Release::Pending)
            } else {
                // window + n <= initial and window >= -STRAY_LIMIT, so
                // n <= initial + STRAY_LIMIT, and pending + n <= threshold
                // + 2 * STRAY_LIMIT + initial < 2^31 - 1.
                let pending = self.pending_of(current) + u64::from(n);
                if pending > u64::from(self.threshold) {
                    (returned & !PENDING_MASK, Release::Update(pending as u32))
                } else {
                    (returned + (u64::from(n) << PENDING_SHIFT), Release::Pending)
                }
            };
            match self.word.compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Ok(release),
                Err(now) => current = now,
            }
        }
    }

    /// Aborts the window: returns the bytes consumed and not released
    /// (for the connection window), once; 0 on every later call. After it,
    /// advances count nothing and releases give nothing back.
    pub fn abort(&self) -> u32 {
        if self.bias == 0 {
            let initial = self.initial;
            return self.update(|state| Ok(state.abort(initial))).unwrap_or(0);
        }
        // A CAS, not a fetch_or: the unread count must not be read from a
        // window holding a refused over-release's credit.
        let mut current = self.word.fetch_add(0, Ordering::AcqRel);
        loop {
            let window;
            (current, window) = self.settled(current);
            if current & ABORTED != 0 {
                return 0;
            }
            let aborted = current | ABORTED;
            match self.word.compare_exchange(current, aborted, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return clamp(i64::from(self.initial) - window),
                Err(now) => current = now,
            }
        }
    }

    /// Lets a thread whose refused change is in the word undo it: only
    /// ever waited for while a refused operation (an over-release, the
    /// caller's bug) is in flight, a few instructions unless that thread
    /// was preempted.
    #[cold]
    fn wait_for_undo(&self) {
        crate::primitive::yield_now();
    }

    /// `current`, or a later word once no refused over-release is in it
    /// (its window is not above `initial`), with that word's window. The
    /// CAS paths judge only settled words.
    fn settled(&self, mut current: u64) -> (u64, i64) {
        loop {
            let window = self.window_of(current);
            if window <= i64::from(self.initial) {
                return (current, window);
            }
            self.wait_for_undo();
            current = self.word.fetch_add(0, Ordering::AcqRel);
        }
    }

    /// END_STREAM seen: no more WINDOW_UPDATEs for this window.
    pub fn disable_updates(&self) {
        if self.bias == 0 {
            let _ = self.update(|state| {
                state.disable_updates();
                Ok(())
            });
            return;
        }
        self.word.fetch_or(UPDATES_DISABLED, Ordering::AcqRel);
    }

    /// Reuses the window for a new stream of `initial` bytes.
    ///
    /// # Errors
    /// [`FlowError::InitialTooLarge`] above 2^31-1 (the window is unchanged).
    pub fn reset(&mut self, initial: u32) -> Result<(), FlowError> {
        *self = Self::with_threshold(initial, initial / 2)?;
        Ok(())
    }

    /// The whole state, as one snapshot. (A wait-free window caught between
    /// a refused change and its undo shows the change, clamped to the
    /// fields' ranges.)
    pub fn state(&self) -> InputState {
        unpack(self.word.load(Ordering::Acquire), self.bias)
    }

    /// The bytes the peer may still send.
    pub fn available(&self) -> u32 {
        self.state().window
    }

    /// The window's initial size.
    pub fn initial(&self) -> u32 {
        self.initial
    }
}

/// A signed count clamped into a `u32` error field.
fn clamp(value: i64) -> u32 {
    value.clamp(0, u32::MAX.into()) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_round_trips_every_field_at_its_extremes() {
        for window in [0, 1, crate::MAX_WINDOW] {
            for pending in [0, 1, crate::MAX_WINDOW] {
                for aborted in [false, true] {
                    for updates_disabled in [false, true] {
                        let state = InputState { window, pending, aborted, updates_disabled };
                        assert_eq!(unpack(pack(state, 0), 0), state);
                        if window < BIAS as u32 {
                            assert_eq!(unpack(pack(state, BIAS), BIAS), state);
                        }
                    }
                }
            }
        }
        assert_eq!(WINDOW_MASK & PENDING_MASK, 0);
        assert_eq!((WINDOW_MASK | PENDING_MASK) & (ABORTED | UPDATES_DISABLED), 0);
        assert_eq!(WINDOW_MASK | PENDING_MASK | ABORTED | UPDATES_DISABLED, u64::MAX);
    }
}

#[cfg(all(test, not(falconet_flow_loom)))]
mod wait_free_tests {
    use super::*;

    const MAX_AMOUNT: u32 = InputWindow::WAIT_FREE_MAX_AMOUNT;

    #[test]
    fn the_mode_follows_the_initial_size_at_its_edge() {
        let largest = InputWindow::new(InputWindow::WAIT_FREE_MAX_WINDOW).unwrap();
        assert!(largest.is_wait_free());
        assert!(!InputWindow::new(InputWindow::WAIT_FREE_MAX_WINDOW + 1).unwrap().is_wait_free());
        assert!(!InputWindow::new(MAX_WINDOW).unwrap().is_wait_free());
        assert!(InputWindow::new(0).unwrap().is_wait_free());
        // The largest wait-free window, drained and refilled to its edges.
        let initial = InputWindow::WAIT_FREE_MAX_WINDOW;
        assert_eq!(largest.try_advance(initial), Ok(Advance::Accepted));
        assert_eq!(
            largest.try_advance(1),
            Err(FlowError::WindowExceeded { requested: 1, available: 0 })
        );
        assert_eq!(largest.release(initial), Ok(Release::Update(initial)));
        assert_eq!(largest.release(1), Err(FlowError::OverRelease { released: 1, outstanding: 0 }));
        assert_eq!(largest.state(), InputState { window: initial, ..InputState::default() });
    }

    #[test]
    fn amounts_at_the_one_rmw_limit_and_past_it_agree() {
        // Just at the limit: one RMW; just past it: the CAS. Same answers.
        for n in [MAX_AMOUNT - 1, MAX_AMOUNT, MAX_AMOUNT + 1] {
            let window = InputWindow::with_threshold(4 * MAX_AMOUNT, MAX_AMOUNT + 1).unwrap();
            assert_eq!(window.try_advance(n), Ok(Advance::Accepted));
            assert_eq!(window.try_advance(n), Ok(Advance::Accepted));
            assert_eq!(window.release(n), Ok(Release::Pending), "n = {n}");
            assert_eq!(window.release(n), Ok(Release::Update(2 * n)), "n = {n}");
            assert_eq!(
                window.release(1),
                Err(FlowError::OverRelease { released: 1, outstanding: 0 })
            );
            assert_eq!(window.try_advance(4 * MAX_AMOUNT), Ok(Advance::Accepted));
            assert_eq!(
                window.try_advance(n),
                Err(FlowError::WindowExceeded { requested: n, available: 0 })
            );
            window.disable_updates();
            assert_eq!(window.release(n), Ok(Release::Pending));
            assert_eq!(window.state().pending, 0, "no credit is owed after END_STREAM");
            assert_eq!(window.abort(), 4 * MAX_AMOUNT - n);
            assert_eq!(window.try_advance(n), Ok(Advance::Aborted));
            assert_eq!(window.release(n), Ok(Release::Aborted));
            assert_eq!(window.state().window, n, "nothing counted after the abort");
        }
    }

    #[test]
    fn refused_changes_are_undone_at_every_edge_of_the_fields() {
        let window = InputWindow::with_threshold(100, 50).unwrap();
        let untouched = window.word.load(Ordering::Relaxed);
        for n in [101, MAX_AMOUNT, MAX_AMOUNT + 1, MAX_WINDOW, u32::MAX] {
            assert_eq!(
                window.try_advance(n),
                Err(FlowError::WindowExceeded { requested: n, available: 100 })
            );
            assert_eq!(
                window.release(n),
                Err(FlowError::OverRelease { released: n, outstanding: 0 })
            );
            assert_eq!(window.word.load(Ordering::Relaxed), untouched, "n = {n}");
        }
    }

    #[test]
    fn only_a_racing_abort_makes_a_refused_frame_counted() {
        use crate::InputFlow;
        // Alone, a frame's answer never says an abort counted it: a
        // refused frame, one after the abort, and one that fitted, on both
        // kinds of window and a lock twin (the trait's default).
        for initial in [100, InputWindow::WAIT_FREE_MAX_WINDOW + 1] {
            let window = InputWindow::new(initial).unwrap();
            let refused = window.try_advance_counting_abort(initial + 1);
            assert!(!refused.1, "initial {initial}");
            assert!(refused.0.is_err());
            assert_eq!(window.try_advance_counting_abort(1), (Ok(Advance::Accepted), false));
            window.abort();
            assert_eq!(window.try_advance_counting_abort(1), (Ok(Advance::Aborted), false));
            assert!(!window.try_advance_counting_abort(initial).1);
        }
        let twin = crate::ParkingLotInputWindow::with_threshold(100, 50).unwrap();
        assert!(!twin.try_advance_counting_abort(101).1);
        // The racing case itself is loom's
        // `stream_overdraw_vs_stream_abort_double_returns_connection_credit`.
    }

    #[test]
    fn a_release_that_finds_its_credit_taken_announces_nothing() {
        let window = InputWindow::with_threshold(100, 10).unwrap();
        window.try_advance(30).unwrap();
        // Two releases crossed the threshold together; the first
        // announcement took both, the second finds nothing above it.
        window.word.fetch_add((20 << PENDING_SHIFT) | 20, Ordering::AcqRel);
        let after_both = window.word.load(Ordering::Relaxed);
        assert_eq!(window.announce(after_both), Release::Update(20));
        assert_eq!(window.announce(after_both), Release::Pending);
        assert_eq!(window.state(), InputState { window: 90, ..InputState::default() });
    }
}
