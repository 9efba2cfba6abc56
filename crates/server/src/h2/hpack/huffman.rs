//! The Huffman code of RFC 7541 Appendix B, both ways.
//!
//! The code is canonical: codes of one length are consecutive integers in
//! symbol order, and each length's first code follows from the previous
//! length's (`first[l] = (first[l-1] + count[l-1]) << 1`). So decoding
//! needs no tree. Left-justify the next 32 input bits; the code's length
//! is the smallest `l` whose left-justified limit (one past the last code
//! of length `l`) is above them; its symbol is at `offset[l] + code -
//! first[l]` in the symbols sorted by code. Most symbols are 5 to 8 bits,
//! so the length search ends after one to four comparisons. The tables
//! are computed from [`CODES`] at compile time, and a test checks that the
//! code is canonical.
//!
//! A string ends with up to 7 bits of padding, the most significant bits of
//! EOS (all ones). Padding longer than 7 bits, padding that is not all ones,
//! and the EOS symbol inside the string are decoding errors (RFC 7541
//! section 5.2).

use super::DecodeError;

/// The end-of-string symbol: 30 one bits, never valid inside a string.
const EOS: usize = 256;
/// The longest code, in bits (EOS and three others).
const MAX_CODE_BITS: u32 = 30;
/// Padding longer than this is an error (RFC 7541 section 5.2).
const MAX_PADDING_BITS: u32 = 7;
/// The shortest code, in bits: where the decoder's length search starts.
const MIN_CODE_BITS: u32 = 5;
/// The input bits a code is looked up in, left-justified: room for the
/// longest code ([`MAX_CODE_BITS`]); the tables have an entry per length
/// below it.
const LOOKUP_BITS: u32 = 32;
const LENGTHS: usize = LOOKUP_BITS as usize;
/// The decoder's accumulator: input bits left-justified in a `u64`, a
/// byte added while one fits below the bits held.
const ACC_BITS: u32 = u64::BITS;
const BYTE_BITS: u32 = u8::BITS;
/// The most bits the accumulator may hold before a byte is added.
const FILL_BELOW: u32 = ACC_BITS - BYTE_BITS;

