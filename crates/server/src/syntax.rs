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

/// The bytes the server takes in a request-target: visible ASCII and
/// bytes past it, except `#` (a fragment is no form's part) and `"` `<`
/// `>`, which no client sends unencoded (browsers percent-encode them in
/// paths and queries alike) and which quote, delimit and inject in logs
/// and markup. SP and controls never reach here (httparse refuses them).
/// RFC 3986 also excludes `\` `^` `` ` `` `{` `|` `}` and non-ASCII, but
/// browsers send some of those as they are (`{` `}` `|` `` ` `` in
/// queries, `|` `^` in paths) and curl sends UTF-8 raw: as hyper and the
/// `http` crate, the server takes them rather than refuse working
/// clients (RFC 9112 §3.2's 400 is a SHOULD).
pub(crate) const TARGET: [bool; 256] =
    table!(|c| matches!(c, 0x21..=0x7E | 0x80..=0xFF) && !matches!(c, b'#' | b'"' | b'<' | b'>'));

/// Whether `byte` is SP or HTAB (`OWS`, `BWS` and `RWS` are made of these).
pub(crate) const fn is_whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t')
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
