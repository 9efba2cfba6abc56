//! A request's fields, walked once: the ones that frame the body
//! (`Content-Length`, `Transfer-Encoding`), route it (`Host`), or ask for
//! something (`Expect`, `Connection`, `Upgrade`, `TE`), checked as RFC
//! 9112 and RFC 9110 require.

use super::*;

/// What the header fields say about framing and the connection.
pub(super) struct Fields<'a> {
    pub(super) body: BodyLength,
    pub(super) keep_alive: bool,
    /// `Expect: 100-continue`: answered before a body is read, and before
    /// an upgrade's `101` (RFC 9110 §7.8), not for a request with neither.
    pub(super) expect_continue: bool,
    /// The Host field's value (validated), if there is one.
    pub(super) host: Option<&'a [u8]>,
    /// An `Upgrade` field names h2c.
    pub(super) upgrade_h2c: bool,
}

impl<'a> Fields<'a> {
    /// Reads the fields that matter to the server, refusing a request whose
    /// framing is ambiguous (RFC 9112 §6), whose Host is missing, repeated
    /// or invalid (§3.2), or that it cannot serve.
    pub(super) fn read(
        headers: &[httparse::Header<'a>],
        version: Version,
        known_host: &mut KnownHost,
    ) -> Result<Self, Status> {
        let mut length: Option<u64> = None;
        let mut transfer_encoding = false;
        let mut chunked = false;
        let mut unsupported_coding = false;
        let mut host: Option<&'a [u8]> = None;
        let mut close = false;
        let mut keep_alive_asked = false;
        let mut expect_continue = false;
        let mut upgrade_h2c = false;
        for header in headers {
            let name = header.name;
            // Dispatch on the length first: most fields are none of these.
            let field = match name.len() {
                4 => Field::Host,
                6 => Field::Expect,
                7 => Field::Upgrade,
                10 => Field::Connection,
                14 => Field::ContentLength,
                17 => Field::TransferEncoding,
                _ => continue,
            };
            if !is_named(name.as_bytes(), field.name().as_bytes()) {
                continue;
            }
            let value = header.value;
            match field {
                Field::ContentLength => {
                    let parsed = parse_decimal(value.trim_ascii()).ok_or(Status::BAD_REQUEST)?;
                    if length.is_some_and(|seen| seen != parsed) {
                        return Err(Status::BAD_REQUEST);
                    }
                    length = Some(parsed);
                }
                Field::TransferEncoding => {
                    transfer_encoding = true;
                    for coding in value
                        .split(|&b| b == b',')
                        .map(<[u8]>::trim_ascii)
                        .filter(|c| !c.is_empty())
                    {
                        if chunked {
                            // Chunked must be the last coding, and only once.
                            return Err(Status::BAD_REQUEST);
                        }
                        if coding.eq_ignore_ascii_case(b"chunked") {
                            chunked = true;
                        } else {
                            unsupported_coding = true;
                        }
                    }
                }
                Field::Host => {
                    // More than one Host line, or an invalid value: 400
                    // for any version (RFC 9112 §3.2).
                    if host.is_some() || !known_host.is_valid(value) {
                        return Err(Status::BAD_REQUEST);
                    }
                    // A valid value is ASCII; `Request::authority` reads it
                    // as text if a handler asks.
                    host = Some(value);
                }
                Field::Connection => {
                    for token in value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
                        close |= token.eq_ignore_ascii_case(b"close");
                        keep_alive_asked |= token.eq_ignore_ascii_case(b"keep-alive");
                    }
                }
                Field::Upgrade => upgrade_h2c |= crate::h2::upgrade::names_h2c(value),
                Field::Expect => {
                    // A list (RFC 9110 10.1.1), empty elements ignored
                    // (5.6.1.2): `100-continue` is the one expectation.
                    for element in value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
                        if element.is_empty() {
                            continue;
                        }
                        if !element.eq_ignore_ascii_case(b"100-continue") {
                            return Err(Status::EXPECTATION_FAILED);
                        }
                        expect_continue = true;
                    }
                }
            }
        }
        if transfer_encoding && length.is_some() {
            return Err(Status::BAD_REQUEST);
        }
        // Chunked not final: the body cannot be framed, a MUST 400 (§6.3)
        // ahead of the SHOULD 501 for a coding the server does not know.
        if transfer_encoding && !chunked {
            return Err(Status::BAD_REQUEST);
        }
        // HTTP/1.0 has no transfer codings: such a message's framing is
        // faulty (§6.1).
        if transfer_encoding && version == Version::Http10 {
            return Err(Status::BAD_REQUEST);
        }
        if unsupported_coding {
            return Err(Status::NOT_IMPLEMENTED);
        }
        if version == Version::Http11 && host.is_none() {
            return Err(Status::BAD_REQUEST);
        }
        let body = match (chunked, length) {
            (true, _) => BodyLength::Chunked,
            (false, Some(0) | None) => BodyLength::Empty,
            (false, Some(n)) => BodyLength::Known(n),
        };
        let keep_alive = match version {
            Version::Http11 | Version::Http2 => !close,
            Version::Http10 => keep_alive_asked && !close,
        };
        Ok(Self { body, keep_alive, expect_continue, host, upgrade_h2c })
    }
}

/// Whether the field name `name` is `lower` (lowercase letters and `-`)
/// in any case. Setting bit 5 of a byte lowercases a letter, and in a
/// token no byte other than a letter's two cases lands on a letter or on
/// `-` (only CR, 0x0D, would, and a token has none): a cheaper compare than
/// `eq_ignore_ascii_case`, on every field of every request.
pub(super) fn is_named(name: &[u8], lower: &[u8]) -> bool {
    name.len() == lower.len() && name.iter().zip(lower).all(|(&a, &b)| a | 0x20 == b)
}

/// The fields the server reads.
#[derive(Clone, Copy)]
pub(super) enum Field {
    Host,
    Upgrade,
    Expect,
    Connection,
    ContentLength,
    TransferEncoding,
}

impl Field {
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Host => "host",
            Self::Upgrade => "upgrade",
            Self::Expect => "expect",
            Self::Connection => "connection",
            Self::ContentLength => "content-length",
            Self::TransferEncoding => "transfer-encoding",
        }
    }
}
