//! A response's status and fields, written through either writer: the
//! synchronous [`Response`] or a [`Responder`].

use http::header::{CONNECTION, CONTENT_LENGTH, DATE, TRANSFER_ENCODING, UPGRADE};

use crate::handler::{ResponseError, Status};
use crate::response::{Responder, Response};

/// A response head's writer: the synchronous [`Response`] or a
/// [`Responder`].
pub(super) trait Head {
    fn status(&mut self, status: Status) -> Result<(), ResponseError>;
    fn header(&mut self, name: &str, value: &[u8]) -> Result<(), ResponseError>;
    fn close(&mut self) -> Result<(), ResponseError>;
}

impl Head for Response<'_> {
    fn status(&mut self, status: Status) -> Result<(), ResponseError> {
        Response::status(self, status).map(drop)
    }
    fn header(&mut self, name: &str, value: &[u8]) -> Result<(), ResponseError> {
        Response::header(self, name, value).map(drop)
    }
    fn close(&mut self) -> Result<(), ResponseError> {
        Response::close(self).map(drop)
    }
}

impl Head for Responder {
    fn status(&mut self, status: Status) -> Result<(), ResponseError> {
        Responder::status(self, status).map(drop)
    }
    fn header(&mut self, name: &str, value: &[u8]) -> Result<(), ResponseError> {
        Responder::header(self, name, value).map(drop)
    }
    fn close(&mut self) -> Result<(), ResponseError> {
        Responder::close(self).map(drop)
    }
}

/// Writes the status and the fields falconet does not write itself;
/// returns the service's `content-length`, if it sent one.
pub(super) fn write_head(head: &mut impl Head, parts: &http::response::Parts) -> Option<u64> {
    // http's codes are 100..=999, which is what Status accepts (a 1xx
    // answer was refused before: `not_final`).
    let status = Status::new(parts.status.as_u16()).unwrap_or(Status::INTERNAL_SERVER_ERROR);
    let _ = head.status(status);
    let mut length = None;
    // Looked up only when present: a walk of a few names costs less than
    // the lookup's hash, and most responses have no `connection` field.
    let connection = parts
        .headers
        .keys()
        .any(|name| name == CONNECTION)
        .then(|| parts.headers.get_all(CONNECTION));
    for (name, value) in &parts.headers {
        if name != UPGRADE
            && name != CONNECTION
            && connection.as_ref().is_some_and(|connection| named_by(connection, name.as_str()))
        {
            // A field the service's `connection` field names is for one
            // hop only (RFC 9110 §7.6.1): not sent. `Upgrade` goes, with
            // its option (`wire.rs`); `connection` itself is never sent
            // and is read below for its `close`, whatever it names.
            continue;
        }
        if name == CONTENT_LENGTH {
            length = value.to_str().ok().and_then(|v| v.trim().parse().ok());
        } else if name == CONNECTION {
            let close = value
                .as_bytes()
                .split(|&b| b == b',')
                .any(|token| token.trim_ascii().eq_ignore_ascii_case(b"close"));
            if close {
                let _ = head.close();
            }
        } else if name != TRANSFER_ENCODING
            && name != DATE
            && let Err(error) = head.header(name.as_str(), value.as_bytes())
        {
            tracing::debug!(%error, field = name.as_str(), "a response field not sent");
        }
    }
    length
}

/// Whether a `connection` field's options name the field `name`
/// (lowercase, as `http` keeps names).
fn named_by(connection: &http::header::GetAll<'_, http::HeaderValue>, name: &str) -> bool {
    connection.iter().any(|value| {
        value
            .as_bytes()
            .split(|&b| b == b',')
            .any(|option| option.trim_ascii().eq_ignore_ascii_case(name.as_bytes()))
    })
}