/// `(code, bits)` for each symbol: the 256 octets, then EOS (Appendix B).
#[rustfmt::skip]
const CODES: [(u32, u8); 257] = [
    (0x1ff8, 13), (0x7fffd8, 23), (0xfffffe2, 28), (0xfffffe3, 28), (0xfffffe4, 28),
    (0xfffffe5, 28), (0xfffffe6, 28), (0xfffffe7, 28), (0xfffffe8, 28), (0xffffea, 24),
    (0x3ffffffc, 30), (0xfffffe9, 28), (0xfffffea, 28), (0x3ffffffd, 30), (0xfffffeb, 28),
    (0xfffffec, 28), (0xfffffed, 28), (0xfffffee, 28), (0xfffffef, 28), (0xffffff0, 28),
    (0xffffff1, 28), (0xffffff2, 28), (0x3ffffffe, 30), (0xffffff3, 28), (0xffffff4, 28),
    (0xffffff5, 28), (0xffffff6, 28), (0xffffff7, 28), (0xffffff8, 28), (0xffffff9, 28),
    (0xffffffa, 28), (0xffffffb, 28), (0x14, 6), (0x3f8, 10), (0x3f9, 10), (0xffa, 12),
    (0x1ff9, 13), (0x15, 6), (0xf8, 8), (0x7fa, 11), (0x3fa, 10), (0x3fb, 10), (0xf9, 8),
    (0x7fb, 11), (0xfa, 8), (0x16, 6), (0x17, 6), (0x18, 6), (0x0, 5), (0x1, 5), (0x2, 5),
    (0x19, 6), (0x1a, 6), (0x1b, 6), (0x1c, 6), (0x1d, 6), (0x1e, 6), (0x1f, 6), (0x5c, 7),
    (0xfb, 8), (0x7ffc, 15), (0x20, 6), (0xffb, 12), (0x3fc, 10), (0x1ffa, 13), (0x21, 6),
    (0x5d, 7), (0x5e, 7), (0x5f, 7), (0x60, 7), (0x61, 7), (0x62, 7), (0x63, 7), (0x64, 7),
    (0x65, 7), (0x66, 7), (0x67, 7), (0x68, 7), (0x69, 7), (0x6a, 7), (0x6b, 7), (0x6c, 7),
    (0x6d, 7), (0x6e, 7), (0x6f, 7), (0x70, 7), (0x71, 7), (0x72, 7), (0xfc, 8), (0x73, 7),
    (0xfd, 8), (0x1ffb, 13), (0x7fff0, 19), (0x1ffc, 13), (0x3ffc, 14), (0x22, 6), (0x7ffd, 15),
    (0x3, 5), (0x23, 6), (0x4, 5), (0x24, 6), (0x5, 5), (0x25, 6), (0x26, 6), (0x27, 6), (0x6, 5),
    (0x74, 7), (0x75, 7), (0x28, 6), (0x29, 6), (0x2a, 6), (0x7, 5), (0x2b, 6), (0x76, 7),
    (0x2c, 6), (0x8, 5), (0x9, 5), (0x2d, 6), (0x77, 7), (0x78, 7), (0x79, 7), (0x7a, 7),
    (0x7b, 7), (0x7ffe, 15), (0x7fc, 11), (0x3ffd, 14), (0x1ffd, 13), (0xffffffc, 28),
    (0xfffe6, 20), (0x3fffd2, 22), (0xfffe7, 20), (0xfffe8, 20), (0x3fffd3, 22), (0x3fffd4, 22),
    (0x3fffd5, 22), (0x7fffd9, 23), (0x3fffd6, 22), (0x7fffda, 23), (0x7fffdb, 23), (0x7fffdc, 23),
    (0x7fffdd, 23), (0x7fffde, 23), (0xffffeb, 24), (0x7fffdf, 23), (0xffffec, 24), (0xffffed, 24),
    (0x3fffd7, 22), (0x7fffe0, 23), (0xffffee, 24), (0x7fffe1, 23), (0x7fffe2, 23), (0x7fffe3, 23),
    (0x7fffe4, 23), (0x1fffdc, 21), (0x3fffd8, 22), (0x7fffe5, 23), (0x3fffd9, 22), (0x7fffe6, 23),
    (0x7fffe7, 23), (0xffffef, 24), (0x3fffda, 22), (0x1fffdd, 21), (0xfffe9, 20), (0x3fffdb, 22),
    (0x3fffdc, 22), (0x7fffe8, 23), (0x7fffe9, 23), (0x1fffde, 21), (0x7fffea, 23), (0x3fffdd, 22),
    (0x3fffde, 22), (0xfffff0, 24), (0x1fffdf, 21), (0x3fffdf, 22), (0x7fffeb, 23), (0x7fffec, 23),
    (0x1fffe0, 21), (0x1fffe1, 21), (0x3fffe0, 22), (0x1fffe2, 21), (0x7fffed, 23), (0x3fffe1, 22),
    (0x7fffee, 23), (0x7fffef, 23), (0xfffea, 20), (0x3fffe2, 22), (0x3fffe3, 22), (0x3fffe4, 22),
    (0x7ffff0, 23), (0x3fffe5, 22), (0x3fffe6, 22), (0x7ffff1, 23), (0x3ffffe0, 26),
    (0x3ffffe1, 26), (0xfffeb, 20), (0x7fff1, 19), (0x3fffe7, 22), (0x7ffff2, 23), (0x3fffe8, 22),
    (0x1ffffec, 25), (0x3ffffe2, 26), (0x3ffffe3, 26), (0x3ffffe4, 26), (0x7ffffde, 27),
    (0x7ffffdf, 27), (0x3ffffe5, 26), (0xfffff1, 24), (0x1ffffed, 25), (0x7fff2, 19),
    (0x1fffe3, 21), (0x3ffffe6, 26), (0x7ffffe0, 27), (0x7ffffe1, 27), (0x3ffffe7, 26),
    (0x7ffffe2, 27), (0xfffff2, 24), (0x1fffe4, 21), (0x1fffe5, 21), (0x3ffffe8, 26),
    (0x3ffffe9, 26), (0xffffffd, 28), (0x7ffffe3, 27), (0x7ffffe4, 27), (0x7ffffe5, 27),
    (0xfffec, 20), (0xfffff3, 24), (0xfffed, 20), (0x1fffe6, 21), (0x3fffe9, 22), (0x1fffe7, 21),
    (0x1fffe8, 21), (0x7ffff3, 23), (0x3fffea, 22), (0x3fffeb, 22), (0x1ffffee, 25),
    (0x1ffffef, 25), (0xfffff4, 24), (0xfffff5, 24), (0x3ffffea, 26), (0x7ffff4, 23),
    (0x3ffffeb, 26), (0x7ffffe6, 27), (0x3ffffec, 26), (0x3ffffed, 26), (0x7ffffe7, 27),
    (0x7ffffe8, 27), (0x7ffffe9, 27), (0x7ffffea, 27), (0x7ffffeb, 27), (0xffffffe, 28),
    (0x7ffffec, 27), (0x7ffffed, 27), (0x7ffffee, 27), (0x7ffffef, 27), (0x7fffff0, 27),
    (0x3ffffee, 26), (0x3fffffff, 30),
];

