//! Character classes of HTTP's grammar (RFC 9110 §5.5-5.6, RFC 3986 §2),
//! as 256-entry tables built at compile time: one load per byte.

/// A table of the bytes `c` for which `$accepts` holds, built at compile
/// time.
macro_rules! table {
    (|$c:ident| $accepts:expr) => {{
        let mut table = [false; 256];
        let mut b = 0;
        while b < 256 {
            let $c = b as u8;
            table[b] = $accepts;
            b += 1;
        }
        table
    }};
}

/// `tchar` (RFC 9110 §5.6.2): the bytes of a token (field names, methods,
/// chunk-extension names and token values).
pub(crate) const TOKEN: [bool; 256] = table!(|c| {
    c.is_ascii_alphanumeric()
        || matches!(
            c,
            b'!' | b'#'
                | b'$'
                | b'%'
                | b'&'
                | b'\''
                | b'*'
                | b'+'
                | b'-'
                | b'.'
                | b'^'
                | b'_'
                | b'`'
                | b'|'
                | b'~'
        )
});

/// A field value's bytes (RFC 9110 §5.5): `field-vchar` (VCHAR and
/// obs-text), SP and HTAB. Everything else (CTLs, DEL, CR, LF, NUL) is not.
pub(crate) const FIELD_VALUE: [bool; 256] =
    table!(|c| matches!(c, b'\t' | b' '..=b'~') || c >= 0x80);

/// `qdtext` (RFC 9110 §5.6.4): a quoted-string's bytes other than the
/// DQUOTE that ends it and the backslash that starts a quoted-pair.
pub(crate) const QDTEXT: [bool; 256] =
    table!(|c| matches!(c, b'\t' | b' ' | 0x21 | 0x23..=0x5B | 0x5D..=0x7E) || c >= 0x80);

/// The octet of a `quoted-pair` after its backslash: HTAB, SP, VCHAR,
/// obs-text.
pub(crate) const QUOTED_PAIR: [bool; 256] =
    table!(|c| matches!(c, b'\t' | b' '..=b'~') || c >= 0x80);

/// `unreserved / sub-delims` (RFC 3986 §2.2-2.3): the bytes of a reg-name
/// other than `pct-encoded`'s `%`.
pub(crate) const REG_NAME: [bool; 256] = table!(|c| {
    c.is_ascii_alphanumeric()
        || matches!(
            c,
            b'-' | b'.'
                | b'_'
                | b'~'
                | b'!'
                | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
        )
});

/// The bytes the server takes in a request-target: visible ASCII except
/// `#` (a fragment is no form's part) and `"` `<` `>`, which no client
/// sends unencoded (browsers percent-encode them in paths and queries
/// alike) and which quote, delimit and inject in logs and markup. SP and
/// controls never reach here (httparse refuses them). Bytes past ASCII
/// are refused too: a URI has none (RFC 3986 §2; `/caf%C3%A9`, not the
/// raw UTF-8), browsers percent-encode them, and RFC 9112 §3 asks for a
/// 400 (an outside probe, Http11Probe's MAL-NON-ASCII-URL, checks it).
/// RFC 3986 also excludes `\` `^` `` ` `` `{` `|` `}`, but browsers send
/// those as they are (the WHATWG URL standard leaves `{` `}` `|` `` ` ``
/// `^` `\` unencoded in queries, some of them in paths): as hyper and the
/// `http` crate, the server takes them rather than refuse working
/// browsers (the 400 is a SHOULD).
pub(crate) const TARGET: [bool; 256] =
    table!(|c| matches!(c, 0x21..=0x7E) && !matches!(c, b'#' | b'"' | b'<' | b'>'));

/// Whether `name` is a token (RFC 9110 §5.6.2), as a field name must be.
/// Folds without early exits: short names check in a few instructions.
pub(crate) fn is_token(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().fold(true, |ok, &b| ok & TOKEN[usize::from(b)])
}

/// Whether every byte of `value` may stand in a field value
/// ([`FIELD_VALUE`]: no control byte but HTAB, no DEL). Range tests folded
/// without early exits, not the table: they vectorize (16 bytes a step),
/// where table lookups go a byte at a time, 0.03 against 0.21 ns a byte
/// (0.7 with an early exit). It matters for HTTP/2, where one byte of an
/// indexed HPACK reference brings a field of up to 4 KiB to check.
pub(crate) fn is_field_value(value: &[u8]) -> bool {
    !value.iter().fold(false, |bad, &b| bad | ((b < 0x20) & (b != b'\t')) | (b == 0x7f))
}

