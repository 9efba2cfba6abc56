//! A request's fields as HTTP/2 carries them (RFC 9113 section 8.3), checked
//! while the field block is decoded and kept in one reusable buffer.
//!
//! The rules (each a malformed request, a stream error `PROTOCOL_ERROR`,
//! section 8.1.1):
//!
//! - names: tokens (RFC 9110 5.1) without uppercase, so no colon, space,
//!   control or non-ASCII octet (8.2.1), and no connection-specific field
//!   (`connection`, `keep-alive`, `proxy-connection`, `transfer-encoding`,
//!   `upgrade`; `te` other than `trailers`: 8.2.2);
//! - values: no control octet but tab (NUL, CR and LF are a MUST; the
//!   rest of RFC 9110 5.5's `field-value` a SHOULD, taken as HTTP/1 takes
//!   it, which answers `400`), no leading or trailing space or tab (8.2.1);
//! - pseudo-fields: only `:method`, `:scheme`, `:authority`, `:path`, each
//!   at most once, all before the first regular field (8.3); `:method`,
//!   `:scheme` and `:path` present, except that CONNECT has only
//!   `:method` and `:authority` (8.5); `:scheme` a URI scheme (RFC 3986
//!   3.1); `:path` not empty, `/...` or `*` for OPTIONS, of the bytes
//!   HTTP/1 takes in a target (no fragment, no `"` `<` `>`: 8.3.1);
//! - `content-length`: digits only, and every copy the same (8.1.1);
//! - `:authority` and `host`: each a valid `uri-host [ ":" port ]` (as
//!   HTTP/1 checks Host), at most one `host`, and a `host` naming the same
//!   authority as `:authority` (8.3.1: a server SHOULD treat a difference as
//!   malformed).
//!
//! `cookie` fields are joined into one with `"; "` before the application
//! sees them (8.2.3).

use core::ops::Range;

use super::hpack::Field;
use crate::syntax::parse_decimal;
use crate::trailers::{MAX_TRAILER_BYTES, MAX_TRAILER_FIELDS};

/// Why a request's fields are malformed (RFC 9113 8.1.1): the stream is
/// reset with `PROTOCOL_ERROR`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Malformed {
    /// A name with uppercase or a forbidden octet (8.2.1).
    Name,
    /// A value with a control octet other than tab (NUL, CR, LF, DEL and
    /// the rest), or surrounding whitespace (8.2.1, RFC 9110 5.5).
    Value,
    /// A connection-specific field (8.2.2).
    ConnectionField,
    /// An unknown, repeated or misplaced pseudo-field, or a response one
    /// (8.3).
    PseudoField,
    /// `:method`, `:scheme` or `:path` missing, a `:scheme` that is not a
    /// URI scheme (RFC 3986 3.1), or a `:path` that is not a valid request
    /// target (8.3.1, 8.5; no fragment, as HTTP/1's target has none).
    MissingPseudoField,
    /// A `content-length` that is not a number, or copies that differ
    /// (8.1.1).
    ContentLength,
    /// An invalid or empty `:authority` (RFC 9110 4.2.1: an `http` URI
    /// with an empty host is invalid; a client with no authority sends no
    /// `:authority`, 8.3.1), an invalid `host`, more than one `host`, or a
    /// `host` that differs from `:authority` (8.3.1).
    Authority,
}

/// `scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )` (RFC 3986 3.1).
fn is_scheme(scheme: &str) -> bool {
    let mut bytes = scheme.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic())
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

/// One field's place in [`Head`]'s buffer.
#[derive(Clone, Debug)]
struct Span {
    name: Range<usize>,
    value: Range<usize>,
}

/// A request head decoded from a field block: pseudo-fields and regular
/// fields in one buffer, reused from request to request.
#[derive(Debug, Default)]
pub struct Head {
    bytes: Vec<u8>,
    fields: Vec<Span>,
    method: Option<Range<usize>>,
    scheme: Option<Range<usize>>,
    authority: Option<Range<usize>>,
    path: Option<Range<usize>>,
    content_length: Option<u64>,
    /// The first rule broken, if any: later fields are not kept.
    malformed: Option<Malformed>,
    /// A regular field was seen: no pseudo-field may follow.
    regular: bool,
    /// The `host` field's value, and how many were sent.
    host: Option<Range<usize>>,
    hosts: usize,
    /// The `cookie` crumbs so far, joined with `"; "` (8.2.3).
    cookie: Vec<u8>,
    /// The block went past the header-list or field limit: the fields
    /// here are those that fit.
    oversized: bool,
}

