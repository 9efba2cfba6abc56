//! An incremental decoder of the chunked transfer coding (RFC 9112 §7.1).
//!
//! It keeps no bytes: each call decodes what it can of the input it is
//! given and remembers only where in the grammar it stopped, so a body
//! split at any byte decodes the same as one that arrived whole.
//!
//! ```text
//! chunked-body   = *chunk last-chunk trailer-section CRLF
//! chunk          = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
//! chunk-ext      = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
//! chunk-ext-val  = token / quoted-string
//! trailer-section = *( field-line CRLF )
//! ```
//!
//! The states, one per position in that grammar (SP stands for SP or HTAB,
//! `tchar` for a token's bytes):
//!
//! ```text
//! Size --hex--> Size --CR--> SizeLf --LF--> Data(size) --> DataCr --> DataLf --> Size
//!   |  --SP--> SizeBws --SP--> SizeBws          (size 0) --> TrailerStart
//!   |             |
//!   +--;----------+--;--> ExtBeforeName --SP--> ExtBeforeName
//!                              | tchar
//!                              v
//!   ExtName --tchar--> ExtName --CR--> SizeLf     ExtName --;--> ExtBeforeName
//!   ExtName --SP--> ExtAfterName --SP/=/;-->      ExtName --=--> ExtBeforeValue
//!   ExtBeforeValue --SP--> ExtBeforeValue --tchar--> ExtToken --"--> ExtQuoted
//!   ExtToken --tchar--> ExtToken --CR--> SizeLf; --SP--> ExtAfterValue; --;--> ExtBeforeName
//!   ExtQuoted --qdtext--> ExtQuoted --\--> ExtQuotedPair --octet--> ExtQuoted
//!   ExtQuoted --"--> ExtValueEnd --CR--> SizeLf; --SP--> ExtAfterValue; --;--> ExtBeforeName
//!   ExtAfterValue --SP--> ExtAfterValue --;--> ExtBeforeName
//! TrailerStart --CR--> FinalLf --LF--> Done
//! TrailerStart --tchar--> TrailerName --:--> TrailerValue --CR--> TrailerLf --LF--> TrailerStart
//! ```
//!
//! Any byte with no arrow is an error (`400`): bad whitespace only before a
//! `;` or `=` (so `5 0`, `5 ` and `5\t` are not sizes a proxy could read
//! another way), a size with no digits or past a `u64` (more than 16
//! digits after its leading zeros), a bare CR or LF,
//! an extension without a name or with a `=` but no value, a trailer line
//! that is not a field line (whitespace before the colon, obs-fold, CTLs).
//! Extensions are validated and ignored (RFC 9112 §7.1.1), trailer fields
//! validated, and handed to the caller only when it asks
//! ([`decode_keeping`](ChunkedDecoder::decode_keeping): trailers for the
//! application), never merged into the header section (§7.1.2).
//!
//! Bounds: a size line carries at most [`MAX_EXTENSION`] bytes of
//! extensions, and over the body, extension bytes may exceed sixteen per
//! chunk plus twice the chunk data by at most [`MAX_EXTENSION_EXCESS`]
//! (the rule Go adopted for CVE-2023-39326: extensions cost a client
//! bytes that the body limit never counts). The trailer section has at
//! most [`MAX_TRAILER_BYTES`] bytes and [`MAX_TRAILER_FIELDS`] fields,
//! the bounds HTTP/2's trailers have too.

use crate::syntax::{FIELD_VALUE, QDTEXT, QUOTED_PAIR, TOKEN, is_whitespace};
use crate::trailers::{MAX_TRAILER_BYTES, MAX_TRAILER_FIELDS};

