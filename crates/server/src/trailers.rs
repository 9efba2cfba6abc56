//! Trailer fields: the field lines that follow a chunked body's last
//! chunk (RFC 9112 §7.1.2) or an HTTP/2 stream's DATA (a HEADERS frame
//! that ends it, RFC 9113 §8.1).
//!
//! A request's reach the application once its body has ended: in
//! [`Handler::trailers`](crate::Handler::trailers) for a body read on
//! the worker (before `respond`), through
//! [`RequestBody::take_trailers`](crate::RequestBody::take_trailers) for
//! one the application reads itself, and as `tower::Body`'s trailers
//! frame. They are never merged into the request's head (RFC 9110
//! §6.5.1): what a trailer field means is the application's to decide.
//!
//! A response's go out with
//! [`Responder::finish_with_trailers`](crate::Responder::finish_with_trailers)
//! (and a tower body's trailers frame).
//!
//! Both protocols bound them alike before they get here: a trailer
//! section has at most [`MAX_TRAILER_FIELDS`] fields and
//! [`MAX_TRAILER_BYTES`] bytes, counted as HTTP/1.1 carries them at the
//! fewest, `name:value` a field without its CRLF. Past them, HTTP/1's
//! chunked decoder fails the body (a `400`), and an HTTP/2 stream is
//! reset with `PROTOCOL_ERROR` (as for any other malformed request, RFC
//! 9113 8.1.1; its field block also counts against the header-list limit
//! like any other).

use std::ops::Range;

#[cfg(falconet_server_loom)]
use loom::sync::{Arc, Mutex};
#[cfg(not(falconet_server_loom))]
use parking_lot::Mutex;
#[cfg(not(falconet_server_loom))]
use std::sync::Arc;

use crate::handler::ResponseError;
use crate::syntax::{is_field_value, is_token, is_whitespace};

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
    /// No fields yet: add them with [`append`](Self::append).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a field (a response's, for
    /// [`Responder::finish_with_trailers`](crate::Responder::finish_with_trailers)),
    /// the value's surrounding spaces and tabs trimmed.
    ///
    /// # Errors
    /// [`ResponseError::InvalidHeaderName`] for a name that is not a token,
    /// [`ResponseError::InvalidHeaderValue`] for a value with a control
    /// byte other than tab (CR and LF included).
    pub fn append(&mut self, name: &str, value: &[u8]) -> Result<&mut Self, ResponseError> {
        if !is_token(name.as_bytes()) {
            return Err(ResponseError::InvalidHeaderName);
        }
        if !self.push(name.as_bytes(), value) {
            return Err(ResponseError::InvalidHeaderValue);
        }
        Ok(self)
    }

    /// Fields parsed from `name: value` lines, each ended by `\n` (a `\r`
    /// before it is dropped; blank lines are skipped), the value's
    /// surrounding spaces and tabs trimmed; `None` if a line has no colon,
    /// or a name that is not a token, or a value with a control byte other
    /// than tab.
    pub fn from_lines(lines: &[u8]) -> Option<Self> {
        let mut trailers = Self::default();
        trailers.refill_from_lines(lines).then_some(trailers)
    }

    /// [`from_lines`](Self::from_lines) into this one, its old fields
    /// dropped and its memory kept (the worker's, reused per request);
    /// `false`, and empty, if a line is off the grammar.
    pub(crate) fn refill_from_lines(&mut self, lines: &[u8]) -> bool {
        self.clear();
        for line in lines.split(|&b| b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() {
                continue; // a blank line (a section's end, as on the wire)
            }
            let pushed = line
                .iter()
                .position(|&b| b == b':')
                .is_some_and(|colon| self.push(&line[..colon], &line[colon + 1..]));
            if !pushed {
                self.clear();
                return false;
            }
        }
        true
    }

    /// Drops every field, keeping the memory.
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.fields.clear();
    }

    /// Drops every field, and the memory too if it grew past what
    /// [`KEPT_BYTES`] allows (a connection that once got large trailers
    /// does not hold their memory while idle).
    pub(crate) fn clear_and_trim(&mut self) {
        if self.bytes.capacity() > KEPT_BYTES || self.fields.capacity() > KEPT_FIELDS {
            *self = Self::new();
        } else {
            self.clear();
        }
    }

    /// Appends a field, the value's surrounding whitespace trimmed; `false`
    /// (and nothing appended) if the name is not a token or the value has
    /// a control byte other than tab.
    pub(crate) fn push(&mut self, name: &[u8], value: &[u8]) -> bool {
        let value = trim(value);
        if !is_token(name) || !is_field_value(value) {
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

    /// The fields as a response's trailer field lines (`name: value\r\n`
    /// each), without those trailers may not carry ([`may_trail`]).
    pub(crate) fn response_lines(&self) -> Vec<u8> {
        let mut lines = Vec::new();
        for (name, value) in self.iter() {
            // Checked by `push`: only `may_trail` can leave one out.
            let _ = push_response_line(&mut lines, name.as_bytes(), value);
        }
        lines
    }
}

/// Bytes of a request's trailer section at most: names, values and a
/// colon a field (HTTP/1.1 also counts the whitespace around a value).
pub(crate) const MAX_TRAILER_BYTES: usize = 8192;
/// Fields of a request's trailer section at most.
pub(crate) const MAX_TRAILER_FIELDS: usize = 64;

/// Bytes of trailer names and values a connection keeps room for between
/// requests (the usual trailers, a status or a checksum, fit: no
/// allocation per request); larger ones are allocated and freed with
/// their request.
pub(crate) const KEPT_BYTES: usize = 1024;
/// Trailer fields a connection keeps room for between requests.
const KEPT_FIELDS: usize = 16;

/// Fields a response's trailers never carry (RFC 9110 §6.5.1: framing,
/// routing, authentication, response control and how to process the
/// content; hyper leaves out the same), with HTTP/1's connection fields
/// (RFC 9113 §8.2.2 forbids them over HTTP/2).
const NOT_IN_TRAILERS: [&[u8]; 16] = [
    b"authorization",
    b"cache-control",
    b"content-encoding",
    b"content-length",
    b"content-range",
    b"content-type",
    b"host",
    b"max-forwards",
    b"set-cookie",
    b"trailer",
    b"transfer-encoding",
    b"te",
    b"connection",
    b"upgrade",
    b"keep-alive",
    b"proxy-connection",
];

/// Whether a response's trailers may carry a field named `name` (any
/// case): not one of [`NOT_IN_TRAILERS`].
fn may_trail(name: &[u8]) -> bool {
    !NOT_IN_TRAILERS.iter().any(|not| not.eq_ignore_ascii_case(name))
}

/// Appends `name: value\r\n` to a response's trailer field lines, or
/// says why not: a field trailers may not carry ([`may_trail`]), or a
/// value a field line cannot hold.
pub(crate) fn push_response_line(
    lines: &mut Vec<u8>,
    name: &[u8],
    value: &[u8],
) -> Result<(), &'static str> {
    if !may_trail(name) {
        return Err("a trailer field that trailers may not carry");
    }
    if !is_field_value(value) {
        return Err("a trailer field value with a control byte");
    }
    lines.extend_from_slice(name);
    lines.extend_from_slice(b": ");
    lines.extend_from_slice(value);
    lines.extend_from_slice(b"\r\n");
    Ok(())
}

