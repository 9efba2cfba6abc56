//! HPACK, the field compression of HTTP/2 (RFC 7541): a [`Decoder`] for
//! request header blocks and an [`Encoder`] for response header blocks.
//!
//! ```
//! use falconet_server::h2::hpack::{Decoder, Encoder, Field};
//!
//! let mut encoder = Encoder::new();
//! let mut block = Vec::new();
//! encoder.encode([Field::new(b":status", b"200"), Field::new(b"server", b"falconet")], &mut block);
//!
//! let mut decoder = Decoder::new(4096);
//! let mut fields = Vec::new();
//! decoder.decode(&block, |field| fields.push((field.name.to_vec(), field.value.to_vec())))?;
//! assert_eq!(fields[1], (b"server".to_vec(), b"falconet".to_vec()));
//! # Ok::<(), falconet_server::h2::hpack::DecodeError>(())
//! ```
//!
//! # Shape
//!
//! - `huffman.rs`: the Appendix B code, a canonical code decoded by table
//!   lookups on the next 32 bits (no tree), encoded 64 bits at a time.
//! - `table.rs`: the static table and the dynamic table (one byte buffer,
//!   FIFO eviction, no allocation in steady state).
//! - `decoder.rs`, `encoder.rs`: the representations of section 6.
//!
//! # Bounds
//!
//! Decoding is bounded by its input and by two limits a connection sets
//! from its SETTINGS ([`Decoder::set_max_header_list_size`],
//! [`Decoder::set_max_fields`]): each field counts its name and value
//! lengths plus 32 bytes against the header-list limit (RFC 9113 6.5.2),
//! so an "HPACK bomb" (one large table entry referenced by many one-byte
//! indexed fields) stops at the limit, not at memory. Integers are capped
//! at `u32`; a string's declared length is checked against what is left of
//! the block before anything is decoded.
//!
//! # Errors
//!
//! Every decoding failure is a [`DecodeError`]. Those that leave the
//! decoder's dynamic table out of step with the peer's encoder are
//! connection errors (`COMPRESSION_ERROR`, RFC 9113 4.3):
//! [`DecodeError::is_connection_error`]. A header list over its limits is
//! not: the block is still decoded to its end, so the table stays in step,
//! and only the request fails.

mod decoder;
mod encoder;
mod huffman;
mod table;

use core::fmt;

pub use decoder::{DEFAULT_MAX_FIELDS, DEFAULT_MAX_HEADER_LIST_SIZE, Decoder};
pub use encoder::{ENCODER_MAX_TABLE_SIZE, Encoder};
pub use table::ENTRY_OVERHEAD;

/// The dynamic table size both endpoints start with (RFC 9113 6.5.2,
/// `SETTINGS_HEADER_TABLE_SIZE`).
pub const DEFAULT_TABLE_SIZE: usize = 4096;

/// One field of a header block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field<'a> {
    /// The name (lowercase in HTTP/2; the codec does not check).
    pub name: &'a [u8],
    /// The value.
    pub value: &'a [u8],
    /// Never to be indexed by any compressor on its way (RFC 7541 7.1.3):
    /// set on a decoded field sent as "never indexed"; an encoder sends such
    /// a field that way.
    pub never_indexed: bool,
}

impl<'a> Field<'a> {
    /// A field that may be indexed.
    pub const fn new(name: &'a [u8], value: &'a [u8]) -> Self {
        Self { name, value, never_indexed: false }
    }

    /// A field that must never be indexed (a credential, say).
    pub const fn sensitive(name: &'a [u8], value: &'a [u8]) -> Self {
        Self { name, value, never_indexed: true }
    }

    /// The field's size as HPACK and SETTINGS_MAX_HEADER_LIST_SIZE count
    /// it: name and value lengths plus 32.
    pub const fn size(&self) -> usize {
        self.name.len() + self.value.len() + ENTRY_OVERHEAD
    }
}

/// Why a header block could not be decoded (RFC 7541; RFC 9113 4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// The block ends inside a representation (an integer or a string).
    Truncated,
    /// An integer does not fit in 32 bits or uses more continuation bytes
    /// than one that does (RFC 7541 5.1).
    IntegerOverflow,
    /// An index of 0 or past the end of the tables (RFC 7541 2.3.3).
    InvalidIndex {
        /// The index received.
        index: u32,
    },
    /// A Huffman string's padding is longer than 7 bits or not all ones
    /// (RFC 7541 5.2).
    HuffmanPadding,
    /// A Huffman string contains the EOS symbol (RFC 7541 5.2).
    HuffmanEos,
    /// A dynamic table size update above the size this decoder allows
    /// (`SETTINGS_HEADER_TABLE_SIZE`, RFC 7541 6.3).
    TableSizeTooLarge {
        /// The size asked for.
        size: u32,
        /// The largest allowed.
        max: usize,
    },
    /// A dynamic table size update after the block's first field
    /// (RFC 7541 4.2).
    TableSizeUpdateTooLate,
    /// The first block after the peer acknowledged a table size below its
    /// table's does not begin with a size update to that size
    /// (RFC 9113 4.3.1; see [`Decoder::settings_acknowledged`]).
    TableSizeUpdateMissing {
        /// The acknowledged size.
        max: usize,
    },
    /// The fields' sizes (name + value + 32 each) exceed the header-list
    /// limit. Not a connection error: the block was decoded to its end.
    HeaderListTooLarge {
        /// The limit.
        max: usize,
    },
    /// More fields than the field-count limit. Not a connection error: the
    /// block was decoded to its end.
    TooManyFields {
        /// The limit.
        max: usize,
    },
}

