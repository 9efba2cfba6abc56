//! Body pieces kept by reference: `Bytes` anchored at offsets of a buffer
//! that carries the bytes around them, so a response's body goes out in
//! place (one vectored write of the buffer's runs and the pieces).

use std::collections::VecDeque;

use bytes::Bytes;

/// Body pieces kept by reference, not copied: each goes out after `at`
/// bytes of the buffer it is anchored in (a stream's staging buffer, or a
/// connection's output). Their total length is kept, so the
/// server's accounting of staged bytes does not walk them.
#[derive(Debug, Default)]
pub(crate) struct Pieces {
    queue: VecDeque<(usize, Bytes)>,
    len: usize,
}

impl Pieces {
    /// Adds `piece` (if not empty) after `at` bytes of the staging buffer.
    pub(crate) fn push(&mut self, at: usize, piece: Bytes) {
        if !piece.is_empty() {
            self.len += piece.len();
            self.queue.push_back((at, piece));
        }
    }

    /// Bytes in all the pieces.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// How many pieces.
    pub(crate) fn count(&self) -> usize {
        self.queue.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Where the first piece goes in the staging buffer.
    pub(crate) fn next_at(&self) -> Option<usize> {
        self.queue.front().map(|(at, _)| *at)
    }

    /// The pieces in order, each with where it goes.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &(usize, Bytes)> {
        self.queue.iter()
    }

    /// The first piece and where it goes.
    pub(crate) fn front(&self) -> Option<&(usize, Bytes)> {
        self.queue.front()
    }

    /// Lets `send` take bytes off the front of the first piece; returns
    /// whether that piece is gone (all of it taken, or there was none).
    pub(crate) fn send_front(&mut self, send: impl FnOnce(&mut Bytes)) -> bool {
        let Some((_, piece)) = self.queue.front_mut() else { return true };
        let before = piece.len();
        send(piece);
        self.len -= before - piece.len();
        if piece.is_empty() {
            self.queue.pop_front();
            return true;
        }
        false
    }

    pub(crate) fn clear(&mut self) {
        self.queue.clear();
        self.len = 0;
    }
}
