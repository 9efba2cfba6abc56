//! The TechEmpower endpoints: `GET /plaintext` and `GET /json`.

use std::fmt::{self, Write as _};

use crate::handler::{Field, Handler, Request, Response, Status};

/// Serves `GET /plaintext` (`Hello, World!`) and `GET /json`
/// (`{"message":"Hello, World!"}`, serialized per request as the
/// benchmark's rules ask); `404` elsewhere, `405` for other methods.
#[derive(Clone, Copy, Debug, Default)]
pub struct Hello;

/// Where a request to [`Hello`] goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// `/plaintext`.
    Plaintext,
    /// `/json`.
    Json,
    /// Another path.
    NotFound,
    /// A known path with a method other than GET or HEAD.
    MethodNotAllowed,
}

const TEXT_PLAIN: Field = Field::new("Content-Type: text/plain");
const APPLICATION_JSON: Field = Field::new("Content-Type: application/json");
const ALLOW: Field = Field::new("Allow: GET, HEAD");

/// The message both endpoints send.
pub const MESSAGE: &str = "Hello, World!";

impl Handler for Hello {
    type State = Route;

    fn head(&self, request: &Request<'_>) -> Route {
        let route = match request.path() {
            "/plaintext" => Route::Plaintext,
            "/json" => Route::Json,
            _ => return Route::NotFound,
        };
        match request.method() {
            "GET" | "HEAD" => route,
            _ => Route::MethodNotAllowed,
        }
    }

    fn respond(&self, route: Route, response: &mut Response<'_>) {
        // A fresh response accepts these calls: the results are Ok.
        let _ = match route {
            Route::Plaintext => response.field(TEXT_PLAIN).and_then(|r| r.body(MESSAGE.as_bytes())),
            Route::Json => {
                let mut json = StackBuf::new();
                let _ = write!(json, "{{\"message\":{}}}", JsonString(MESSAGE));
                response.field(APPLICATION_JSON).and_then(|r| r.body(json.as_bytes()))
            }
            Route::NotFound => response.status(Status::NOT_FOUND).map(drop),
            Route::MethodNotAllowed => {
                response.status(Status::METHOD_NOT_ALLOWED).and_then(|r| r.field(ALLOW)).map(drop)
            }
        };
    }
}

/// A string written as a JSON string literal.
struct JsonString<'a>(&'a str);

impl fmt::Display for JsonString<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_char('"')?;
        // Copies runs of plain characters whole; escapes the rest.
        let mut plain = 0;
        for (i, c) in self.0.char_indices() {
            let escape = match c {
                '"' => "\\\"",
                '\\' => "\\\\",
                '\n' => "\\n",
                '\r' => "\\r",
                '\t' => "\\t",
                c if u32::from(c) < 0x20 => "",
                _ => continue,
            };
            f.write_str(&self.0[plain..i])?;
            if escape.is_empty() {
                write!(f, "\\u{:04x}", u32::from(c))?;
            } else {
                f.write_str(escape)?;
            }
            plain = i + c.len_utf8();
        }
        f.write_str(&self.0[plain..])?;
        f.write_char('"')
    }
}

/// A small buffer on the stack that `write!` fills (no allocation).
struct StackBuf {
    bytes: [u8; 64],
    len: usize,
}

impl StackBuf {
    fn new() -> Self {
        Self { bytes: [0; 64], len: 0 }
    }

    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl fmt::Write for StackBuf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        self.bytes.get_mut(self.len..end).ok_or(fmt::Error)?.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(JsonString("a\"b\\c\n\u{1}é").to_string(), "\"a\\\"b\\\\c\\n\\u0001é\"");
    }

    #[test]
    fn the_stack_buffer_refuses_overflow() {
        let mut buf = StackBuf::new();
        assert!(buf.write_str(&"x".repeat(64)).is_ok());
        assert!(buf.write_str("y").is_err());
        assert_eq!(buf.as_bytes().len(), 64);
    }
}
