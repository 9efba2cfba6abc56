//! The request-target's four forms (RFC 9112 §3.2) and the Host field's
//! value (RFC 9110 §7.2): which the server accepts, and what a handler
//! sees of them.
//!
//! ```text
//! request-target = origin-form      absolute-path [ "?" query ]     any method
//!                / absolute-form    absolute-URI                    any method
//!                / authority-form   uri-host ":" port               CONNECT only
//!                / asterisk-form    "*"                             OPTIONS only
//! Host           = uri-host [ ":" port ]
//! uri-host       = IP-literal / IPv4address / reg-name
//! ```
//!
//! - origin-form: the handler sees the target as sent; its authority is
//!   the Host field's value.
//! - absolute-form (`http://a/x?y`, scheme `http` or `https` in any case):
//!   a server MUST accept it and take the authority from it, ignoring the
//!   Host field's value (§3.2.2). The handler sees the path and query
//!   (`/x?y`; `/` when both are empty). The authority must name a host
//!   (RFC 9110 §4.2.1) and carry no userinfo (RFC 9110 §4.2.4 treats it
//!   as an error).
//! - authority-form: only CONNECT, which this server does not tunnel: a
//!   valid one is `501`, anything else `400` (RFC 9110 §9.3.6).
//! - asterisk-form: only OPTIONS.
//!
//! No form carries a fragment (`#` delimits one in a URI and is not part
//! of any form's grammar), so a target with `#` is `400`, and so is one
//! with `"` `<` `>`, which clients always percent-encode, or with a byte
//! past ASCII, which no URI holds (`/caf%C3%A9`, never the raw UTF-8;
//! `syntax::TARGET`). The other bytes RFC 3986 excludes (`\` `^` `` ` ``
//! `{` `|` `}`) are taken, as hyper takes them: browsers send them raw.
//! Paths and queries are not percent-decoded.
//!
//! A Host value is `uri-host [ ":" port ]`, or empty (what a client sends
//! when the target URI has no authority, §3.2): an IP-literal in brackets
//! (IPv6 or IPvFuture), or a reg-name of unreserved, sub-delims and
//! percent-encoded bytes (which an IPv4 address also matches), then an
//! optional port of digits. Userinfo, whitespace, paths and anything else
//! are invalid (`400`).

use std::net::Ipv6Addr;

use crate::syntax::{REG_NAME, TARGET};

/// The largest port number of a CONNECT target.
const MAX_PORT: u32 = 65_535;

/// A request-target the server accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Target<'a> {
    /// What the handler sees as the target: the origin-form as sent, the
    /// path and query of an absolute-form, or `*`.
    pub(crate) path_and_query: &'a str,
    /// The authority of an absolute-form target (`host[:port]`).
    pub(crate) authority: Option<&'a str>,
    /// `https` for an absolute-form target that names it (in any case),
    /// otherwise `http`.
    pub(crate) scheme: &'static str,
}

/// Why a request-target is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TargetError {
    /// Not a form the method may use (answered with 400).
    Invalid,
    /// A valid CONNECT: this server opens no tunnels (answered with 501).
    Connect,
}

/// Classifies `target` for `method`.
pub(crate) fn parse<'a>(method: &str, target: &'a str) -> Result<Target<'a>, TargetError> {
    let bytes = target.as_bytes();
    if method == "CONNECT" {
        return Err(if is_authority_form(bytes) {
            TargetError::Connect
        } else {
            TargetError::Invalid
        });
    }
    if !bytes.iter().all(|&b| TARGET[b as usize]) {
        return Err(TargetError::Invalid);
    }
    match bytes {
        [b'/', ..] => Ok(Target { path_and_query: target, authority: None, scheme: "http" }),
        b"*" if method == "OPTIONS" => {
            Ok(Target { path_and_query: target, authority: None, scheme: "http" })
        }
        _ => absolute_form(target).ok_or(TargetError::Invalid),
    }
}

/// An `http` or `https` absolute-URI with a host: its authority, path and
/// query.
fn absolute_form(target: &str) -> Option<Target<'_>> {
    let (scheme, rest) = target.split_once("://")?;
    let scheme = if scheme.eq_ignore_ascii_case("http") {
        "http"
    } else if scheme.eq_ignore_ascii_case("https") {
        "https"
    } else {
        return None;
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path_and_query) = rest.split_at(end);
    let (host, _) = split_host(authority.as_bytes())?;
    if host.is_empty() {
        return None;
    }
    let path_and_query = if path_and_query.is_empty() { "/" } else { path_and_query };
    Some(Target { path_and_query, authority: Some(authority), scheme })
}