impl DecodeError {
    /// Whether the dynamic table may now differ from the peer's, so the
    /// connection must end with `COMPRESSION_ERROR` (RFC 9113 4.3). The two
    /// limit errors are not: the request fails, the connection goes on.
    pub const fn is_connection_error(&self) -> bool {
        !matches!(self, Self::HeaderListTooLarge { .. } | Self::TooManyFields { .. })
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated => f.write_str("header block truncated inside a representation"),
            Self::IntegerOverflow => f.write_str("HPACK integer over 32 bits"),
            Self::InvalidIndex { index } => write!(f, "HPACK index {index} is not in the tables"),
            Self::HuffmanPadding => f.write_str("Huffman padding over 7 bits or not all ones"),
            Self::HuffmanEos => f.write_str("Huffman string contains EOS"),
            Self::TableSizeTooLarge { size, max } => {
                write!(f, "dynamic table size update to {size} over the allowed {max}")
            }
            Self::TableSizeUpdateTooLate => {
                f.write_str("dynamic table size update after the first field of a block")
            }
            Self::TableSizeUpdateMissing { max } => {
                write!(f, "no dynamic table size update to at most {max} after its acknowledgement")
            }
            Self::HeaderListTooLarge { max } => write!(f, "header list over {max} bytes"),
            Self::TooManyFields { max } => write!(f, "more than {max} fields in a header block"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// The most continuation bytes a 32-bit integer can need after any prefix.
const MAX_INTEGER_CONTINUATIONS: u32 = 5;

/// The first byte of each representation (RFC 7541 section 6): its
/// pattern's high bits, and the width of the integer prefix after them.
///
/// Indexed field: `1xxxxxxx`, 7-bit index.
const INDEXED: u8 = 0x80;
const INDEXED_PREFIX: u32 = 7;
/// Literal with incremental indexing: `01xxxxxx`, 6-bit name index.
const LITERAL_INDEXED: u8 = 0x40;
const LITERAL_INDEXED_PREFIX: u32 = 6;
/// Dynamic table size update: `001xxxxx`, 5-bit size.
const SIZE_UPDATE: u8 = 0x20;
const SIZE_UPDATE_PREFIX: u32 = 5;
/// Literal never indexed: `0001xxxx`; without indexing: `0000xxxx`; a
/// 4-bit name index either way.
const LITERAL_NEVER_INDEXED: u8 = 0x10;
const LITERAL_NOT_INDEXED: u8 = 0x00;
const LITERAL_PREFIX: u32 = 4;

/// A string literal's length: the Huffman flag, then a 7-bit prefix
/// (RFC 7541 5.2).
const HUFFMAN: u8 = 0x80;
const STRING_LENGTH_PREFIX: u32 = 7;

/// An integer's continuation bytes past its prefix (RFC 7541 5.1): 7 bits
/// of value each, least significant first, the top bit set on every byte
/// but the last.
const CONTINUATION_BITS: u32 = 7;
const CONTINUATION_VALUE: u8 = 0x7f;
const CONTINUATION_MORE: u8 = 0x80;

/// Decodes an integer with an `prefix_bits`-bit prefix (RFC 7541 5.1)
/// starting at `block[*pos]`, advancing `pos` past it.
fn decode_integer(block: &[u8], pos: &mut usize, prefix_bits: u32) -> Result<u32, DecodeError> {
    let max_prefix = (1u32 << prefix_bits) - 1;
    let first = *block.get(*pos).ok_or(DecodeError::Truncated)?;
    *pos += 1;
    let mut value = u64::from(u32::from(first) & max_prefix);
    if value < u64::from(max_prefix) {
        return Ok(value as u32);
    }
    for i in 0..MAX_INTEGER_CONTINUATIONS {
        let byte = *block.get(*pos).ok_or(DecodeError::Truncated)?;
        *pos += 1;
        value += u64::from(byte & CONTINUATION_VALUE) << (CONTINUATION_BITS * i);
        if value > u64::from(u32::MAX) {
            return Err(DecodeError::IntegerOverflow);
        }
        if byte & CONTINUATION_MORE == 0 {
            return Ok(value as u32);
        }
    }
    Err(DecodeError::IntegerOverflow)
}

/// Appends `value` with an `prefix_bits`-bit prefix whose high bits are
/// `flags` (RFC 7541 5.1).
fn encode_integer(value: usize, prefix_bits: u32, flags: u8, dst: &mut Vec<u8>) {
    let max_prefix = (1usize << prefix_bits) - 1;
    if value < max_prefix {
        dst.push(flags | value as u8);
        return;
    }
    dst.push(flags | max_prefix as u8);
    let mut rest = value - max_prefix;
    while rest > usize::from(CONTINUATION_VALUE) {
        dst.push((rest as u8 & CONTINUATION_VALUE) | CONTINUATION_MORE);
        rest >>= CONTINUATION_BITS;
    }
    dst.push(rest as u8);
}

/// Appends a string literal, Huffman-coded unless that is longer (a tie goes
/// to Huffman, as the RFC 7541 Appendix C examples do).
fn encode_string(value: &[u8], dst: &mut Vec<u8>) {
    let huffman_len = huffman::encoded_len(value);
    if huffman_len <= value.len() {
        encode_integer(huffman_len, STRING_LENGTH_PREFIX, HUFFMAN, dst);
        huffman::encode(value, dst);
    } else {
        encode_integer(value.len(), STRING_LENGTH_PREFIX, 0, dst);
        dst.extend_from_slice(value);
    }
}

#[cfg(test)]
mod tests;
