//! The HTTP/1.1 upgrade to h2c (RFC 7540 section 3.2): what `curl --http2`
//! does. RFC 9113 (section 3.1) deprecated it, and hyper and nghttpd do not
//! serve it; falconet does, as the issue asked, for the one case it
//! defines cleanly: a request without a body.
//!
//! A request upgrades when it is HTTP/1.1, has no body, has an `Upgrade`
//! field naming `h2c`, a `Connection` field naming `Upgrade` and
//! `HTTP2-Settings`, and exactly one `HTTP2-Settings` field whose value is
//! base64url (no padding) of a valid SETTINGS payload. Anything short of
//! that is served as HTTP/1.1, which RFC 7540 allows (a server may ignore
//! the upgrade). The server then answers `101 Switching Protocols`, sends
//! its SETTINGS, and answers the request on stream 1: at most 16 KiB of
//! its body until the client's preface shows it has switched, since curl
//! 7.x fails the transfer when more than 32 KiB follow the `101` in one
//! read (`connection.rs`, `BEFORE_PREFACE_DATA`).

use super::frame::PREFACE;
use super::head::Head;
use super::hpack::Field;

/// The answer that switches the connection.
pub(crate) const SWITCHING: &[u8] =
    b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";

/// A request that asked for h2c, ready to become stream 1.
#[derive(Debug)]
pub(crate) struct Upgrade {
    /// The decoded `HTTP2-Settings` payload.
    pub(crate) settings: Vec<u8>,
    /// The request, as HTTP/2 fields.
    pub(crate) head: Head,
}

/// Fields that belong to the HTTP/1.1 connection, not to the request.
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "upgrade",
    "http2-settings",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "host",
    "te",
];

/// The upgrade `headers` ask for, if they ask for one correctly (see the
/// module docs; the caller checked version and body).
pub(crate) fn from_http1(
    method: &str,
    path: &str,
    authority: &str,
    headers: &[httparse::Header<'_>],
) -> Option<Upgrade> {
    let mut settings = None;
    let mut connection_tokens = (false, false);
    let mut close = false;
    for header in headers {
        if header.name.eq_ignore_ascii_case("http2-settings") {
            if settings.is_some() {
                return None; // more than one: not an upgrade (3.2.1)
            }
            settings = Some(base64url(header.value.trim_ascii())?);
        } else if header.name.eq_ignore_ascii_case("connection") {
            for token in header.value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
                connection_tokens.0 |= token.eq_ignore_ascii_case(b"upgrade");
                connection_tokens.1 |= token.eq_ignore_ascii_case(b"http2-settings");
                close |= token.eq_ignore_ascii_case(b"close");
            }
        }
    }
    let settings = settings?;
    // `close` (RFC 9112 9.6): no request after this one may be processed,
    // so no switch to a protocol whose point is more of them; it is
    // answered over HTTP/1.1 and the connection closed.
    if connection_tokens != (true, true) || close || settings.len() % 6 != 0 {
        return None;
    }
    // As many parameters as a SETTINGS frame may carry, no more.
    if settings.len() / 6 > super::connection::MAX_SETTINGS_PARAMS {
        return None;
    }
    // Values out of range: not an upgrade, rather than a connection error
    // after the 101.
    let mut check = super::frame::Settings::INITIAL;
    for param in settings.chunks_exact(6) {
        let id = u16::from_be_bytes([param[0], param[1]]);
        let value = u32::from_be_bytes([param[2], param[3], param[4], param[5]]);
        check.apply(id, value).ok()?;
    }
    let mut head = Head::default();
    head.add(Field::new(b":method", method.as_bytes()));
    head.add(Field::new(b":scheme", b"http"));
    if !authority.is_empty() {
        head.add(Field::new(b":authority", authority.as_bytes()));
    }
    head.add(Field::new(b":path", path.as_bytes()));
    let mut lower = Vec::new();
    for header in headers {
        if HOP_BY_HOP.iter().any(|hop| header.name.eq_ignore_ascii_case(hop)) {
            continue;
        }
        lower.clear();
        lower.extend(header.name.bytes().map(|b| b.to_ascii_lowercase()));
        head.add(Field::new(&lower, header.value.trim_ascii()));
    }
    head.finish().ok()?;
    Some(Upgrade { settings, head })
}

/// Whether `after`, the bytes that arrived behind an upgrade request, can
/// begin what must follow a `101`: the HTTP/2 preface. Anything else is
/// HTTP/1 requests pipelined behind it, which a `101` would turn into a
/// bad preface (a connection error, the upgrade's own answer lost): the
/// server then declines the upgrade (RFC 9110 7.8 lets it ignore one) and
/// answers them all over HTTP/1.1.
pub(crate) fn may_follow(after: &[u8]) -> bool {
    let n = after.len().min(PREFACE.len());
    after[..n] == PREFACE[..n]
}

