//! A request's trailer fields: the field lines that follow a chunked
//! body's last chunk (RFC 9112 §7.1.2) or an HTTP/2 stream's DATA (a
//! HEADERS frame that ends it, RFC 9113 §8.1).
//!
//! They reach an application that reads the body itself, once the body has
//! ended ([`RequestBody::take_trailers`](crate::RequestBody::take_trailers),
//! and `tower::Body`'s trailers frame). They are never merged into the
//! request's head (RFC 9110 §6.5.1): what a trailer field means is the
//! application's to decide.
//!
//! Both protocols bound them before they get here: HTTP/1's trailer
//! section has at most 8 KiB and 64 fields (the chunked decoder refuses
//! more, a `400`), HTTP/2's field block counts against the header-list
//! limit like any other (`h2::connection::Config`).

use std::ops::Range;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::syntax::is_whitespace;

/// A request's trailer fields, in the order they arrived, names as the
/// client sent them (HTTP/2's in lower case; compare names without regard
/// to case, as [`get`](Self::get) does).
///
/// ```
/// use falconet_server::Trailers;
///
/// let trailers = Trailers::from_lines(b"Checksum: abc123\nx-count:  7 \n").unwrap();
/// assert_eq!(trailers.get("checksum"), Some(&b"abc123"[..]));
/// assert_eq!(trailers.iter().collect::<Vec<_>>(), [("Checksum", &b"abc123"[..]), ("x-count", &b"7"[..])]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trailers {
    /// Every name and value, back to back.
    bytes: Vec<u8>,
    /// Where each field's name and value sit in `bytes`.
    fields: Vec<(Range<usize>, Range<usize>)>,
}

impl Trailers {
    /// Fields parsed from `name: value` lines, each ended by `\n` (a `\r`
    /// before it is dropped), the value's surrounding spaces and tabs
    /// trimmed; `None` if a line has no colon, or a name that is not a
    /// token, or a value with a control byte other than tab.
    pub fn from_lines(lines: &[u8]) -> Option<Self> {
        let mut trailers = Self::default();
        for line in lines.split(|&b| b == b'\n').filter(|line| !line.is_empty()) {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let colon = line.iter().position(|&b| b == b':')?;
            let (name, value) = (&line[..colon], &line[colon + 1..]);
            if !trailers.push(name, value) {
                return None;
            }
        }
        Some(trailers)
    }

    /// Appends a field, the value's surrounding whitespace trimmed; `false`
    /// (and nothing appended) if the name is not a token or the value has
    /// a control byte other than tab.
    pub(crate) fn push(&mut self, name: &[u8], value: &[u8]) -> bool {
        let value = trim(value);
        let name_ok =
            !name.is_empty() && name.iter().all(|&b| crate::syntax::TOKEN[usize::from(b)]);
        if !name_ok || !value.iter().all(|&b| crate::syntax::FIELD_VALUE[usize::from(b)]) {
            return false;
        }
        let start = self.bytes.len();
        self.bytes.extend_from_slice(name);
        self.bytes.extend_from_slice(value);
        let split = start + name.len();
        self.fields.push((start..split, split..self.bytes.len()));
        true
    }

    /// The fields, in order: name and value.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &[u8])> + '_ {
        self.fields.iter().map(|(name, value)| {
            // A name is a token (checked by `push`): ASCII.
            let name = core::str::from_utf8(&self.bytes[name.clone()]).unwrap_or_default();
            (name, &self.bytes[value.clone()])
        })
    }

    /// The value of the first field named `name` (any case).
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, value)| value)
    }

    /// How many fields there are.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }
}

/// `value` without the spaces and tabs around it.
fn trim(value: &[u8]) -> &[u8] {
    let start = value.iter().position(|&b| !is_whitespace(b)).unwrap_or(value.len());
    let end = value.iter().rposition(|&b| !is_whitespace(b)).map_or(start, |i| i + 1);
    &value[start..end]
}

/// Where an HTTP/2 stream's trailers go from the worker, which decodes
/// them, to the thread reading its body. The worker stores them before it
/// ends the body's pipe; the reader takes them after it saw that end (the
/// pipe's end orders the two, and the lock is never contended).
pub(crate) type TrailerSlot = Arc<Mutex<Option<Trailers>>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_trim_and_keep_their_order() {
        let trailers =
            Trailers::from_lines(b"A: 1\r\nb:\t two words \t\r\nEmpty:\r\na: 3\r\n").unwrap();
        let fields: Vec<_> = trailers.iter().collect();
        assert_eq!(
            fields,
            [("A", &b"1"[..]), ("b", &b"two words"[..]), ("Empty", &b""[..]), ("a", &b"3"[..])]
        );
        assert_eq!(trailers.len(), 4);
        assert_eq!(trailers.get("a"), Some(&b"1"[..]), "the first of two, any case");
        assert_eq!(trailers.get("missing"), None);
        assert_eq!(Trailers::from_lines(b"").unwrap(), Trailers::default());
        assert!(Trailers::default().is_empty());
    }

    #[test]
    fn lines_off_the_grammar_are_refused() {
        for bad in [
            &b"no colon\r\n"[..],
            b": no name\r\n",
            b"bad name: x\r\n",
            b"name: a\x00b\r\n",
            b"name: a\x7fb\r\n",
            b"n\xffame: x\r\n",
        ] {
            assert_eq!(Trailers::from_lines(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
        // obs-text is allowed in values.
        assert_eq!(Trailers::from_lines(b"n: caf\xe9\n").unwrap().get("N"), Some(&b"caf\xe9"[..]));
    }

    #[test]
    fn a_refused_push_appends_nothing() {
        let mut trailers = Trailers::default();
        assert!(trailers.push(b"ok", b"1"));
        assert!(!trailers.push(b"", b"x"));
        assert!(!trailers.push(b"x", b"\r"));
        assert_eq!(trailers, Trailers::from_lines(b"ok: 1\n").unwrap());
    }
}
