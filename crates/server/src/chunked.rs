//! An incremental decoder of the chunked transfer coding (RFC 9112 §7.1).
//!
//! It keeps no bytes: each call decodes what it can of the input it is
//! given and remembers only where in the grammar it stopped, so a body
//! split at any byte decodes the same as one that arrived whole.
//!
//! ```text
//! Size --hex--> Size --CR--> SizeLf --LF--> Data(size) --> DataCr --> DataLf --> Size
//!   |  --;/SP--> Ext --CR--> SizeLf        (size 0) --> TrailerStart
//! TrailerStart --CR--> FinalLf --LF--> Done
//! TrailerStart --other--> Trailer --CR--> TrailerLf --LF--> TrailerStart
//! ```
//!
//! Line ends must be CRLF: a bare LF is an error, as are a size with no
//! digits or more than 16, and a chunk larger than the body's remaining
//! budget.

/// Hex digits in a chunk size at most (a `u64`).
const MAX_SIZE_DIGITS: u32 = 16;
/// Bytes of chunk extensions on one size line at most.
const MAX_EXTENSION: usize = 4096;
/// Bytes of trailer fields at most.
const MAX_TRAILER: usize = 8192;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Size,
    Ext,
    SizeLf,
    Data,
    DataCr,
    DataLf,
    TrailerStart,
    Trailer,
    TrailerLf,
    FinalLf,
    Done,
}

/// Why a chunked body could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChunkedError {
    /// Not the chunked grammar (answered with 400).
    Malformed,
    /// A chunk past the body limit (answered with 413).
    TooLarge,
}

/// Where a chunked body's decoding stands.
#[derive(Clone, Debug)]
pub(crate) struct ChunkedDecoder {
    state: State,
    /// The chunk size being read, then the bytes left of the chunk.
    size: u64,
    digits: u32,
    /// Bytes on the current extension or trailer section so far.
    line: usize,
}

impl ChunkedDecoder {
    pub(crate) fn new() -> Self {
        Self { state: State::Size, size: 0, digits: 0, line: 0 }
    }

    /// Whether the last chunk and the trailer section have been read.
    pub(crate) fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Decodes from the front of `input`, stopping after the first run of
    /// chunk data (returned as a sub-slice of `input`) or at the end of the
    /// body. Returns the bytes of `input` used. `budget` is how many more
    /// data bytes the body may have.
    pub(crate) fn decode<'a>(
        &mut self,
        input: &'a [u8],
        budget: u64,
    ) -> Result<(usize, Option<&'a [u8]>), ChunkedError> {
        let mut i = 0;
        while i < input.len() {
            if self.state == State::Data {
                let n = usize::try_from(self.size).unwrap_or(usize::MAX).min(input.len() - i);
                self.size -= n as u64;
                if self.size == 0 {
                    self.state = State::DataCr;
                }
                return Ok((i + n, Some(&input[i..i + n])));
            }
            let byte = input[i];
            i += 1;
            self.state = match (self.state, byte) {
                (State::Done, _) => return Ok((i - 1, None)),
                (State::Size, b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F') => {
                    if self.digits == MAX_SIZE_DIGITS {
                        return Err(ChunkedError::Malformed);
                    }
                    self.digits += 1;
                    self.size = self.size << 4 | hex(byte);
                    State::Size
                }
                (State::Size, b';' | b' ' | b'\t') if self.digits > 0 => State::Ext,
                (State::Size, b'\r') if self.digits > 0 => State::SizeLf,
                (State::Ext, b'\r') => State::SizeLf,
                (State::Ext, b'\n') => return Err(ChunkedError::Malformed),
                (State::Ext, _) => {
                    self.line += 1;
                    if self.line > MAX_EXTENSION {
                        return Err(ChunkedError::Malformed);
                    }
                    State::Ext
                }
                (State::SizeLf, b'\n') => {
                    self.line = 0;
                    self.digits = 0;
                    if self.size > budget {
                        return Err(ChunkedError::TooLarge);
                    }
                    if self.size == 0 { State::TrailerStart } else { State::Data }
                }
                (State::DataCr, b'\r') => State::DataLf,
                (State::DataLf, b'\n') => State::Size,
                (State::TrailerStart, b'\r') => State::FinalLf,
                (State::TrailerStart | State::Trailer, b'\n') => {
                    return Err(ChunkedError::Malformed);
                }
                (State::Trailer, b'\r') => State::TrailerLf,
                (State::TrailerStart | State::Trailer, _) => {
                    self.line += 1;
                    if self.line > MAX_TRAILER {
                        return Err(ChunkedError::Malformed);
                    }
                    State::Trailer
                }
                (State::TrailerLf, b'\n') => State::TrailerStart,
                (State::FinalLf, b'\n') => {
                    self.state = State::Done;
                    return Ok((i, None));
                }
                _ => return Err(ChunkedError::Malformed),
            };
        }
        Ok((i, None))
    }
}