/// Whether an `Upgrade` field's value names `h2c`.
pub(crate) fn names_h2c(value: &[u8]) -> bool {
    value.split(|&b| b == b',').any(|token| token.trim_ascii().eq_ignore_ascii_case(b"h2c"))
}

/// Decodes base64url without padding (RFC 4648 section 5; RFC 7540 3.2.1),
/// tolerating trailing `=`; `None` for anything else.
fn base64url(text: &[u8]) -> Option<Vec<u8>> {
    let text = text.strip_suffix(b"==").or_else(|| text.strip_suffix(b"=")).unwrap_or(text);
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for &c in text {
        let value = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' | b'+' => 62,
            b'_' | b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    // Leftover bits must be zero padding, fewer than a byte.
    if bits >= 6 || acc & ((1 << bits) - 1) != 0 {
        return None;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64url_decodes_settings() {
        // curl's value: MAX_CONCURRENT_STREAMS 100, INITIAL_WINDOW_SIZE
        // 33554432, ENABLE_PUSH 0.
        let decoded = base64url(b"AAMAAABkAAQCAAAAAAIAAAAA").unwrap();
        assert_eq!(decoded.len(), 18);
        assert_eq!(&decoded[..6], [0, 3, 0, 0, 0, 100]);
        assert_eq!(base64url(b"").unwrap(), b"");
        assert_eq!(base64url(b"AA==").unwrap(), [0]);
        assert_eq!(base64url(b"AB"), None, "non-zero padding bits");
        assert_eq!(base64url(b"A"), None, "six bits are not a byte");
        assert_eq!(base64url(b"AA*A"), None);
    }

    fn header<'a>(name: &'a str, value: &'a str) -> httparse::Header<'a> {
        httparse::Header { name, value: value.as_bytes() }
    }

    #[test]
    fn only_a_complete_request_upgrades() {
        let good = [
            header("Host", "a"),
            header("Connection", "Upgrade, HTTP2-Settings"),
            header("Upgrade", "h2c"),
            header("HTTP2-Settings", "AAMAAABk"),
            header("Accept", "*/*"),
        ];
        let upgrade = from_http1("GET", "/x", "a", &good).unwrap();
        assert_eq!(upgrade.settings, [0, 3, 0, 0, 0, 100]);
        assert_eq!(upgrade.head.path(), Some("/x"));
        let fields: Vec<_> = upgrade.head.fields().collect();
        assert_eq!(fields, [(&b"accept"[..], &b"*/*"[..])]);

        let mut no_token = good;
        no_token[1] = header("Connection", "Upgrade");
        assert!(from_http1("GET", "/", "a", &no_token).is_none());
        let mut twice = good.to_vec();
        twice.push(header("HTTP2-Settings", ""));
        assert!(from_http1("GET", "/", "a", &twice).is_none());
        let mut odd = good;
        odd[3] = header("HTTP2-Settings", "AAMA");
        assert!(from_http1("GET", "/", "a", &odd).is_none());
        // 32 parameters, as a SETTINGS frame may carry: 33 is too many.
        let params = |n: usize| {
            let raw: Vec<u8> = (0..n).flat_map(|_| [0, 3, 0, 0, 0, 100]).collect();
            raw.chunks(3)
                .flat_map(|three| {
                    let bits = u32::from_be_bytes([0, three[0], three[1], three[2]]);
                    (0..4).rev().map(move |i| {
                        let digit = (bits >> (6 * i)) & 63;
                        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                            [digit as usize] as char
                    })
                })
                .collect::<String>()
        };
        for (n, upgrades) in [(32, true), (33, false)] {
            let value = params(n);
            let mut long = good;
            long[3] = header("HTTP2-Settings", &value);
            assert_eq!(from_http1("GET", "/", "a", &long).is_some(), upgrades, "{n} parameters");
        }
        let mut close = good;
        close[1] = header("Connection", "Upgrade, HTTP2-Settings, close");
        assert!(from_http1("GET", "/", "a", &close).is_none(), "RFC 9112 9.6");
        let mut apart = good.to_vec();
        apart.push(header("connection", "Close"));
        assert!(from_http1("GET", "/", "a", &apart).is_none(), "on a line of its own");
        assert!(names_h2c(b"websocket, h2c"));
        assert!(!names_h2c(b"h2"));
    }
}