/// The bytes of a plain `reg-name [ ":" port ]`: reg-name characters and ':'.
const HOST_BYTE: [bool; 256] = {
    let mut table = REG_NAME;
    table[b':' as usize] = true;
    table
};

/// `uri-host ":" port` with a host and a port from 0 to 65535.
fn is_authority_form(target: &[u8]) -> bool {
    let Some((host, Some(port))) = split_host(target) else {
        return false;
    };
    !host.is_empty()
        && !port.is_empty()
        && port.len() <= 5
        && port.iter().fold(0, |n, &d| n * 10 + u32::from(d - b'0')) <= MAX_PORT
}

/// Whether `value` is a valid Host field value: `uri-host [ ":" port ]`,
/// possibly empty.
pub(crate) fn is_valid_host(value: &[u8]) -> bool {
    // The usual value in one pass: a reg-name without percent-encoding,
    // then an optional port. Anything else (an IP-literal, `%XX`, or an
    // invalid byte) takes the whole grammar, which decides.
    // Every byte a reg-name character or ':', judged without a branch per
    // byte (the usual Host value is 10-20 bytes, repeated on every request).
    if !value.iter().fold(true, |all, &b| all & HOST_BYTE[usize::from(b)]) {
        return split_host(value).is_some();
    }
    // Digits are reg-name characters: only the port's shape is left.
    value
        .iter()
        .position(|&b| b == b':')
        .is_none_or(|colon| value[colon + 1..].iter().all(u8::is_ascii_digit))
}

/// Whether a valid Host value (or `:authority`) names no host: it is
/// empty, or a port alone (`:80`). A target URI built from it is an
/// `http` URI with an empty host, which a recipient MUST reject (RFC 9110
/// §4.2.1; RFC 9112 §3.3 lets a server reject it or apply a default).
pub(crate) fn names_no_host(value: &[u8]) -> bool {
    // A valid value's uri-host is an IP-literal (`[`), a reg-name (any
    // other first byte) or empty (nothing, or the port's ':' first).
    matches!(value.first(), None | Some(b':'))
}

/// The longest Host value [`KnownHost`] remembers.
const KNOWN_HOST_MAX: usize = 64;

/// The last valid Host value a connection sent: a keep-alive connection
/// sends the same one with every request, and a value equal to it is
/// valid without the grammar (a comparison instead of a pass per byte).
#[derive(Clone, Debug)]
pub(crate) struct KnownHost {
    bytes: [u8; KNOWN_HOST_MAX],
    /// `bytes[..len]` is valid; `0` at first (the empty value is valid).
    len: u8,
}

impl KnownHost {
    pub(crate) const fn new() -> Self {
        Self { bytes: [0; KNOWN_HOST_MAX], len: 0 }
    }

    /// [`is_valid_host`], remembering the value if it is valid.
    pub(crate) fn is_valid(&mut self, value: &[u8]) -> bool {
        if value == &self.bytes[..usize::from(self.len)] {
            return true;
        }
        if !is_valid_host(value) {
            return false;
        }
        if let (Some(slot), Ok(len)) =
            (self.bytes.get_mut(..value.len()), u8::try_from(value.len()))
        {
            slot.copy_from_slice(value);
            self.len = len;
        }
        true
    }
}

/// Splits `uri-host [ ":" port ]` into the host and the port's digits;
/// `None` when it is not that.
fn split_host(value: &[u8]) -> Option<(&[u8], Option<&[u8]>)> {
    let (host, rest) = if let [b'[', literal @ ..] = value {
        let close = literal.iter().position(|&b| b == b']')?;
        if !is_ip_literal(&literal[..close]) {
            return None;
        }
        value.split_at(close + 2)
    } else {
        let end = value.iter().position(|&b| b == b':').unwrap_or(value.len());
        let (host, rest) = value.split_at(end);
        if !is_reg_name(host) {
            return None;
        }
        (host, rest)
    };
    match rest {
        [] => Some((host, None)),
        [b':', port @ ..] if port.iter().all(u8::is_ascii_digit) => Some((host, Some(port))),
        _ => None,
    }
}

