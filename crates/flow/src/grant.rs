//! A token for held send credit: what it does not send goes back to the
//! window when it is dropped.
//!
//! A [`Grant`] is [`try_hold`](crate::OutputFlow::try_hold) plus the
//! bookkeeping a careful caller would write by hand: it knows how much it
//! holds, so it cannot settle more than that (a typed error,
//! [`FlowError::NotHeld`], changing nothing), and it cannot forget to give
//! the rest back. [`detach`](Grant::detach) hands the held count over to
//! the plain API (`sent`/`give_back` on the window) for an event loop that
//! stores the number across calls.

use crate::error::FlowError;
use crate::output::OutputWindow;
use crate::traits::OutputFlow;

/// Send credit held from one window: settle what is sent with
/// [`sent`](Self::sent); the rest returns to the window on drop (or with
/// [`give_back`](Self::give_back)).
///
/// ```
/// use falconet_flow::OutputWindow;
///
/// let window = OutputWindow::new(16_384)?;
/// let mut grant = window.try_grant(16_384)?;
/// let frame = 9_000.min(grant.len()); // what the writer has to send
/// grant.sent(frame)?;                 // settle before the frame goes out
/// drop(grant);                        // the 7_384 unsent bytes return
/// assert_eq!((window.available(), window.held()), (7_384, 0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "dropping a grant gives its credit back at once"]
#[derive(Debug)]
pub struct Grant<'a, W: OutputFlow = OutputWindow> {
    window: &'a W,
    held: u32,
}

impl<'a, W: OutputFlow> Grant<'a, W> {
    /// A grant of `held` bytes the caller already holds from `window`.
    pub(crate) fn new(window: &'a W, held: u32) -> Self {
        Self { window, held }
    }

    /// Bytes still held: granted and neither sent nor given back.
    ///
    /// ```
    /// use falconet_flow::OutputWindow;
    ///
    /// let window = OutputWindow::new(5)?;
    /// assert_eq!(window.try_grant(8)?.len(), 5); // a partial grant
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn len(&self) -> u32 {
        self.held
    }

    /// Whether nothing is held (the window had no credit, or all of it was
    /// settled).
    ///
    /// ```
    /// use falconet_flow::OutputWindow;
    ///
    /// let window = OutputWindow::new(0)?;
    /// assert!(window.try_grant(8)?.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.held == 0
    }

    /// `n` of the held bytes were sent: they leave the window for good.
    ///
    /// ```
    /// use falconet_flow::{FlowError, OutputWindow};
    ///
    /// let window = OutputWindow::new(100)?;
    /// let mut grant = window.try_grant(10)?;
    /// grant.sent(4)?;
    /// assert_eq!(grant.sent(7), Err(FlowError::NotHeld { requested: 7, held: 6 }));
    /// assert_eq!(grant.len(), 6);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`FlowError::NotHeld`] when `n` is more than the grant holds, or
    /// than the window holds (its credit was settled behind the grant's
    /// back); nothing changes.
    pub fn sent(&mut self, n: u32) -> Result<(), FlowError> {
        if n > self.held {
            return Err(FlowError::NotHeld { requested: n, held: self.held });
        }
        self.window.sent(n)?;
        self.held -= n;
        Ok(())
    }

    /// Gives the rest back now (what dropping does, with the error
    /// reported).
    ///
    /// ```
    /// use falconet_flow::OutputWindow;
    ///
    /// let window = OutputWindow::new(100)?;
    /// window.try_grant(40)?.give_back()?;
    /// assert_eq!(window.available(), 100);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`FlowError::NotHeld`] if the window's held credit was settled
    /// behind the grant's back (the grant is spent either way).
    pub fn give_back(mut self) -> Result<(), FlowError> {
        let rest = core::mem::take(&mut self.held);
        if rest == 0 { Ok(()) } else { self.window.give_back(rest) }
    }

    /// Ends the token without settling: the bytes stay held on the window,
    /// and the caller settles them with the window's `sent` and
    /// `give_back`. Returns how many.
    ///
    /// ```
    /// use falconet_flow::OutputWindow;
    ///
    /// let window = OutputWindow::new(100)?;
    /// let held = window.try_grant(40)?.detach(); // an event loop keeps the number
    /// assert_eq!(window.held(), 40);
    /// window.give_back(held)?;
    /// assert_eq!(window.available(), 100);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use = "the detached bytes stay held until given back"]
    pub fn detach(mut self) -> u32 {
        core::mem::take(&mut self.held)
    }

    /// The window the credit is held from.
    ///
    /// ```
    /// use falconet_flow::OutputWindow;
    ///
    /// let window = OutputWindow::new(100)?;
    /// let grant = window.try_grant(10)?;
    /// assert_eq!(grant.window().held(), 10);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn window(&self) -> &'a W {
        self.window
    }
}

impl<W: OutputFlow> Drop for Grant<'_, W> {
    fn drop(&mut self) {
        if self.held > 0 {
            // Refused only if the window's held credit was settled behind
            // the grant's back: nothing is left to return then.
            let _ = self.window.give_back(self.held);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Aborted, FlowError, MAX_WINDOW, OutputState, OutputWindow};

    #[test]
    fn a_grant_at_the_edges() {
        let window = OutputWindow::new(MAX_WINDOW).unwrap();
        let mut grant = window.try_grant(u32::MAX).unwrap();
        assert_eq!(grant.len(), MAX_WINDOW);
        assert_eq!(
            grant.sent(u32::MAX),
            Err(FlowError::NotHeld { requested: u32::MAX, held: MAX_WINDOW })
        );
        assert_eq!(grant.sent(0), Ok(()));
        assert_eq!(grant.sent(1), Ok(()));
        assert_eq!(window.state(), OutputState { window: 0, held: MAX_WINDOW - 1, aborted: false });
        drop(grant);
        assert_eq!(
            window.state(),
            OutputState { window: MAX_WINDOW as i32 - 1, held: 0, aborted: false }
        );

        let window = OutputWindow::new(0).unwrap();
        assert!(window.try_grant(1).unwrap().is_empty());
        window.abort();
        assert_eq!(window.try_grant(1).map(|grant| grant.len()), Err(Aborted));
    }

    #[test]
    fn a_grant_whose_credit_was_settled_behind_its_back_refuses_and_never_panics() {
        let window = OutputWindow::new(10).unwrap();
        let mut grant = window.try_grant(10).unwrap();
        window.give_back(8).unwrap(); // the caller's bug
        assert_eq!(grant.sent(5), Err(FlowError::NotHeld { requested: 5, held: 2 }));
        assert_eq!(grant.len(), 10, "unchanged by the refusal");
        assert!(core::ptr::eq(grant.window(), &window));
        drop(grant); // gives back 10 of 2: refused, ignored
        assert_eq!(window.state(), OutputState { window: 8, held: 2, aborted: false });
    }
}