/// The decoding tables, derived from [`CODES`] (see the module docs).
struct Canonical {
    /// Symbols ordered by code (length first, then value).
    sorted: [u16; 257],
    /// The first code of each length.
    first: [u32; LENGTHS],
    /// Where each length's symbols start in `sorted`.
    offset: [u16; LENGTHS],
    /// One past the last code of each length, left-justified to
    /// [`LOOKUP_BITS`] (`0` for a length with no codes, so it never
    /// matches).
    limit: [u64; LENGTHS],
}

const fn canonical() -> Canonical {
    let mut count = [0u16; LENGTHS];
    let mut first = [u32::MAX; LENGTHS];
    let mut symbol = 0;
    while symbol < CODES.len() {
        let (code, bits) = CODES[symbol];
        count[bits as usize] += 1;
        if code < first[bits as usize] {
            first[bits as usize] = code;
        }
        symbol += 1;
    }
    let mut offset = [0u16; LENGTHS];
    let mut limit = [0u64; LENGTHS];
    let mut start = 0u16;
    let mut bits = 1;
    while bits < LENGTHS {
        offset[bits] = start;
        if count[bits] > 0 {
            let end = first[bits] as u64 + count[bits] as u64;
            limit[bits] = end << (LENGTHS - bits);
        }
        start += count[bits];
        bits += 1;
    }
    // Place each symbol at its length's offset plus its rank in the length.
    let mut sorted = [0u16; 257];
    let mut symbol = 0;
    while symbol < CODES.len() {
        let (code, bits) = CODES[symbol];
        let at = offset[bits as usize] as u32 + (code - first[bits as usize]);
        sorted[at as usize] = symbol as u16;
        symbol += 1;
    }
    Canonical { sorted, first, offset, limit }
}

static TABLES: Canonical = canonical();

/// The Huffman-encoded length of `src`, in bytes.
pub(crate) fn encoded_len(src: &[u8]) -> usize {
    let bits: usize = src.iter().map(|&b| usize::from(CODES[usize::from(b)].1)).sum();
    bits.div_ceil(BYTE_BITS as usize)
}

/// Appends the Huffman encoding of `src` to `dst`, padded with ones.
pub(crate) fn encode(src: &[u8], dst: &mut Vec<u8>) {
    dst.reserve(encoded_len(src));
    // Bits are queued at the low end of `acc`; `bits` of them are pending.
    let mut acc: u64 = 0;
    let mut bits: u32 = 0;
    for &byte in src {
        let (code, len) = CODES[usize::from(byte)];
        acc = (acc << len) | u64::from(code);
        bits += u32::from(len);
        while bits >= BYTE_BITS {
            bits -= BYTE_BITS;
            dst.push((acc >> bits) as u8);
        }
    }
    if bits > 0 {
        // The padding: the high bits of EOS, all ones.
        let pad = BYTE_BITS - bits;
        dst.push(((acc << pad) | ((1 << pad) - 1)) as u8);
    }
}

