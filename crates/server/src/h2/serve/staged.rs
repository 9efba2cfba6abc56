//! The staging form of a response: the head as HTTP/1 lines (its end,
//! its status, its fields lowercased for HPACK), and the staging buffers
//! kept for the next stream.

use super::*;

/// Fields that HTTP/1 framing or connection management wrote and HTTP/2
/// forbids (RFC 9113 8.2.2).
/// `te` too: a request's field, allowed in no response.
const CONNECTION_FIELDS: [&[u8]; 6] =
    [b"connection", b"keep-alive", b"proxy-connection", b"te", b"transfer-encoding", b"upgrade"];

/// The largest staging buffer kept for another stream.
const SPARE_CAPACITY: usize = 64 * 1024;

/// The most bytes of staging buffers a connection keeps for its next
/// streams.
const SPARE_BYTES: usize = 256 * 1024;

/// Staging buffers of finished streams, for the next ones: one for each
/// stream the peer may keep open (so no stream allocates its own in steady
/// state; with a fixed 16 kept, every stream past the 16th of a batch
/// allocated again), each at most [`SPARE_CAPACITY`] and together at most
/// [`SPARE_BYTES`].
pub(super) struct Spares {
    /// The trailers handed to a handler that reads its body on the
    /// worker, refilled per request.
    pub(super) trailers: Trailers,
    buffers: Vec<Vec<u8>>,
    /// The sum of the kept buffers' capacities.
    bytes: usize,
    /// At most this many: the connection's `max_concurrent_streams`.
    keep: usize,
}

impl Spares {
    pub(super) fn new(keep: usize) -> Self {
        Self { trailers: Trailers::new(), buffers: Vec::new(), bytes: 0, keep }
    }

    /// A staging buffer: a kept one, or a new one (no allocation until
    /// written).
    pub(super) fn take(&mut self) -> Vec<u8> {
        let staged = self.buffers.pop().unwrap_or_default();
        self.bytes -= staged.capacity();
        staged
    }

    /// Keeps a finished stream's staging buffer, if there is room.
    pub(super) fn give(&mut self, mut staged: Vec<u8>) {
        let capacity = staged.capacity();
        if self.buffers.len() < self.keep
            && capacity <= SPARE_CAPACITY
            && self.bytes + capacity <= SPARE_BYTES
        {
            staged.clear();
            self.bytes += capacity;
            self.buffers.push(staged);
        }
    }
}

/// The end of the staged head (past its blank line), once it is there.
pub(super) fn find_head_end(staged: &[u8]) -> Option<usize> {
    staged.windows(4).position(|w| w == b"\r\n\r\n").map(|at| at + 4)
}

/// How many bytes of `chunk` a head begun in `staged` (not ended there)
/// still takes: up to and with its blank line, if that is in `chunk`.
pub(super) fn head_end_in(staged: &[u8], chunk: &[u8]) -> Option<usize> {
    const BLANK_LINE: u32 = u32::from_be_bytes(*b"\r\n\r\n");
    // The last four bytes seen, the staged head's last three first.
    let tail = &staged[staged.len().saturating_sub(3)..];
    let mut last = tail.iter().fold(0u32, |last, &b| last << 8 | u32::from(b));
    chunk
        .iter()
        .position(|&b| {
            last = last << 8 | u32::from(b);
            last == BLANK_LINE
        })
        .map(|at| at + 1)
}

/// The status of a staged head (`HTTP/1.1 NNN ...`).
pub(super) fn staged_status(staged: &[u8]) -> u16 {
    staged
        .get(9..12)
        .and_then(|digits| core::str::from_utf8(digits).ok())
        .and_then(|digits| digits.parse().ok())
        .unwrap_or(500)
}

/// Field lines (a staged head's after its status line, or trailers),
/// minus connection fields: each name lowercased into `names`, and
/// `spans` the (name in `names`, value in `head`) ranges. Both buffers
/// are reused. A line without a colon (the head's blank end) is skipped.
pub(super) fn lowercase_fields(
    head: &[u8],
    names: &mut Vec<u8>,
    spans: &mut Vec<(Range<usize>, Range<usize>)>,
) {
    names.clear();
    spans.clear();
    let mut at = 0;
    for line in head.split(|&b| b == b'\n') {
        let line_start = at;
        at += line.len() + 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = line.iter().position(|&b| b == b':') else { continue };
        // Without the whitespace around it, which an HTTP/1 head may
        // carry and an HTTP/2 field value must not (RFC 9113 §8.2.1).
        let after_colon = &line[colon + 1..];
        let value = after_colon.trim_ascii();
        let value_start =
            line_start + colon + 1 + (after_colon.len() - after_colon.trim_ascii_start().len());
        let start = names.len();
        names.extend(line[..colon].iter().map(u8::to_ascii_lowercase));
        if CONNECTION_FIELDS.contains(&&names[start..]) {
            names.truncate(start);
            continue;
        }
        spans.push((start..names.len(), value_start..value_start + value.len()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_ends_at_its_blank_line_across_pieces() {
        let head = b"HTTP/1.1 200 OK\r\nA: b\r\n\r\nbody";
        let end = find_head_end(head).unwrap();
        // Every split of the head between what was staged and the next
        // piece finds the same end, and a piece without it takes it all.
        for at in 0..end {
            let (staged, chunk) = head.split_at(at);
            assert_eq!(head_end_in(staged, chunk), Some(end - at), "split at {at}");
            assert_eq!(head_end_in(staged, &chunk[..end - at - 1]), None, "split at {at}");
        }
        assert_eq!(head_end_in(b"", b"\r\n"), None);
        assert_eq!(head_end_in(b"\r", b"\n\r\n"), Some(3));
    }

    #[test]
    fn staged_heads_become_fields() {
        let head = b"HTTP/1.1 404 Not Found\r\nServer: falconet\r\nDate: x\r\nContent-Length: 0\r\nConnection: close\r\nX-A:b\r\n\r\n";
        assert_eq!(find_head_end(head), Some(head.len()));
        assert_eq!(staged_status(head), 404);
        let (mut names, mut spans) = (Vec::new(), Vec::new());
        lowercase_fields(head, &mut names, &mut spans);
        let pairs: Vec<(&[u8], &[u8])> =
            spans.iter().map(|(n, v)| (&names[n.clone()], &head[v.clone()])).collect();
        assert_eq!(
            pairs,
            [
                (&b"server"[..], &b"falconet"[..]),
                (b"date", b"x"),
                (b"content-length", b"0"),
                (b"x-a", b"b"),
            ]
        );
    }
}
