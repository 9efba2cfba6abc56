//! HTTP/2 (RFC 9113) pieces: HPACK (RFC 7541).

pub mod hpack;
