//! The TechEmpower endpoints: `GET /plaintext` and `GET /json`.

use std::fmt::{self, Write as _};

use crate::handler::{Handler, Request, Response, Status};

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
            Route::Plaintext => response
                .header("Content-Type", "text/plain")
                .and_then(|r| r.body(MESSAGE.as_bytes())),
            Route::Json => {
                let mut json = StackBuf::new();
                let _ = write!(json, "{{\"message\":{}}}", JsonString(MESSAGE));
                response
                    .header("Content-Type", "application/json")
                    .and_then(|r| r.body(json.as_bytes()))
            }
            Route::NotFound => response.status(Status::NOT_FOUND).map(drop),
            Route::MethodNotAllowed => response
                .status(Status::METHOD_NOT_ALLOWED)
                .and_then(|r| r.header("Allow", "GET, HEAD"))
                .map(drop),
        };
    }
}

/// A string written as a JSON string literal.
struct JsonString<'a>(&'a str);

impl fmt::Display for JsonString<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_char('"')?;
        for c in self.0.chars() {
            match c {
                '"' => f.write_str("\\\"")?,
                '\\' => f.write_str("\\\\")?,
                '\n' => f.write_str("\\n")?,
                '\r' => f.write_str("\\r")?,
                '\t' => f.write_str("\\t")?,
                c if u32::from(c) < 0x20 => write!(f, "\\u{:04x}", u32::from(c))?,
                c => f.write_char(c)?,
            }
        }
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