/// The largest chunk size that takes another hex digit without
/// overflowing a `u64`: a 17th significant digit is an error, so a size
/// never wraps. Leading zeros are any number (`1*HEXDIG`, RFC 9112 §7.1),
/// each past the first counted as an extension byte is, so a line of
/// zeros is bounded as one of extensions.
const MAX_SIZE_BEFORE_DIGIT: u64 = u64::MAX >> 4;
/// Bytes of chunk extensions on one size line at most.
const MAX_EXTENSION: u64 = 4096;
/// How far the body's extension bytes may run ahead of what its chunks
/// allow (each chunk allows [`EXTENSION_ALLOWANCE`] plus twice its size).
const MAX_EXTENSION_EXCESS: u64 = 16 * 1024;
/// Extension bytes every chunk allows, whatever its size.
const EXTENSION_ALLOWANCE: u64 = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Size,
    SizeBws,
    ExtBeforeName,
    ExtName,
    ExtAfterName,
    ExtBeforeValue,
    ExtToken,
    ExtQuoted,
    ExtQuotedPair,
    ExtValueEnd,
    ExtAfterValue,
    SizeLf,
    Data,
    DataCr,
    DataLf,
    TrailerStart,
    TrailerName,
    TrailerValue,
    TrailerLf,
    FinalLf,
    Done,
}

impl State {
    /// Whether a byte read in this state belongs to a chunk extension.
    fn in_extension(self) -> bool {
        matches!(
            self,
            Self::SizeBws
                | Self::ExtBeforeName
                | Self::ExtName
                | Self::ExtAfterName
                | Self::ExtBeforeValue
                | Self::ExtToken
                | Self::ExtQuoted
                | Self::ExtQuotedPair
                | Self::ExtValueEnd
                | Self::ExtAfterValue
        )
    }
}

/// Why a chunked body could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChunkedError {
    /// Not the chunked grammar, or past a bound on extensions or trailers
    /// (answered with 400).
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
    /// The size line has a digit.
    digit_seen: bool,
    /// Bytes of the current size line's extensions (and its leading zeros
    /// past the first), then of the trailer section.
    line: u64,
    /// Extension bytes beyond what the chunks so far allow.
    excess: u64,
    /// Trailer fields so far.
    fields: u32,
}

impl ChunkedDecoder {
    pub(crate) fn new() -> Self {
        Self { state: State::Size, size: 0, digit_seen: false, line: 0, excess: 0, fields: 0 }
    }