/// `value` without the spaces and tabs around it.
fn trim(value: &[u8]) -> &[u8] {
    let start = value.iter().position(|&b| !is_whitespace(b)).unwrap_or(value.len());
    let end = value.iter().rposition(|&b| !is_whitespace(b)).map_or(start, |i| i + 1);
    &value[start..end]
}

/// Where an HTTP/2 stream's trailers go from the worker, which decodes
/// them, to the thread reading its body. The worker
/// [`store`](Self::store)s them before it ends the body's pipe; the reader
/// [`take`](Self::take)s them after it saw that end, so the pipe's end
/// (a release by the writer, an acquire by the reader) orders the two,
/// and the lock is never contended. The loom model below (cfg
/// `falconet_server_loom`, `scripts/loom.sh`) checks the pairing; a
/// proptest model (`model`) the fields and the slot against a list and an
/// `Option`.
#[derive(Clone, Debug, Default)]
pub(crate) struct TrailerSlot(Arc<Mutex<Option<Trailers>>>);

impl TrailerSlot {
    /// The worker's side: the stream's trailers, before the body's end.
    pub(crate) fn store(&self, trailers: Trailers) {
        *lock(&self.0) = Some(trailers);
    }

    /// The reader's side, after the body's end: the trailers, once.
    pub(crate) fn take(&self) -> Option<Trailers> {
        lock(&self.0).take()
    }
}

#[cfg(not(falconet_server_loom))]
fn lock(slot: &Mutex<Option<Trailers>>) -> impl std::ops::DerefMut<Target = Option<Trailers>> + '_ {
    slot.lock()
}

#[cfg(falconet_server_loom)]
fn lock(slot: &Mutex<Option<Trailers>>) -> impl std::ops::DerefMut<Target = Option<Trailers>> + '_ {
    slot.lock().unwrap()
}

