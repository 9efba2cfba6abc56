//! The bytes waiting for the socket, as one slice or many, and how much
//! of them went.

use super::*;

impl<H: Handler> Session<H> {
    /// Responses not yet sent: the first piece of them (the output buffer,
    /// then a staged body frame, then its framing's end). Empty when
    /// nothing waits.
    pub fn output(&self) -> &[u8] {
        if let Some(h2) = self.h2() {
            return h2.output();
        }
        let out = &self.out[self.sent..];
        match &self.staged {
            Some(staged) if out.is_empty() => {
                if staged.data.is_empty() {
                    staged.after
                } else {
                    &staged.data
                }
            }
            _ => out,
        }
    }

    /// The bytes of every piece of the output.
    pub(crate) fn output_len(&self) -> usize {
        if let Some(h2) = self.h2() {
            return h2.output_len();
        }
        let staged = self.staged.as_ref().map_or(0, |s| s.data.len() + s.after.len());
        self.out.len() - self.sent + staged
    }

    /// Every piece of the output, in order, for one vectored write (as
    /// many as `slices` holds); returns how many of `slices` it filled.
    pub(crate) fn output_slices<'a>(
        &'a self,
        slices: &mut [io::IoSlice<'a>; OUTPUT_SLICES],
    ) -> usize {
        if let Some(h2) = self.h2() {
            return h2.output_slices(slices);
        }
        let mut count = 0;
        let staged = self.staged.as_ref().map_or([&[][..], &[][..]], |s| [&s.data[..], s.after]);
        for piece in [&self.out[self.sent..]].into_iter().chain(staged) {
            if !piece.is_empty() {
                slices[count] = io::IoSlice::new(piece);
                count += 1;
            }
        }
        count
    }

    /// Marks the first `n` bytes of the output as sent (across its pieces);
    /// `n` past what is queued counts as all of it.
    pub fn consume_output(&mut self, n: usize) {
        if let Some(queued) = self.h2().map(|h2| h2.output_len()) {
            let n = n.min(queued);
            self.taken += n as u64;
            if let Some(h2) = &mut self.h2 {
                h2.consume_output(n);
            }
            return;
        }
        let from_out = n.min(self.out.len() - self.sent);
        self.sent += from_out;
        self.taken += from_out as u64;
        let mut n = n - from_out;
        if self.sent == self.out.len() {
            self.out.clear();
            self.sent = 0;
        }
        if let Some(staged) = &mut self.staged {
            let from_data = n.min(staged.data.len());
            bytes::Buf::advance(&mut staged.data, from_data);
            n -= from_data;
            let from_after = n.min(staged.after.len());
            staged.after = &staged.after[from_after..];
            self.taken += (from_data + from_after) as u64;
            if staged.data.is_empty() && staged.after.is_empty() {
                self.staged = None;
            }
        }
    }
}