impl Head {
    /// Empties the head for the next field block, keeping its memory.
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.fields.clear();
        self.method = None;
        self.scheme = None;
        self.authority = None;
        self.path = None;
        self.content_length = None;
        self.malformed = None;
        self.regular = false;
        self.host = None;
        self.hosts = 0;
        self.cookie.clear();
        self.oversized = false;
    }

    /// The block went past a limit (set by the connection).
    pub(crate) fn mark_oversized(&mut self) {
        self.oversized = true;
    }

    /// Whether the request's fields went past the header-list or field
    /// limit: only those that fit are here, and the server answers `431`.
    pub fn is_oversized(&self) -> bool {
        self.oversized
    }

    fn push(&mut self, bytes: &[u8]) -> Range<usize> {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(bytes);
        start..self.bytes.len()
    }

    fn fail(&mut self, why: Malformed) {
        self.malformed.get_or_insert(why);
    }

    /// Adds one decoded field, checking it.
    pub(crate) fn add(&mut self, field: Field<'_>) {
        if self.malformed.is_some() {
            return;
        }
        let Field { name, value, .. } = field;
        // Checks that cost the same for every byte (they vectorize): an
        // indexed reference of one byte may bring a 4 KiB field.
        if !crate::syntax::is_field_value(value)
            || value.first().is_some_and(|&b| crate::syntax::is_whitespace(b))
            || value.last().is_some_and(|&b| crate::syntax::is_whitespace(b))
        {
            return self.fail(Malformed::Value);
        }
        if let Some(pseudo) = name.strip_prefix(b":") {
            if self.regular {
                return self.fail(Malformed::PseudoField);
            }
            let slot = match pseudo {
                b"method" => &self.method,
                b"scheme" => &self.scheme,
                b"authority" => &self.authority,
                b"path" => &self.path,
                _ => return self.fail(Malformed::PseudoField),
            };
            if slot.is_some() {
                return self.fail(Malformed::PseudoField);
            }
            let range = Some(self.push(value));
            match pseudo {
                b"method" => self.method = range,
                b"scheme" => self.scheme = range,
                b"authority" => self.authority = range,
                _ => self.path = range,
            }
            return;
        }
        self.regular = true;
        if !crate::syntax::is_lowercase_token(name) {
            return self.fail(Malformed::Name);
        }
        match name {
            b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding"
            | b"upgrade" => return self.fail(Malformed::ConnectionField),
            // 8.2.2: `trailers` only; a token, so in any case (RFC 9110
            // 5.6.2).
            b"te" if !value.eq_ignore_ascii_case(b"trailers") => {
                return self.fail(Malformed::ConnectionField);
            }
            b"content-length" => {
                let Some(length) = parse_decimal(value) else {
                    return self.fail(Malformed::ContentLength);
                };
                if self.content_length.is_some_and(|known| known != length) {
                    return self.fail(Malformed::ContentLength);
                }
                self.content_length = Some(length);
            }
            b"cookie" => {
                if !self.cookie.is_empty() {
                    self.cookie.extend_from_slice(b"; ");
                }
                self.cookie.extend_from_slice(value);
                return;
            }
            b"host" => {
                self.hosts += 1;
                if self.hosts > 1 || !crate::target::is_valid_host(value) {
                    return self.fail(Malformed::Authority);
                }
                let range = self.push(value);
                self.host = Some(range.clone());
                let name = self.push(name);
                self.fields.push(Span { name, value: range });
                return;
            }
            _ => {}
        }
        let name = self.push(name);
        let value = self.push(value);
        self.fields.push(Span { name, value });
    }

    /// Checks the block as a whole once it is decoded.
    pub(crate) fn finish(&mut self) -> Result<(), Malformed> {
        if let Some(why) = self.malformed {
            return Err(why);
        }
        self.join_cookies();
        if let Some(authority) = &self.authority {
            let authority = &self.bytes[authority.clone()];
            if !crate::target::is_valid_host(authority) || crate::target::names_no_host(authority) {
                return Err(Malformed::Authority);
            }
            if let Some(host) = &self.host
                && !self.bytes[host.clone()].eq_ignore_ascii_case(authority)
            {
                return Err(Malformed::Authority);
            }
        } else if let Some(host) = &self.host
            && crate::target::names_no_host(&self.bytes[host.clone()])
        {
            // The Host field stands for `:authority` (8.3.1): the same rule.
            return Err(Malformed::Authority);
        }
        if self.method() == Some("CONNECT") {
            // 8.5: only :method and :authority.
            if self.scheme.is_some() || self.path.is_some() || self.authority.is_none() {
                return Err(Malformed::MissingPseudoField);
            }
            return Ok(());
        }
        let (Some(method), Some(scheme), Some(path)) = (self.method(), self.scheme(), self.path())
        else {
            // Past the header-list limit the fields that did not fit were
            // not kept: an absent one is no sign of a malformed request,
            // which is answered `431` (what came of it is checked).
            return if self.oversized { Ok(()) } else { Err(Malformed::MissingPseudoField) };
        };
        let valid_method =
            !method.is_empty() && method.bytes().all(|b| crate::syntax::TOKEN[usize::from(b)]);
        let valid_path = path.starts_with('/') || (path == "*" && method == "OPTIONS");
        let invalid_byte = |b: u8| !crate::syntax::TARGET[b as usize];
        if !valid_method || !is_scheme(scheme) || !valid_path || path.bytes().any(invalid_byte) {
            return Err(Malformed::MissingPseudoField);
        }
        Ok(())
    }

    /// Checks a trailer block (RFC 9113 8.1): the field rules, and no
    /// pseudo-field at all.
    pub(crate) fn finish_trailers(&mut self) -> Result<(), Malformed> {
        if let Some(why) = self.malformed {
            return Err(why);
        }
        self.join_cookies();
        let pseudo = [&self.method, &self.scheme, &self.authority, &self.path];
        if pseudo.iter().any(|p| p.is_some()) {
            return Err(Malformed::PseudoField);
        }
        Ok(())
    }

    /// Whether trailers (after [`finish_trailers`](Self::finish_trailers))
    /// are within the bounds HTTP/1.1's trailer section has: at most
    /// [`MAX_TRAILER_FIELDS`] fields and [`MAX_TRAILER_BYTES`] bytes as
    /// HTTP/1.1 carries them at the fewest, `name:value` a field.
    pub(crate) fn trailer_section_fits(&self) -> bool {
        let bytes: usize = self.fields().map(|(name, value)| name.len() + 1 + value.len()).sum();
        self.fields.len() <= MAX_TRAILER_FIELDS && bytes <= MAX_TRAILER_BYTES
    }

    /// The joined `cookie` crumbs become one field, the last.
    fn join_cookies(&mut self) {
        if self.cookie.is_empty() {
            return;
        }
        let cookie = std::mem::take(&mut self.cookie);
        let name = self.push(b"cookie");
        let value = self.push(&cookie);
        self.fields.push(Span { name, value });
        self.cookie = cookie;
        self.cookie.clear();
    }

    fn text(&self, range: &Option<Range<usize>>) -> Option<&str> {
        // Values may hold obs-text (octets 0x80 and up): non-UTF-8 ones
        // read as absent.
        range.as_ref().and_then(|r| core::str::from_utf8(&self.bytes[r.clone()]).ok())
    }

    /// `:method`.
    pub fn method(&self) -> Option<&str> {
        self.text(&self.method)
    }

    /// `:scheme`.
    pub fn scheme(&self) -> Option<&str> {
        self.text(&self.scheme)
    }

    /// `:authority`, if sent.
    pub fn authority(&self) -> Option<&str> {
        self.text(&self.authority)
    }

    /// The `host` field (at most one: a second is malformed), which stands
    /// for `:authority` when that is absent (8.3.1).
    pub fn host(&self) -> Option<&str> {
        self.text(&self.host)
    }

    /// `:path`.
    pub fn path(&self) -> Option<&str> {
        self.text(&self.path)
    }

    /// The `content-length`, if sent.
    pub fn content_length(&self) -> Option<u64> {
        self.content_length
    }

    /// The regular fields, in order.
    pub fn fields(&self) -> impl ExactSizeIterator<Item = (&[u8], &[u8])> + '_ {
        self.fields.iter().map(|s| (&self.bytes[s.name.clone()], &self.bytes[s.value.clone()]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(fields: &[(&str, &str)]) -> Result<Head, Malformed> {
        let mut head = Head::default();
        for (n, v) in fields {
            head.add(Field::new(n.as_bytes(), v.as_bytes()));
        }
        head.finish().map(|()| head)
    }

    const GET: [(&str, &str); 3] = [(":method", "GET"), (":scheme", "http"), (":path", "/a")];

    #[test]
    fn a_well_formed_request() {
        let mut fields = GET.to_vec();
        fields.extend([(":authority", "x"), ("accept", "*/*"), ("content-length", "12")]);
        let head = head(&fields).unwrap();
        assert_eq!(
            (head.method(), head.path(), head.authority()),
            (Some("GET"), Some("/a"), Some("x"))
        );
        assert_eq!(head.content_length(), Some(12));
        assert_eq!(head.fields().count(), 2);
    }

    /// RFC 9113 8.3.1: authority and host agree and are valid; 8.2.3:
    /// cookie crumbs are joined.
    #[test]
    fn authority_host_and_cookies() {
        let with = |extra: &[(&'static str, &'static str)]| {
            let mut fields = GET.to_vec();
            fields.extend_from_slice(extra);
            head(&fields)
        };
        assert!(with(&[(":authority", "a.example:80"), ("host", "A.example:80")]).is_ok());
        assert_eq!(with(&[("host", "a"), ("host", "a")]).err(), Some(Malformed::Authority));
        let differ = with(&[(":authority", "a.example"), ("host", "b.example")]);
        assert_eq!(differ.err(), Some(Malformed::Authority));
        assert_eq!(with(&[(":authority", "a b/c@d")]).err(), Some(Malformed::Authority));
        assert_eq!(with(&[("host", "a b")]).err(), Some(Malformed::Authority));
        // No host named (RFC 9110 4.2.1: an `http` URI with an empty host
        // is invalid), by `:authority` or by a Host standing for it.
        for (name, value) in [(":authority", ":80"), ("host", ""), ("host", ":80")] {
            assert_eq!(with(&[(name, value)]).err(), Some(Malformed::Authority), "{name}: {value}");
        }
        assert!(with(&[("host", "a:")]).is_ok() && with(&[(":authority", "[::1]:0")]).is_ok());
        let cookies = with(&[("cookie", "a=1"), ("accept", "*/*"), ("cookie", "b=2")]).unwrap();
        let fields: Vec<_> = cookies.fields().collect();
        assert_eq!(fields, [(&b"accept"[..], &b"*/*"[..]), (b"cookie", b"a=1; b=2")]);
    }

    /// RFC 9113 8.3: required, unique, known pseudo-fields, before the rest.
    #[test]
    fn pseudo_field_rules() {
        assert_eq!(head(&GET[..2]).err(), Some(Malformed::MissingPseudoField));
        let mut twice = GET.to_vec();
        twice.push((":path", "/b"));
        assert_eq!(head(&twice).err(), Some(Malformed::PseudoField));
        let mut late = vec![GET[0], GET[1], ("accept", "*/*"), GET[2]];
        assert_eq!(head(&late).err(), Some(Malformed::PseudoField));
        late = GET.to_vec();
        late.push((":status", "200"));
        assert_eq!(head(&late).err(), Some(Malformed::PseudoField));
        let empty_path = [(":method", "GET"), (":scheme", "http"), (":path", "")];
        assert_eq!(head(&empty_path).err(), Some(Malformed::MissingPseudoField));
        let star = [(":method", "OPTIONS"), (":scheme", "http"), (":path", "*")];
        assert!(head(&star).is_ok());
        let connect = [(":method", "CONNECT"), (":authority", "a:1")];
        assert!(head(&connect).is_ok());
        let connect_path = [(":method", "CONNECT"), (":authority", "a:1"), (":path", "/")];
        assert_eq!(head(&connect_path).err(), Some(Malformed::MissingPseudoField));
    }

    /// RFC 9113 8.3.1 with RFC 3986 3.1: `:scheme` is a URI scheme; the
    /// path carries no fragment; RFC 9110 4.2.1: no empty authority.
    #[test]
    fn scheme_path_and_authority_shapes() {
        let with = |scheme: &'static str, path: &'static str, authority: Option<&'static str>| {
            let mut fields = vec![(":method", "GET"), (":scheme", scheme), (":path", path)];
            fields.extend(authority.map(|a| (":authority", a)));
            head(&fields).err()
        };
        for scheme in ["http", "https", "h2c", "coap+tcp", "a.b-c", "Z9"] {
            assert_eq!(with(scheme, "/", None), None, "{scheme}");
        }
        for scheme in ["", "ht tp", "1http", "-x", "a_b", "é"] {
            assert_eq!(with(scheme, "/", None), Some(Malformed::MissingPseudoField), "{scheme:?}");
        }
        assert_eq!(with("http", "/a#b", None), Some(Malformed::MissingPseudoField));
        // A URI holds no byte past ASCII (RFC 3986 §2), as over HTTP/1.1;
        // what browsers send raw is taken.
        for path in ["/caf\u{e9}", "/?q=\u{20ac}"] {
            assert_eq!(with("http", path, None), Some(Malformed::MissingPseudoField), "{path}");
        }
        assert_eq!(with("http", "/a|b?q={c}^`\\", None), None);
        assert_eq!(with("http", "/a", Some("")), Some(Malformed::Authority));
        assert_eq!(with("http", "/a", Some("a")), None);
    }

    /// RFC 9113 8.2.1, 8.2.2: names, values, connection-specific fields.
    #[test]
    fn field_rules() {
        for (name, value, why) in [
            ("Accept", "x", Malformed::Name),
            ("a b", "x", Malformed::Name),
            ("", "x", Malformed::Name),
            ("accept", "a\r\nb", Malformed::Value),
            ("accept", " x", Malformed::Value),
            ("accept", "x\t", Malformed::Value),
            ("accept", "a\0", Malformed::Value),
            ("accept", "a\x01b", Malformed::Value),
            ("accept", "a\x1fb", Malformed::Value),
            ("accept", "a\x7fb", Malformed::Value),
            ("connection", "close", Malformed::ConnectionField),
            ("transfer-encoding", "chunked", Malformed::ConnectionField),
            ("upgrade", "h2c", Malformed::ConnectionField),
            ("te", "gzip", Malformed::ConnectionField),
            ("content-length", "1a", Malformed::ContentLength),
            ("content-length", "", Malformed::ContentLength),
            ("content-length", "99999999999999999999", Malformed::ContentLength),
        ] {
            let mut fields = GET.to_vec();
            fields.push((name, value));
            assert_eq!(head(&fields).err(), Some(why), "{name}: {value:?}");
        }
        for name in ["x:y", "a\"b", "a,b", "a/b"] {
            let mut fields = GET.to_vec();
            fields.push((name, "v"));
            assert_eq!(head(&fields).err(), Some(Malformed::Name), "{name}");
        }
        // A tab inside, and obs-text, as HTTP/1 takes them.
        for value in ["a\tb", "caf\u{e9}", "~"] {
            let mut fields = GET.to_vec();
            fields.push(("accept", value));
            assert!(head(&fields).is_ok(), "{value:?}");
        }
        for value in ["trailers", "Trailers", "TRAILERS"] {
            let mut te = GET.to_vec();
            te.push(("te", value));
            assert!(head(&te).is_ok(), "te: {value}");
        }
        let mut lengths = GET.to_vec();
        lengths.extend([("content-length", "5"), ("content-length", "5")]);
        assert!(head(&lengths).is_ok());
        lengths.push(("content-length", "6"));
        assert_eq!(head(&lengths).err(), Some(Malformed::ContentLength));
        // Leading zeros are digits too, in any number.
        let mut zeros = GET.to_vec();
        zeros.push(("content-length", "0000000000000000000000005"));
        assert_eq!(head(&zeros).map(|h| h.content_length()), Ok(Some(5)));
    }
}