    /// Whether the last chunk and the trailer section have been read.
    pub(crate) fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Decodes from the front of `input`, stopping after the first run of
    /// chunk data (returned as a sub-slice of `input`) or at the end of the
    /// body. Returns the bytes of `input` used. `budget` is how many more
    /// data bytes the body may have.
    #[inline]
    pub(crate) fn decode<'a>(
        &mut self,
        input: &'a [u8],
        budget: u64,
    ) -> Result<(usize, Option<&'a [u8]>), ChunkedError> {
        self.decode_into(input, budget, None)
    }

    /// [`decode`](Self::decode), appending the trailer section's field
    /// lines to `trailers` as they pass (each ended by `\n`; the
    /// decoder's bounds hold them to 8 KiB and 64 fields), for a caller
    /// that hands them on ([`Trailers::from_lines`](crate::Trailers::from_lines)
    /// once [`is_done`](Self::is_done)).
    pub(crate) fn decode_keeping<'a>(
        &mut self,
        input: &'a [u8],
        budget: u64,
        trailers: &mut Vec<u8>,
    ) -> Result<(usize, Option<&'a [u8]>), ChunkedError> {
        self.decode_into(input, budget, Some(trailers))
    }

    #[inline]
    fn decode_into<'a>(
        &mut self,
        input: &'a [u8],
        budget: u64,
        mut trailers: Option<&mut Vec<u8>>,
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
            if self.state == State::Done {
                return Ok((i - 1, None));
            }
            let before = self.state;
            self.state = self.step(byte, budget)?;
            if let Some(kept) = trailers.as_deref_mut() {
                match (before, self.state) {
                    // A field line's bytes, and its end.
                    (_, State::TrailerName | State::TrailerValue) => kept.push(byte),
                    (State::TrailerLf, State::TrailerStart) => kept.push(b'\n'),
                    _ => {}
                }
            }
            if self.state.in_extension() {
                self.line += 1;
                if self.line > MAX_EXTENSION || self.excess + self.line > MAX_EXTENSION_EXCESS {
                    return Err(ChunkedError::Malformed);
                }
            }
            if self.state == State::Done {
                return Ok((i, None));
            }
        }
        Ok((i, None))
    }

    /// The state after `byte` (any state but `Data` and `Done`).
    fn step(&mut self, byte: u8, budget: u64) -> Result<State, ChunkedError> {
        let token = TOKEN[usize::from(byte)];
        let space = is_whitespace(byte);
        let next = match (self.state, byte) {
            (State::Size, b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F') => {
                if self.size > MAX_SIZE_BEFORE_DIGIT {
                    return Err(ChunkedError::Malformed);
                }
                if self.size == 0 && self.digit_seen {
                    // After a leading zero: bounded as extension bytes are.
                    self.line += 1;
                    if self.line > MAX_EXTENSION || self.excess + self.line > MAX_EXTENSION_EXCESS {
                        return Err(ChunkedError::Malformed);
                    }
                }
                self.digit_seen = true;
                self.size = self.size << 4 | hex(byte);
                State::Size
            }
            (State::Size, b'\r') if self.digit_seen => State::SizeLf,
            (State::Size, b';') if self.digit_seen => State::ExtBeforeName,
            (State::Size, _) if space && self.digit_seen => State::SizeBws,
            (State::SizeBws, _) if space => State::SizeBws,
            (State::SizeBws, b';') => State::ExtBeforeName,
            (State::ExtBeforeName, _) if space => State::ExtBeforeName,
            (State::ExtBeforeName, _) if token => State::ExtName,
            (State::ExtName, _) if token => State::ExtName,
            (State::ExtName | State::ExtAfterName, _) if space => State::ExtAfterName,
            (State::ExtName | State::ExtAfterName, b'=') => State::ExtBeforeValue,
            (State::ExtBeforeValue, _) if space => State::ExtBeforeValue,
            (State::ExtBeforeValue, b'"') => State::ExtQuoted,
            (State::ExtBeforeValue | State::ExtToken, _) if token => State::ExtToken,
            (State::ExtQuoted, b'"') => State::ExtValueEnd,
            (State::ExtQuoted, b'\\') => State::ExtQuotedPair,
            (State::ExtQuoted, _) if QDTEXT[usize::from(byte)] => State::ExtQuoted,
            (State::ExtQuotedPair, _) if QUOTED_PAIR[usize::from(byte)] => State::ExtQuoted,
            (State::ExtToken | State::ExtValueEnd | State::ExtAfterValue, _) if space => {
                State::ExtAfterValue
            }
            (
                State::ExtName
                | State::ExtAfterName
                | State::ExtToken
                | State::ExtValueEnd
                | State::ExtAfterValue,
                b';',
            ) => State::ExtBeforeName,
            (State::ExtName | State::ExtToken | State::ExtValueEnd, b'\r') => State::SizeLf,
            (State::SizeLf, b'\n') => {
                let allowed = EXTENSION_ALLOWANCE.saturating_add(self.size.saturating_mul(2));
                self.excess = (self.excess + self.line).saturating_sub(allowed);
                self.line = 0;
                self.digit_seen = false;
                if self.size > budget {
                    return Err(ChunkedError::TooLarge);
                }
                if self.size == 0 { State::TrailerStart } else { State::Data }
            }
            (State::DataCr, b'\r') => State::DataLf,
            (State::DataLf, b'\n') => State::Size,
            (State::TrailerStart, b'\r') => State::FinalLf,
            (State::TrailerStart, _) if token => {
                self.fields += 1;
                if self.fields as usize > MAX_TRAILER_FIELDS {
                    return Err(ChunkedError::Malformed);
                }
                self.trailer_byte()?;
                State::TrailerName
            }
            (State::TrailerName, _) if token => {
                self.trailer_byte()?;
                State::TrailerName
            }
            (State::TrailerName, b':') => {
                self.trailer_byte()?;
                State::TrailerValue
            }
            (State::TrailerValue, _) if FIELD_VALUE[usize::from(byte)] => {
                self.trailer_byte()?;
                State::TrailerValue
            }
            (State::TrailerValue, b'\r') => State::TrailerLf,
            (State::TrailerLf, b'\n') => State::TrailerStart,
            (State::FinalLf, b'\n') => State::Done,
            _ => return Err(ChunkedError::Malformed),
        };
        Ok(next)
    }

    /// Counts a byte of the trailer section against its bound.
    fn trailer_byte(&mut self) -> Result<(), ChunkedError> {
        self.line += 1;
        if self.line > MAX_TRAILER_BYTES as u64 { Err(ChunkedError::Malformed) } else { Ok(()) }
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
        decode_with(&mut ChunkedDecoder::new(), input, cuts, None)
    }

    /// [`decode_in_pieces`] with a decoder set up by the caller, keeping
    /// the trailers in `kept` if given.
    fn decode_with(
        decoder: &mut ChunkedDecoder,
        input: &[u8],
        cuts: &[usize],
        mut kept: Option<&mut Vec<u8>>,
    ) -> Result<(Vec<u8>, Option<usize>), ChunkedError> {
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
                let (used, chunk) = match kept.as_deref_mut() {
                    Some(kept) => decoder.decode_keeping(piece, u64::MAX, kept)?,
                    None => decoder.decode(piece, u64::MAX)?,
                };
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
    fn trailers_are_kept_only_when_asked() {
        let body = b"1\r\nx\r\n0\r\nExpires: never\r\nx-sum:\t 42 \r\n\r\n";
        for cuts in [vec![], (0..body.len()).collect()] {
            let mut kept = Vec::new();
            let mut decoder = ChunkedDecoder::new();
            let (data, end) = decode_with(&mut decoder, body, &cuts, Some(&mut kept)).unwrap();
            assert_eq!((&data[..], end), (&b"x"[..], Some(body.len())));
            assert_eq!(kept, b"Expires: never\nx-sum:\t 42 \n", "the lines, CRLF as LF");
            let trailers = crate::Trailers::from_lines(&kept).expect("two fields");
            let fields: Vec<_> = trailers.iter().collect();
            assert_eq!(fields, [("Expires", &b"never"[..]), ("x-sum", &b"42"[..])]);
        }
        // Nothing kept from a body without a trailer section, or before
        // its section.
        let mut kept = Vec::new();
        decode_with(&mut ChunkedDecoder::new(), b"1\r\nx\r\n0\r\n\r\n", &[], Some(&mut kept))
            .unwrap();
        assert!(kept.is_empty());
        decode_with(&mut ChunkedDecoder::new(), b"1;a=b\r\nx\r\n0\r", &[], Some(&mut kept))
            .unwrap();
        assert!(kept.is_empty(), "extensions are not trailers");
    }

    /// Every valid form of the grammar, decoded whole and a byte at a time.
    #[test]
    fn accepts_the_whole_grammar() {
        for body in [
            &b"5\r\nhello\r\n0\r\n\r\n"[..],
            b"00005\r\nhello\r\n000\r\n\r\n",
            b"5;a\r\nhello\r\n0\r\n\r\n",
            b"5;a=b;c;d=e\r\nhello\r\n0;z\r\n\r\n",
            b"5 ;a\r\nhello\r\n0\t;\ta\r\n\r\n",
            b"5; a = b ; c\r\nhello\r\n0\r\n\r\n",
            b"5;a=\"\"\r\nhello\r\n0\r\n\r\n",
            b"5;a=\"q \\\"x\\\\ ;=\t\xff\"\r\nhello\r\n0\r\n\r\n",
            b"5;a=\"q\" ;b=\"r\";c\r\nhello\r\n0\r\n\r\n",
            b"5\r\nhello\r\n0\r\nA: b\r\nC:d\r\nE:\r\nF: \x80 g\th\r\n\r\n",
            b"FfFfFfFfFfFfFfFf;big\r\n",
        ] {
            let whole = decode_in_pieces(body, &[]);
            let cuts: Vec<usize> = (1..body.len()).collect();
            let bytewise = decode_in_pieces(body, &cuts);
            assert!(whole.is_ok(), "{:?}: {whole:?}", String::from_utf8_lossy(body));
            assert_eq!(whole, bytewise, "{:?}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn rejects_malformed_input() {
        for bad in [
            // Sizes.
            &b"\r\n"[..],
            b"x\r\n",
            b";a\r\n",
            b" 5\r\n",
            b"+5\r\n",
            b"-5\r\n",
            b"0x5\r\n",
            b"5 0\r\n",
            b"5x\r\n",
            b"5,5\r\n",
            b"5 \r\n",
            b"5\t\r\n",
            b"5 x\r\n",
            b"5\n",
            b"5\rX",
            b"11111111111111111\r\n",
            b"00000000000000010000000000000000\r\n",
            // Data and its CRLF.
            b"5\r\nhelloX\r\n",
            b"5\r\nhello\rX",
            b"5\r\nhello\n0\r\n\r\n",
            // Extensions.
            b"5;\r\n",
            b"5;;a\r\n",
            b"5; \r\n",
            b"5;a \r\n",
            b"5;a=\r\n",
            b"5;a= \r\n",
            b"5;a=b \r\n",
            b"5;a b\r\n",
            b"5;a=b c\r\n",
            b"5;a==b\r\n",
            b"5;=b\r\n",
            b"5;a@b\r\n",
            b"5;a=b@c\r\n",
            b"5;a=\"b\r\n",
            b"5;a=\"b\"c\r\n",
            b"5;a=\"\x7f\"\r\n",
            b"5;a=\"\\\x01\"\r\n",
            b"5;a=b\n",
            b"5;a=b\rc",
            // Trailers and the end.
            b"0\r\nbad\ntrailer\r\n\r\n",
            b"0\r\nbad trailer\r\n\r\n",
            b"0\r\nX : y\r\n\r\n",
            b"0\r\n: y\r\n\r\n",
            b"0\r\n y\r\n\r\n",
            b"0\r\nX: y\r\n folded\r\n\r\n",
            b"0\r\nX: a\x00b\r\n\r\n",
            b"0\r\nX: a\rb\r\n\r\n",
            b"0\r\nX: a\x1bb\r\n\r\n",
            b"0\r\nX\x80: y\r\n\r\n",
            b"0\r\nX: y\n\r\n",
            b"0\r\n\rX",
            b"0\r\n\n",
            b"0 \r\n\r\n",
        ] {
            assert_eq!(decode_in_pieces(bad, &[]).unwrap_err(), ChunkedError::Malformed, "{bad:?}");
            let cuts: Vec<usize> = (1..bad.len()).collect();
            assert_eq!(
                decode_in_pieces(bad, &cuts).unwrap_err(),
                ChunkedError::Malformed,
                "{bad:?} a byte at a time"
            );
        }
    }

    #[test]
    fn extensions_are_bounded_per_line_and_per_body() {
        let line = |ext: usize| format!("1;a={}\r\nx\r\n", "e".repeat(ext));
        // One line: at most MAX_EXTENSION bytes (";a=" counts).
        let ok = MAX_EXTENSION as usize - 3;
        assert!(decode_in_pieces(format!("{}0\r\n\r\n", line(ok)).as_bytes(), &[]).is_ok());
        let over = format!("{}0\r\n\r\n", line(ok + 1));
        assert_eq!(decode_in_pieces(over.as_bytes(), &[]).unwrap_err(), ChunkedError::Malformed);
        // Lines within bounds, until their excess over the data passes
        // MAX_EXTENSION_EXCESS: each 1-byte chunk allows 18 bytes.
        let per_line = 1003;
        let fits = (MAX_EXTENSION_EXCESS / (per_line as u64 + 3 - 18)) as usize;
        let body = |lines: usize| format!("{}0\r\n\r\n", line(per_line).repeat(lines));
        assert!(decode_in_pieces(body(fits).as_bytes(), &[]).is_ok());
        assert_eq!(
            decode_in_pieces(body(fits + 1).as_bytes(), &[]).unwrap_err(),
            ChunkedError::Malformed
        );
        // Data earns room: the same extensions on 1 KiB chunks are fine.
        let big = format!("400;a={}\r\n{}\r\n", "e".repeat(per_line), "d".repeat(1024));
        let body = format!("{}0\r\n\r\n", big.repeat(4 * fits));
        assert!(decode_in_pieces(body.as_bytes(), &[]).is_ok());
    }

    /// `1*HEXDIG` allows any number of leading zeros (hyper and node read
    /// them; a size of more than 16 digits was refused): each past the
    /// first counts as an extension byte does, so a line of zeros is
    /// bounded as a line of extensions; 16 significant digits, no more.
    #[test]
    fn leading_zeros_are_any_number_within_the_line_bound() {
        let zeros = |n: usize| "0".repeat(n);
        for n in [16, 17, 100, MAX_EXTENSION as usize] {
            let body = format!("{}5\r\nhello\r\n{}\r\n\r\n", zeros(n), zeros(n + 1));
            let (data, end) = decode_in_pieces(body.as_bytes(), &[]).unwrap();
            assert_eq!((&data[..], end), (&b"hello"[..], Some(body.len())), "{n} zeros");
            let full = format!("{}ffffffffffffffff\r\n", zeros(n));
            assert!(decode_in_pieces(full.as_bytes(), &[]).is_ok(), "{n} zeros, 16 digits");
            let over = format!("{}10000000000000000\r\n", zeros(n));
            let refused = decode_in_pieces(over.as_bytes(), &[]);
            assert_eq!(refused.unwrap_err(), ChunkedError::Malformed, "{n} zeros, 17 digits");
        }
        // Past the line's bound, alone or with extensions after them.
        let over = format!("{}5\r\nhello\r\n0\r\n\r\n", zeros(MAX_EXTENSION as usize + 2));
        assert_eq!(decode_in_pieces(over.as_bytes(), &[]).unwrap_err(), ChunkedError::Malformed);
        let ext = format!("{}1;a={}\r\nx\r\n", zeros(2049), "e".repeat(2048));
        assert_eq!(decode_in_pieces(ext.as_bytes(), &[]).unwrap_err(), ChunkedError::Malformed);
        // And over the body: lines of zeros on 1-byte chunks, each within
        // its line's bound, until their excess passes MAX_EXTENSION_EXCESS.
        let line = format!("{}1\r\nx\r\n", zeros(1001));
        let body = format!("{}0\r\n\r\n", line.repeat(20));
        assert_eq!(decode_in_pieces(body.as_bytes(), &[]).unwrap_err(), ChunkedError::Malformed);
        let body = format!("{}0\r\n\r\n", line.repeat(10));
        assert!(decode_in_pieces(body.as_bytes(), &[]).is_ok());
    }

    #[test]
    fn trailers_are_bounded_in_bytes_and_fields() {
        let fields = |n: usize| (0..n).map(|i| format!("X-{i}: v\r\n")).collect::<String>();
        let body = |f: &str| format!("0\r\n{f}\r\n");
        let max = MAX_TRAILER_FIELDS;
        assert!(decode_in_pieces(body(&fields(max)).as_bytes(), &[]).is_ok());
        assert_eq!(
            decode_in_pieces(body(&fields(max + 1)).as_bytes(), &[]).unwrap_err(),
            ChunkedError::Malformed
        );
        // "X: " and the value count; the CRLF does not.
        let value = MAX_TRAILER_BYTES - 2;
        let long = |n: usize| body(&format!("X:{}\r\n", "v".repeat(n)));
        assert!(decode_in_pieces(long(value).as_bytes(), &[]).is_ok());
        assert_eq!(
            decode_in_pieces(long(value + 1).as_bytes(), &[]).unwrap_err(),
            ChunkedError::Malformed
        );
    }

    #[test]
    fn a_chunk_over_the_budget_is_too_large() {
        let mut decoder = ChunkedDecoder::new();
        assert_eq!(decoder.decode(b"10\r\n", 15).unwrap_err(), ChunkedError::TooLarge);
        let mut decoder = ChunkedDecoder::new();
        assert_eq!(decoder.decode(b"10\r\n", 16).unwrap(), (4, None));
        let mut decoder = ChunkedDecoder::new();
        assert_eq!(
            decoder.decode(b"ffffffffffffffff\r\n", u64::MAX - 1).unwrap_err(),
            ChunkedError::TooLarge
        );
    }

    /// A chunk extension: `;name`, `;name=token` or `;name="quoted"`, with
    /// optional whitespace around `;` and `=`.
    fn extension() -> impl Strategy<Value = String> {
        let token = "[!#$%&'*+.^_`|~0-9A-Za-z-]{1,8}";
        let quoted = "\"([ \t!#-\\[\\]-~]|\\\\[ -~]){0,8}\"";
        let bws = "[ \t]{0,2}";
        (bws, token, proptest::option::of((bws, bws, prop_oneof![token, quoted]))).prop_map(
            |(ws, name, value)| match value {
                None => format!("{ws};{ws}{name}"),
                Some((a, b, v)) => format!("{ws};{ws}{name}{a}={b}{v}"),
            },
        )
    }

    /// A trailer field line, without its CRLF.
    fn trailer() -> impl Strategy<Value = String> {
        ("[!#$%&'*+.^_`|~0-9A-Za-z-]{1,8}", "[ \t]{0,2}", "[ -~]{0,12}")
            .prop_map(|(name, ws, value)| format!("{name}:{ws}{value}"))
    }

    fn encode(chunks: &[(Vec<u8>, Vec<String>)], trailers: &[String]) -> Vec<u8> {
        let mut out = Vec::new();
        for (chunk, extensions) in chunks.iter().filter(|(c, _)| !c.is_empty()) {
            out.extend_from_slice(
                format!("{:x}{}\r\n", chunk.len(), extensions.concat()).as_bytes(),
            );
            out.extend_from_slice(chunk);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\n");
        for field in trailers {
            out.extend_from_slice(field.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

        /// Any split of any encoding, with any valid extensions and
        /// trailers, decodes to the same bytes.
        #[test]
        fn splits_do_not_matter(
            chunks in proptest::collection::vec(
                (
                    proptest::collection::vec(any::<u8>(), 0..40),
                    proptest::collection::vec(extension(), 0..3),
                ),
                0..6,
            ),
            trailers in proptest::collection::vec(trailer(), 0..3),
            cuts in proptest::collection::vec(any::<usize>(), 0..12),
        ) {
            let encoded = encode(&chunks, &trailers);
            let mut kept = Vec::new();
            let (data, end) =
                decode_with(&mut ChunkedDecoder::new(), &encoded, &cuts, Some(&mut kept)).unwrap();
            let expected: Vec<u8> = chunks.iter().flat_map(|(c, _)| c.iter().copied()).collect();
            prop_assert_eq!(data, expected);
            prop_assert_eq!(end, Some(encoded.len()));
            // The trailers kept are the fields sent, values trimmed.
            let sent = crate::Trailers::from_lines(trailers.join("\n").as_bytes()).unwrap();
            prop_assert_eq!(crate::Trailers::from_lines(&kept).unwrap(), sent);
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