/// Appends the decoding of the Huffman string `src` to `dst`.
///
/// # Errors
/// [`DecodeError::HuffmanEos`] for EOS inside the string,
/// [`DecodeError::HuffmanPadding`] for padding longer than 7 bits or not
/// all ones. `dst` may hold a prefix of the string after an error.
pub(crate) fn decode(src: &[u8], dst: &mut Vec<u8>) -> Result<(), DecodeError> {
    // At most 8/5 symbols per byte (the shortest code's 5 bits).
    dst.reserve(src.len() * BYTE_BITS as usize / MIN_CODE_BITS as usize);
    // Input bits are left-justified in `acc`: the next bit is bit 63.
    let mut acc: u64 = 0;
    let mut bits: u32 = 0;
    let mut input = src.iter();
    loop {
        while bits <= FILL_BELOW {
            let Some(&byte) = input.next() else { break };
            acc |= u64::from(byte) << (FILL_BELOW - bits);
            bits += BYTE_BITS;
        }
        if bits == 0 {
            return Ok(());
        }
        // Past the input, pretend ones follow (EOS's bits): a complete code
        // never reads them, and padding is recognised by them.
        let padded = if bits >= ACC_BITS { acc } else { acc | (u64::MAX >> bits) };
        let top = padded >> (ACC_BITS - LOOKUP_BITS);
        let mut len = MIN_CODE_BITS;
        while len < MAX_CODE_BITS && top >= TABLES.limit[len as usize] {
            len += 1;
        }
        if len > bits {
            // Only padding is left, or a code cut short.
            let all_ones = padded == u64::MAX;
            return if bits <= MAX_PADDING_BITS && all_ones {
                Ok(())
            } else {
                Err(DecodeError::HuffmanPadding)
            };
        }
        let code = (top >> (LOOKUP_BITS - len)) as u32;
        let at = u32::from(TABLES.offset[len as usize]) + (code - TABLES.first[len as usize]);
        let symbol = usize::from(TABLES.sorted[at as usize]);
        if symbol == EOS {
            return Err(DecodeError::HuffmanEos);
        }
        dst.push(symbol as u8);
        acc <<= len;
        bits -= len;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn decoded(src: &[u8]) -> Result<Vec<u8>, DecodeError> {
        let mut out = Vec::new();
        decode(src, &mut out).map(|()| out)
    }

    fn encoded(src: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        encode(src, &mut out);
        assert_eq!(out.len(), encoded_len(src));
        out
    }

    #[test]
    fn the_code_is_canonical() {
        let mut by_code: Vec<(u8, u32, usize)> =
            CODES.iter().enumerate().map(|(s, &(c, b))| (b, c, s)).collect();
        by_code.sort();
        let mut next = 0u64;
        let mut len = by_code[0].0;
        for &(bits, code, symbol) in &by_code {
            next <<= bits - len;
            len = bits;
            assert_eq!(u64::from(code), next, "symbol {symbol}");
            assert!(code < (1 << bits));
            next += 1;
        }
        assert_eq!(next, 1 << MAX_CODE_BITS, "the code is complete");
        assert_eq!(CODES[EOS], ((1 << 30) - 1, 30));
    }

    /// RFC 7541 C.4.1 to C.4.3 and C.6.1: strings and their encodings.
    #[test]
    fn rfc_7541_appendix_c_strings() {
        let cases: [(&str, &str); 6] = [
            ("www.example.com", "f1e3c2e5f23a6ba0ab90f4ff"),
            ("no-cache", "a8eb10649cbf"),
            ("custom-key", "25a849e95ba97d7f"),
            ("custom-value", "25a849e95bb8e8b4bf"),
            ("302", "6402"),
            ("Mon, 21 Oct 2013 20:13:21 GMT", "d07abe941054d444a8200595040b8166e082a62d1bff"),
        ];
        for (text, hex) in cases {
            let wire = unhex(hex);
            assert_eq!(encoded(text.as_bytes()), wire, "{text}");
            assert_eq!(decoded(&wire).unwrap(), text.as_bytes(), "{text}");
        }
    }

    #[test]
    fn every_octet_round_trips() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(decoded(&encoded(&all)).unwrap(), all);
        for byte in 0..=255u8 {
            let alone = [byte; 1];
            assert_eq!(decoded(&encoded(&alone)).unwrap(), alone);
            let many = [byte; 9];
            assert_eq!(decoded(&encoded(&many)).unwrap(), many);
        }
        assert_eq!(decoded(&[]).unwrap(), b"");
    }

    /// RFC 7541 5.2: padding of 8 or more bits is an error, even all ones.
    #[test]
    fn padding_longer_than_seven_bits_is_an_error() {
        assert_eq!(decoded(&[0xff]), Err(DecodeError::HuffmanPadding));
        // 'a' (00011, 5 bits) then 11 bits of ones.
        assert_eq!(decoded(&[0b0001_1111, 0xff]), Err(DecodeError::HuffmanPadding));
        // 'a' then 3 bits of ones: fine.
        assert_eq!(decoded(&[0b0001_1111]).unwrap(), b"a");
    }

    /// RFC 7541 5.2: padding that is not the MSBs of EOS is an error.
    #[test]
    fn padding_with_a_zero_bit_is_an_error() {
        assert_eq!(decoded(&[0b0001_1110]), Err(DecodeError::HuffmanPadding));
        assert_eq!(decoded(&[0b0001_1011]), Err(DecodeError::HuffmanPadding));
    }

    /// RFC 7541 5.2: EOS inside a string is an error.
    #[test]
    fn eos_in_the_string_is_an_error() {
        // 30 ones then 2 ones of padding: EOS is complete.
        assert_eq!(decoded(&[0xff; 4]), Err(DecodeError::HuffmanEos));
        // 'a', then EOS, then padding.
        let mut wire = vec![0b0001_1111u8];
        wire.extend_from_slice(&[0xff; 4]);
        assert_eq!(decoded(&wire), Err(DecodeError::HuffmanEos));
    }

    #[test]
    fn a_code_cut_short_is_an_error() {
        // '\0' is 13 bits (0x1ff8): its first 8 bits alone are not padding.
        assert_eq!(decoded(&[0xff]), Err(DecodeError::HuffmanPadding));
        let full = encoded(b"\0");
        assert_eq!(decoded(&full[..1]), Err(DecodeError::HuffmanPadding));
    }

    proptest::proptest! {
        #[test]
        fn round_trip(src in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            proptest::prop_assert_eq!(decoded(&encoded(&src)).unwrap(), src);
        }

        #[test]
        fn random_input_never_panics(src in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let _ = decoded(&src);
        }
    }

    pub(crate) fn unhex(hex: &str) -> Vec<u8> {
        let digits: Vec<u8> = hex.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
        digits
            .chunks(2)
            .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
            .collect()
    }
}