/// Whether `name` is a token without upper-case letters (an HTTP/2 field
/// name, RFC 9113 §8.2.1). Range tests folded without early exits, as in
/// [`is_field_value`]: 0.14 ns a byte, where `TOKEN` with an early exit
/// took 0.57 (a 4 KiB name can be one byte of an HPACK reference).
pub(crate) fn is_lowercase_token(name: &[u8]) -> bool {
    !name.is_empty()
        && name.iter().fold(true, |ok, &b| {
            ok & ((b.wrapping_sub(b'a') < 26)
                | (b.wrapping_sub(b'0') < 10)
                // `#` `$` `%` `&` `'`
                | (b.wrapping_sub(b'#') < 5)
                | (b == b'!')
                | (b == b'*')
                | (b == b'+')
                | (b == b'-')
                | (b == b'.')
                | (b == b'^')
                | (b == b'_')
                | (b == b'`')
                | (b == b'|')
                | (b == b'~'))
        })
}

/// Whether `byte` is SP or HTAB (`OWS`, `BWS` and `RWS` are made of these).
pub(crate) const fn is_whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t')
}

/// Significant digits a [`parse_decimal`] value may have: nineteen always
/// fit a `u64` (its largest value has twenty).
const MAX_DECIMAL_DIGITS: usize = 19;

/// A `Content-Length` value (RFC 9112 §6.3, RFC 9113 §8.1.1): `1*DIGIT`,
/// nothing else (no sign, no space, no list). Leading zeros are taken in
/// any number (`007` is 7, as Go and hyper read it); a value of more than
/// [`MAX_DECIMAL_DIGITS`] significant digits is `None`, never wrapped
/// (§6.3: "prevent parsing errors due to integer conversion overflows").
/// The head's size limit bounds how long the value can be.
pub(crate) fn parse_decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let zeros = digits.iter().take_while(|&&d| d == b'0').count();
    let significant = &digits[zeros..];
    if significant.len() > MAX_DECIMAL_DIGITS {
        return None;
    }
    Some(significant.iter().fold(0, |n, &d| n * 10 + u64::from(d - b'0')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_at_the_edges_of_their_range() {
        let nines = "9".repeat(MAX_DECIMAL_DIGITS);
        let zeros = "0".repeat(100);
        for (value, parsed) in [
            ("0", Some(0)),
            ("000", Some(0)),
            ("007", Some(7)),
            (&*format!("{zeros}5"), Some(5)),
            (&*format!("{zeros}{nines}"), Some(9_999_999_999_999_999_999)),
            (&*zeros, Some(0)),
            (&*nines, Some(9_999_999_999_999_999_999)),
            // Twenty significant digits: refused, even those a u64 holds.
            ("10000000000000000000", None),
            ("18446744073709551615", None),
            // Past u64::MAX: a wrapping parse would read 5.
            ("18446744073709551621", None),
            ("", None),
            ("+5", None),
            ("-0", None),
            (" 5", None),
            ("5 ", None),
            ("5,5", None),
            ("0x5", None),
            ("5\0", None),
            ("\u{0665}", None), // an Arabic-Indic five: a digit, not a DIGIT
        ] {
            assert_eq!(parse_decimal(value.as_bytes()), parsed, "{value:?}");
        }
    }

    #[test]
    fn classes() {
        let all = |t: &[bool; 256]| (0..=255u8).filter(|&b| t[usize::from(b)]).collect::<Vec<_>>();
        assert_eq!(
            String::from_utf8(all(&TOKEN)).unwrap(),
            "!#$%&'*+-.0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ^_`abcdefghijklmnopqrstuvwxyz|~"
        );
        assert_eq!(
            String::from_utf8(all(&REG_NAME)).unwrap(),
            "!$&'()*+,-.0123456789;=ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~"
        );
        for b in [0u8, b'\r', b'\n', 0x7f, 0x1f] {
            assert!(!FIELD_VALUE[usize::from(b)] && !QDTEXT[usize::from(b)], "{b:#x}");
            assert!(!QUOTED_PAIR[usize::from(b)], "{b:#x}");
        }
        for b in [b'"', b'\\'] {
            assert!(
                !QDTEXT[usize::from(b)]
                    && QUOTED_PAIR[usize::from(b)]
                    && FIELD_VALUE[usize::from(b)]
            );
        }
        assert!(FIELD_VALUE[0x80] && QDTEXT[0xff] && !TOKEN[0x80] && !REG_NAME[0x80]);
    }

    /// The range-test checks agree with the tables, byte by byte, alone
    /// and at every place of a value long enough to take the vector loop.
    #[test]
    fn fast_checks_agree_with_the_tables() {
        for b in 0..=255u8 {
            let value = FIELD_VALUE[usize::from(b)];
            let lower_token = TOKEN[usize::from(b)] && !b.is_ascii_uppercase();
            assert_eq!(is_field_value(&[b]), value, "{b:#x}");
            assert_eq!(is_lowercase_token(&[b]), lower_token, "{b:#x}");
            for at in [0, 15, 16, 31, 63, 64, 99] {
                let mut long = vec![b'a'; 100];
                long[at] = b;
                assert_eq!(is_field_value(&long), value, "{b:#x} at {at}");
                assert_eq!(is_lowercase_token(&long), lower_token, "{b:#x} at {at}");
            }
        }
        assert!(is_field_value(b"") && !is_lowercase_token(b""));
    }
}