fn hex(byte: u8) -> u64 {
    u64::from(match byte {
        b'0'..=b'9' => byte - b'0',
        b'a'..=b'f' => byte - b'a' + 10,
        _ => byte - b'A' + 10,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Decodes `input` in pieces cut at `cuts`, returning the data and
    /// whether the body ended (and where).
    fn decode_in_pieces(
        input: &[u8],
        cuts: &[usize],
    ) -> Result<(Vec<u8>, Option<usize>), ChunkedError> {
        let mut decoder = ChunkedDecoder::new();
        let mut data = Vec::new();
        let mut start = 0;
        let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
        bounds.push(input.len());
        bounds.sort_unstable();
        for end in bounds {
            let mut piece = &input[start.min(end)..end];
            let base = start.min(end);
            let mut used_total = 0;
            while !piece.is_empty() {
                let (used, chunk) = decoder.decode(piece, u64::MAX)?;
                data.extend_from_slice(chunk.unwrap_or_default());
                used_total += used;
                if decoder.is_done() {
                    return Ok((data, Some(base + used_total)));
                }
                piece = &piece[used..];
            }
            start = end;
        }
        Ok((data, None))
    }

    #[test]
    fn decodes_chunks_extensions_and_trailers() {
        let body = b"5;name=value\r\nhello\r\n6\r\n world\r\n0\r\nExpires: never\r\n\r\nGET";
        let (data, end) = decode_in_pieces(body, &[]).unwrap();
        assert_eq!(data, b"hello world");
        assert_eq!(end, Some(body.len() - 3), "stops before the next request");
    }

    #[test]
    fn rejects_malformed_input() {
        for bad in [
            &b"\r\n"[..],
            b"x\r\n",
            b"5\nhello\r\n",
            b"5\r\nhelloX\r\n",
            b"5\r\nhello\rX",
            b"0\r\nbad\ntrailer\r\n\r\n",
            b"0\r\n\rX",
            b"11111111111111111\r\n",
        ] {
            assert_eq!(decode_in_pieces(bad, &[]).unwrap_err(), ChunkedError::Malformed, "{bad:?}");
        }
    }

    #[test]
    fn a_chunk_over_the_budget_is_too_large() {
        let mut decoder = ChunkedDecoder::new();
        assert_eq!(decoder.decode(b"10\r\n", 15).unwrap_err(), ChunkedError::TooLarge);
        let mut decoder = ChunkedDecoder::new();
        assert_eq!(decoder.decode(b"10\r\n", 16).unwrap(), (4, None));
    }

    fn encode(chunks: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        for chunk in chunks.iter().filter(|c| !c.is_empty()) {
            out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
            out.extend_from_slice(chunk);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\n\r\n");
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

        /// Any split of any encoding decodes to the same bytes.
        #[test]
        fn splits_do_not_matter(
            chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 0..6),
            cuts in proptest::collection::vec(any::<usize>(), 0..12),
        ) {
            let encoded = encode(&chunks);
            let (data, end) = decode_in_pieces(&encoded, &cuts).unwrap();
            prop_assert_eq!(data, chunks.concat());
            prop_assert_eq!(end, Some(encoded.len()));
        }

        /// Arbitrary bytes never panic, and a split never changes the verdict.
        #[test]
        fn arbitrary_input_is_a_verdict(input in proptest::collection::vec(any::<u8>(), 0..64), cut in any::<usize>()) {
            let whole = decode_in_pieces(&input, &[]);
            let split = decode_in_pieces(&input, &[cut]);
            prop_assert_eq!(whole, split);
        }
    }
}