#[cfg(all(test, not(falconet_server_loom)))]
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
        // A section as it ends on the wire, with its blank line (the
        // review's case), reads as the same lines without it.
        let wire = Trailers::from_lines(b"a: 1\r\nb: 2\r\n\r\n").unwrap();
        assert_eq!(wire, Trailers::from_lines(b"a: 1\nb: 2").unwrap());
        assert_eq!(Trailers::from_lines(b"\r\n\n").unwrap(), Trailers::default());
        assert_eq!(Trailers::from_lines(b"a: 1\rb: 2\n"), None, "a bare CR is no line end");
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
    fn append_checks_like_a_header_and_response_lines_leave_out_framing() {
        let mut trailers = Trailers::new();
        trailers.append("grpc-status", b"0").unwrap().append("Content-Length", b" 5 ").unwrap();
        trailers.append("X-Sum", b"\tab c").unwrap().append("TE", b"trailers").unwrap();
        assert_eq!(
            trailers.append("bad name", b"x").unwrap_err(),
            ResponseError::InvalidHeaderName
        );
        assert_eq!(trailers.append("", b"x").unwrap_err(), ResponseError::InvalidHeaderName);
        assert_eq!(trailers.append("n", b"a\r\nb").unwrap_err(), ResponseError::InvalidHeaderValue);
        assert_eq!(trailers.len(), 4, "a refused field is not added");
        assert_eq!(trailers.get("content-length"), Some(&b"5"[..]));
        assert_eq!(trailers.response_lines(), b"grpc-status: 0\r\nX-Sum: ab c\r\n");
        for name in NOT_IN_TRAILERS {
            let upper = String::from_utf8(name.to_ascii_uppercase()).unwrap();
            assert!(!may_trail(upper.as_bytes()), "{upper}");
        }
        assert!(may_trail(b"grpc-status") && may_trail(b"hostname") && may_trail(b"t"));
    }

    #[test]
    fn clear_and_trim_keeps_the_usual_room_and_frees_more() {
        let mut trailers = Trailers::from_lines(b"grpc-status: 0\nx-sum: 42\n").unwrap();
        let room = trailers.bytes.capacity();
        trailers.clear_and_trim();
        assert!(trailers.is_empty());
        assert_eq!(trailers.bytes.capacity(), room, "the usual trailers keep their room");
        let big = format!("x: {}\n", "v".repeat(KEPT_BYTES));
        assert!(trailers.refill_from_lines(big.as_bytes()));
        trailers.clear_and_trim();
        assert_eq!((trailers.bytes.capacity(), trailers.fields.capacity()), (0, 0), "freed");
        let many: String = (0..=KEPT_FIELDS).map(|i| format!("f{i}: v\n")).collect();
        assert!(trailers.refill_from_lines(many.as_bytes()));
        trailers.clear_and_trim();
        assert_eq!(trailers.fields.capacity(), 0, "many fields: freed too");
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

/// `Trailers` and its slot against a sequential model (a list of
/// fields, an `Option`): random appends (valid or not), clears, refills
/// from lines, stores and takes.
#[cfg(all(test, not(falconet_server_loom)))]
mod model {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        Append(String, Vec<u8>),
        Clear,
        Refill(Vec<(String, Vec<u8>)>),
        /// Lines of any bytes: a line without a colon, a bare `\r`.
        RefillRaw(Vec<u8>),
        Store,
        Take,
    }

    /// Names: tokens mostly, now and then with a separator (a space, a
    /// colon, a quote...) or empty.
    fn name() -> impl Strategy<Value = String> {
        prop_oneof![
            8 => "[A-Za-z0-9!#$%&'*+.^_`|~-]{1,8}",
            1 => "[a-z]{0,3}[ :\"(),/;<=>?@]?[a-z]{0,3}",
        ]
    }

    /// Values: text with spaces and tabs around it, bytes past ASCII
    /// (obs-text, valid), and any bytes (control bytes among them).
    fn value() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            8 => "[ \t]{0,2}[ -~]{0,12}[ \t]{0,2}".prop_map(String::into_bytes),
            2 => proptest::collection::vec(0x80u8.., 0..4),
            2 => proptest::collection::vec(any::<u8>(), 0..6),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            5 => (name(), value()).prop_map(|(n, v)| Op::Append(n, v)),
            1 => Just(Op::Clear),
            2 => proptest::collection::vec((name(), value()), 0..4).prop_map(Op::Refill),
            2 => proptest::collection::vec(
                prop_oneof![Just(b':'), Just(b'\n'), Just(b'\r'), Just(b' '), Just(b'a'), any::<u8>()],
                0..24
            )
            .prop_map(Op::RefillRaw),
            1 => Just(Op::Store),
            1 => Just(Op::Take),
        ]
    }

    /// The model's verdict on a field: its trimmed value, if valid.
    fn valid(name: &str, value: &[u8]) -> Option<Vec<u8>> {
        let blank = |b: &u8| *b == b' ' || *b == b'\t';
        let start = value.iter().position(|b| !blank(b)).unwrap_or(value.len());
        let end = value.iter().rposition(|b| !blank(b)).map_or(start, |at| at + 1);
        let value = &value[start..end];
        let token = !name.is_empty()
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        let text = value.iter().all(|&b| b == b'\t' || (b >= 0x20 && b != 0x7f));
        (token && text).then(|| value.to_vec())
    }

    /// The model's reading of `name: value` lines: each non-empty line
    /// (a `\r` before its `\n` dropped) split at its first colon; `None`
    /// if any line has no colon or is not a valid field.
    fn lines(text: &[u8]) -> Option<Vec<(String, Vec<u8>)>> {
        let mut fields = Vec::new();
        for line in text.split(|&b| b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() {
                continue;
            }
            let colon = line.iter().position(|&b| b == b':')?;
            let name = std::str::from_utf8(&line[..colon]).ok()?;
            fields.push((name.to_string(), valid(name, &line[colon + 1..])?));
        }
        Some(fields)
    }

    proptest! {
        #[test]
        fn trailers_and_their_slot_behave_as_lists(ops in proptest::collection::vec(op(), 1..30)) {
            let mut trailers = Trailers::new();
            let mut fields: Vec<(String, Vec<u8>)> = Vec::new();
            let slot = TrailerSlot::default();
            let mut stored: Option<Vec<(String, Vec<u8>)>> = None;
            for op in ops {
                match op {
                    Op::Append(name, value) => {
                        let expected = valid(&name, &value);
                        prop_assert_eq!(trailers.append(&name, &value).is_ok(), expected.is_some());
                        if let Some(value) = expected {
                            fields.push((name, value));
                        }
                    }
                    Op::Clear => {
                        trailers.clear_and_trim();
                        fields.clear();
                    }
                    Op::Refill(given) => {
                        let text: Vec<u8> = given
                            .iter()
                            .flat_map(|(n, v)| [n.as_bytes(), b":", v, b"\r\n"].concat())
                            .collect();
                        let parsed: Option<Vec<_>> = given
                            .iter()
                            .map(|(n, v)| valid(n, v).map(|v| (n.clone(), v)))
                            .collect();
                        // A name with a colon splits at it, a value with a
                        // line end ends its line: those lines are other
                        // fields, which the model's line reading predicts;
                        // for the others it must agree with the fields.
                        let reshaped = |(n, v): &(String, Vec<u8>)| {
                            n.contains(':') || v.contains(&b'\n') || v.contains(&b'\r')
                        };
                        let expected = lines(&text);
                        if !given.iter().any(reshaped) {
                            prop_assert_eq!(&expected, &parsed);
                        }
                        prop_assert_eq!(trailers.refill_from_lines(&text), expected.is_some());
                        fields = expected.unwrap_or_default();
                    }
                    Op::RefillRaw(text) => {
                        let expected = lines(&text);
                        prop_assert_eq!(trailers.refill_from_lines(&text), expected.is_some());
                        fields = expected.unwrap_or_default();
                    }
                    Op::Store => {
                        slot.store(trailers.clone());
                        stored = Some(fields.clone());
                    }
                    Op::Take => {
                        let taken = slot
                            .take()
                            .map(|t| t.iter().map(|(n, v)| (n.to_string(), v.to_vec())).collect());
                        prop_assert_eq!(taken, stored.take());
                    }
                }
                let seen: Vec<_> = trailers.iter().map(|(n, v)| (n.to_string(), v.to_vec())).collect();
                prop_assert_eq!(&seen, &fields);
                prop_assert_eq!(trailers.len(), fields.len());
                for (name, _) in &fields {
                    let first = fields.iter().find(|(n, _)| n.eq_ignore_ascii_case(name));
                    prop_assert_eq!(trailers.get(&name.to_uppercase()), first.map(|(_, v)| &v[..]));
                }
            }
        }
    }
}

#[cfg(all(test, falconet_server_loom))]
mod loom_models {
    use super::*;
    use loom::sync::atomic::{AtomicBool, Ordering};
    use loom::thread;

    /// Trailers stored before the body's end (the pipe's release, here a
    /// release store) are there for the reader that saw the end (an
    /// acquire load), and taken once.
    #[test]
    fn trailers_before_the_body_end() {
        loom::model(|| {
            let slot = TrailerSlot::default();
            let ended = Arc::new(AtomicBool::new(false));
            let (worker_slot, end) = (slot.clone(), Arc::clone(&ended));
            let worker = thread::spawn(move || {
                worker_slot.store(Trailers::from_lines(b"a: 1\n").unwrap());
                end.store(true, Ordering::Release);
            });
            if ended.load(Ordering::Acquire) {
                assert_eq!(slot.take().map(|t| t.len()), Some(1), "stored before the end");
                assert_eq!(slot.take(), None, "taken once");
            }
            worker.join().unwrap();
        });
    }
}
