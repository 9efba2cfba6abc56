//! The bytes waiting to go to the client, and how much of them went.

use super::*;

impl Connection {
    /// The first piece of the frames not yet sent (frames, or a shared
    /// payload); empty when nothing waits.
    pub fn output(&self) -> &[u8] {
        match self.shared.front() {
            Some((at, data)) if *at == self.sent => data,
            Some((at, _)) => &self.out[self.sent..*at],
            None => &self.out[self.sent..],
        }
    }

    /// Every piece of the output, in order, as far as `slices` holds them,
    /// for one vectored write; returns how many it filled.
    pub fn output_slices<'a>(&'a self, slices: &mut [IoSlice<'a>]) -> usize {
        let mut count = 0;
        let mut from = self.sent;
        for (at, data) in self.shared.iter() {
            if *at > from {
                if count == slices.len() {
                    return count;
                }
                slices[count] = IoSlice::new(&self.out[from..*at]);
                count += 1;
            }
            if count == slices.len() {
                return count;
            }
            slices[count] = IoSlice::new(data);
            count += 1;
            from = *at;
        }
        if from < self.out.len() && count < slices.len() {
            slices[count] = IoSlice::new(&self.out[from..]);
            count += 1;
        }
        count
    }

    /// How many bytes wait to be sent, in every piece.
    pub fn output_len(&self) -> usize {
        self.out.len() - self.sent + self.shared.len()
    }

    /// Marks the first `n` bytes of the output (across its pieces) as sent;
    /// `n` past [`output_len`](Self::output_len) counts as all of it.
    pub fn consume_output(&mut self, mut n: usize) {
        self.output_taken |= n > 0;
        while n > 0 {
            match self.shared.next_at() {
                Some(at) if at == self.sent => {
                    self.shared.send_front(|data| {
                        let take = n.min(data.len());
                        data.advance(take);
                        n -= take;
                    });
                }
                Some(at) => {
                    let take = n.min(at - self.sent);
                    self.sent += take;
                    n -= take;
                }
                None => {
                    self.sent = self.sent.saturating_add(n).min(self.out.len());
                    break;
                }
            }
        }
        if self.sent == self.out.len() && self.shared.is_empty() {
            self.out.clear();
            self.sent = 0;
            self.queued_control = 0;
        }
    }
}