/// `*( unreserved / pct-encoded / sub-delims )`.
fn is_reg_name(host: &[u8]) -> bool {
    let mut i = 0;
    while i < host.len() {
        if host[i] == b'%' {
            let (Some(a), Some(b)) = (host.get(i + 1), host.get(i + 2)) else {
                return false;
            };
            if !a.is_ascii_hexdigit() || !b.is_ascii_hexdigit() {
                return false;
            }
            i += 3;
        } else if REG_NAME[usize::from(host[i])] {
            i += 1;
        } else {
            return false;
        }
    }
    true
}

/// The inside of `"[" ( IPv6address / IPvFuture ) "]"`.
fn is_ip_literal(literal: &[u8]) -> bool {
    if let [b'v' | b'V', rest @ ..] = literal {
        // IPvFuture = "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" )
        let Some(dot) = rest.iter().position(|&b| b == b'.') else {
            return false;
        };
        let (version, address) = (&rest[..dot], &rest[dot + 1..]);
        return !version.is_empty()
            && version.iter().all(u8::is_ascii_hexdigit)
            && !address.is_empty()
            && address.iter().all(|&b| b == b':' || REG_NAME[usize::from(b)]);
    }
    std::str::from_utf8(literal).is_ok_and(|text| text.parse::<Ipv6Addr>().is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_known_host_answers_as_the_grammar_does() {
        let mut known = KnownHost::new();
        let long = format!("{}.example:80", "a".repeat(70));
        let values: [&[u8]; 9] = [
            b"",
            b"a:80",
            b"a:80",
            b"a b",
            b"a:80",
            b"a:8x",
            long.as_bytes(),
            long.as_bytes(),
            b"[::1]:443",
        ];
        for _ in 0..2 {
            for value in values {
                assert_eq!(known.is_valid(value), is_valid_host(value), "{value:?}");
            }
        }
        // An invalid value is never remembered; a long one is not kept.
        assert!(known.is_valid(b"[::1]:443") && !known.is_valid(b"[::1]:44x"));
        assert!(known.is_valid(long.as_bytes()) && known.is_valid(b"[::1]:443"));
    }

    #[test]
    fn the_one_pass_host_check_agrees_with_the_grammar() {
        // Every value of up to 5 bytes over an alphabet that reaches every
        // branch: reg-name bytes, digits, ':', '%', hex, brackets, an IPv6
        // literal's pieces, a space and a non-ASCII byte.
        let alphabet = b"a1:%F[]v. \x80";
        let mut value = Vec::new();
        fn each(value: &mut Vec<u8>, alphabet: &[u8], left: usize) -> usize {
            assert_eq!(
                is_valid_host(value),
                split_host(value).is_some(),
                "{:?}",
                String::from_utf8_lossy(value)
            );
            if left == 0 {
                return 1;
            }
            let mut checked = 1;
            for &b in alphabet {
                value.push(b);
                checked += each(value, alphabet, left - 1);
                value.pop();
            }
            checked
        }
        assert_eq!(
            each(&mut value, alphabet, 5),
            (0..=5).map(|k| alphabet.len().pow(k)).sum::<usize>()
        );
        for host in ["127.0.0.1:8080", "[::1]:80", "a%41b:1", "x:1:2", "a:", ":"] {
            assert_eq!(is_valid_host(host.as_bytes()), split_host(host.as_bytes()).is_some());
        }
    }

    fn origin(path_and_query: &str) -> Result<Target<'_>, TargetError> {
        Ok(Target { path_and_query, authority: None, scheme: "http" })
    }

    fn absolute<'a>(
        path_and_query: &'a str,
        authority: &'a str,
    ) -> Result<Target<'a>, TargetError> {
        Ok(Target { path_and_query, authority: Some(authority), scheme: "http" })
    }

    fn secure<'a>(path_and_query: &'a str, authority: &'a str) -> Result<Target<'a>, TargetError> {
        Ok(Target { path_and_query, authority: Some(authority), scheme: "https" })
    }

    #[test]
    fn the_four_forms() {
        assert_eq!(parse("GET", "/"), origin("/"));
        assert_eq!(parse("GET", "/a/b?c=d&e"), origin("/a/b?c=d&e"));
        assert_eq!(parse("OPTIONS", "*"), origin("*"));
        assert_eq!(parse("GET", "http://a/x?y"), absolute("/x?y", "a"));
        assert_eq!(parse("POST", "HTTPS://Example.COM:8443/x"), secure("/x", "Example.COM:8443"));
        assert_eq!(parse("GET", "https://a/x"), secure("/x", "a"));
        assert_eq!(parse("GET", "HtTp://a/x"), absolute("/x", "a"));
        assert_eq!(parse("GET", "http://a"), absolute("/", "a"));
        assert_eq!(parse("GET", "http://a:80"), absolute("/", "a:80"));
        assert_eq!(parse("GET", "http://a?q"), absolute("?q", "a"));
        assert_eq!(parse("GET", "http://[::1]:8080/"), absolute("/", "[::1]:8080"));
        assert_eq!(parse("OPTIONS", "http://a"), absolute("/", "a"));
        assert_eq!(parse("CONNECT", "a:443"), Err(TargetError::Connect));
        assert_eq!(parse("CONNECT", "[::1]:0"), Err(TargetError::Connect));
        assert_eq!(parse("CONNECT", "a:65535"), Err(TargetError::Connect));
        // Every byte a URI's path and query may hold.
        let all = "/AZaz09-._~!$&'()*+,;=:@/%20[]?/?:@";
        assert_eq!(parse("GET", all), origin(all));
        // What browsers send unencoded, and hyper takes.
        for taken in ["/a|b^c", "/g?query={me{name}}", "/?f=a|b^c`d", "/a\\b"] {
            assert_eq!(parse("GET", taken), origin(taken));
        }
    }

    #[test]
    fn invalid_targets() {
        for (method, target) in [
            ("GET", "x"),
            ("GET", "?x"),
            ("GET", "/a#b"),
            ("GET", "*"),
            ("POST", "*"),
            ("OPTIONS", "*x"),
            ("GET", "a:80"),
            ("GET", "ftp://a/x"),
            ("GET", "http:/x"),
            ("GET", "http:x"),
            ("GET", "http://"),
            ("GET", "http:///x"),
            ("GET", "http://:80/x"),
            ("GET", "http://u@a/x"),
            ("GET", "http://u:p@a/x"),
            ("GET", "http://a:x/x"),
            ("GET", "http://a/x#f"),
            ("GET", "/a b"),
            ("GET", "/a\"b"),
            ("GET", "/a<b"),
            ("GET", "/a>b"),
            ("GET", "/?a=<b>"),
            ("GET", "/a?\u{7f}"),
            ("GET", "/caf\u{e9}"),
            ("GET", "/?q=\u{20ac}"),
            ("GET", "http://a/caf\u{e9}"),
            ("GET", "http://a%zz/"),
            ("GET", "http://[::1/"),
            ("GET", "http+x://a/"),
            ("CONNECT", "/x"),
            ("CONNECT", "*"),
            ("CONNECT", "a"),
            ("CONNECT", "a:"),
            ("CONNECT", ":443"),
            ("CONNECT", "a:65536"),
            ("CONNECT", "a:000443"),
            ("CONNECT", "http://a:80"),
            ("CONNECT", "u@a:80"),
        ] {
            assert_eq!(parse(method, target), Err(TargetError::Invalid), "{method} {target}");
        }
    }

    #[test]
    fn valid_hosts() {
        for host in [
            "",
            "a",
            "example.com",
            "example.com:",
            "example.com:8080",
            "127.0.0.1",
            "127.0.0.1:65536",
            "[::1]",
            "[::1]:80",
            "[2001:db8::ff00:42:8329]",
            "[::ffff:192.0.2.1]",
            "[v1.fe80::a+en1]",
            "[V7.x]",
            "a-b_c~d.e!$&'()*+,;=",
            "%41%62c",
            ":80",
        ] {
            assert!(is_valid_host(host.as_bytes()), "{host:?}");
        }
    }

    #[test]
    fn invalid_hosts() {
        for host in [
            &b"a b"[..],
            b" a",
            b"a\t",
            b"a/b",
            b"a?b",
            b"a#b",
            b"a@b",
            b"u:p@a",
            b"a:b",
            b"a:80:80",
            b"a:80a",
            b"a:-1",
            b"http://a",
            b"[::1",
            b"::1",
            b"[::1]x",
            b"[::1]:a",
            b"[]",
            b"[zz::1]",
            b"[1.2.3.4]",
            b"[::1%eth0]",
            b"[v1.]",
            b"[v.x]",
            b"[vx.y]",
            b"[v1.a b]",
            b"a%",
            b"a%4",
            b"a%zz",
            b"a\"b",
            b"a\\b",
            b"a<b>",
            b"a[b]",
            b"caf\xc3\xa9",
            b"a\x00",
        ] {
            assert!(!is_valid_host(host), "{:?}", String::from_utf8_lossy(host));
        }
    }
}
