//! Decoding a header block (RFC 7541 section 6) into fields.
//!
//! Each representation starts with a pattern in its first byte:
//!
//! | first byte | representation | prefix |
//! |---|---|---|
//! | `1xxxxxxx` | indexed field (6.1) | 7 |
//! | `01xxxxxx` | literal, incremental indexing (6.2.1) | 6 |
//! | `001xxxxx` | dynamic table size update (6.3) | 5 |
//! | `0001xxxx` | literal, never indexed (6.2.3) | 4 |
//! | `0000xxxx` | literal, without indexing (6.2.2) | 4 |
//!
//! A literal's name is an index (prefix value above 0) or a string that
//! follows. Raw strings are handed out as slices of the block itself;
//! Huffman strings are decoded into two buffers the decoder keeps, so a
//! decoder in steady state does not allocate.

use super::table::{DynamicTable, STATIC_LEN, static_entry};
use super::{
    DEFAULT_TABLE_SIZE, DecodeError, Field, HUFFMAN, INDEXED, INDEXED_PREFIX, LITERAL_INDEXED,
    LITERAL_INDEXED_PREFIX, LITERAL_NEVER_INDEXED, LITERAL_PREFIX, SIZE_UPDATE, SIZE_UPDATE_PREFIX,
    STRING_LENGTH_PREFIX, decode_integer, huffman,
};

/// The default field-count limit of a decoder.
pub const DEFAULT_MAX_FIELDS: usize = 128;
/// The default header-list limit of a decoder, in bytes counted as
/// RFC 9113 6.5.2 counts them.
pub const DEFAULT_MAX_HEADER_LIST_SIZE: usize = 16 * 1024;

/// An HPACK decoder: one per connection, fed every header block in order.
///
/// ```
/// use falconet_server::h2::hpack::Decoder;
///
/// // RFC 7541 C.3.1: the first request of a connection, without Huffman.
/// let block = b"\x82\x86\x84\x41\x0fwww.example.com";
/// let mut decoder = Decoder::new(4096);
/// let mut names = Vec::new();
/// decoder.decode(block, |field| names.push(String::from_utf8_lossy(field.name).into_owned()))?;
/// assert_eq!(names, [":method", ":scheme", ":path", ":authority"]);
/// # Ok::<(), falconet_server::h2::hpack::DecodeError>(())
/// ```
#[derive(Debug)]
pub struct Decoder {
    pub(super) table: DynamicTable,
    /// The table size this endpoint advertises as
    /// `SETTINGS_HEADER_TABLE_SIZE`: the largest an update may ask for
    /// once the peer has acknowledged it.
    max_table_size: usize,
    /// Whether the peer has acknowledged `max_table_size`; until then its
    /// encoder may still use the protocol default (RFC 9113 4.3.1).
    acknowledged: bool,
    /// The next block must begin with a size update: `max_table_size`,
    /// lower than the table's, was acknowledged (RFC 9113 4.3.1).
    update_due: bool,
    max_header_list_size: usize,
    max_fields: usize,
    /// A Huffman-coded or table-borrowed name, decoded here.
    name: Vec<u8>,
    /// A Huffman-coded value, decoded here.
    value: Vec<u8>,
}

impl Default for Decoder {
    fn default() -> Self {
        Self::new(DEFAULT_TABLE_SIZE)
    }
}

impl Decoder {
    /// A decoder for an endpoint that advertises `max_table_size` as its
    /// `SETTINGS_HEADER_TABLE_SIZE`, with the default limits
    /// ([`DEFAULT_MAX_HEADER_LIST_SIZE`], [`DEFAULT_MAX_FIELDS`]).
    ///
    /// The table starts at the protocol default, 4,096 bytes (RFC 9113
    /// 6.5.2): the peer's encoder may use that much without an update
    /// until it acknowledges our SETTINGS. Until then an update may ask for
    /// the larger of the two sizes; afterwards for `max_table_size` at
    /// most, and if that is below the table's size the next block must
    /// begin with an update to at most it. Tell the decoder of the acknowledgement
    /// with [`settings_acknowledged`](Self::settings_acknowledged).
    ///
    /// The table's storage grows with its entries, to at most about 2.75
    /// times the largest size the peer may ask for (twice the bytes, so
    /// evictions are moved out in bulk, and a 24-byte slot per possible
    /// entry of 32 bytes or more): 11 KiB at the default.
    pub fn new(max_table_size: usize) -> Self {
        Self {
            table: DynamicTable::new(DEFAULT_TABLE_SIZE),
            max_table_size,
            acknowledged: false,
            update_due: false,
            max_header_list_size: DEFAULT_MAX_HEADER_LIST_SIZE,
            max_fields: DEFAULT_MAX_FIELDS,
            name: Vec::new(),
            value: Vec::new(),
        }
    }

    /// A decoder whose table is already `size` bytes and may not grow (the
    /// RFC 7541 C.5 examples).
    #[cfg(test)]
    pub(crate) fn with_table_size(size: usize) -> Self {
        let mut decoder = Self::new(size);
        decoder.table.set_max_size(size);
        decoder.acknowledged = true;
        decoder
    }

    /// The peer has acknowledged the SETTINGS that advertised
    /// `max_table_size` (a SETTINGS frame with the ACK flag): from now on
    /// an update above it is refused, and if the table is larger the next
    /// block must begin with an update that brings it down (RFC 9113
    /// 4.3.1), or fail with [`DecodeError::TableSizeUpdateMissing`].
    pub fn settings_acknowledged(&mut self) {
        self.acknowledged = true;
        self.update_due = self.table.max_size() > self.max_table_size;
    }

    /// The largest size an update may ask for now.
    fn update_limit(&self) -> usize {
        if self.acknowledged {
            self.max_table_size
        } else {
            self.max_table_size.max(DEFAULT_TABLE_SIZE)
        }
    }

    /// The header-list limit: the sum over a block's fields of name and
    /// value lengths plus 32 (RFC 9113 6.5.2).
    pub fn set_max_header_list_size(&mut self, max: usize) {
        self.max_header_list_size = max;
    }

    /// The most fields one block may hold, its `cookie` crumbs (RFC 9113
    /// 8.2.3) counted as one field, the one they are joined into.
    pub fn set_max_fields(&mut self, max: usize) {
        self.max_fields = max;
    }

    /// The dynamic table's current size (sum of entry sizes).
    pub fn table_size(&self) -> usize {
        self.table.size()
    }

    /// Decodes one complete header block (the fragments of a HEADERS frame
    /// and its CONTINUATIONs, joined), calling `sink` with each field in
    /// order.
    ///
    /// # Errors
    /// A [`DecodeError`]. When it [is a connection
    /// error](DecodeError::is_connection_error), the decoder is out of step
    /// and must not be used again. A block over the header-list or field
    /// limit is decoded to its end (keeping the table in step) with `sink`
    /// no longer called, then fails with `HeaderListTooLarge` or
    /// `TooManyFields`.
    pub fn decode<F>(&mut self, block: &[u8], mut sink: F) -> Result<(), DecodeError>
    where
        F: FnMut(Field<'_>),
    {
        let mut pos = 0;
        let mut fields = 0usize;
        // Fields against `max_fields`: a cookie's crumbs count once.
        let mut counted = 0usize;
        let mut cookie_counted = false;
        let mut list_size = 0usize;
        let mut over_limit = None;
        while let Some(&first) = block.get(pos) {
            if first & SIZE_UPDATE == SIZE_UPDATE && first & (INDEXED | LITERAL_INDEXED) == 0 {
                if fields > 0 {
                    return Err(DecodeError::TableSizeUpdateTooLate);
                }
                let size = decode_integer(block, &mut pos, SIZE_UPDATE_PREFIX)?;
                let max = self.update_limit();
                if size as usize > max {
                    return Err(DecodeError::TableSizeTooLarge { size, max });
                }
                self.table.set_max_size(size as usize);
                self.update_due = false;
                continue;
            }
            if self.update_due {
                return Err(DecodeError::TableSizeUpdateMissing { max: self.max_table_size });
            }
            fields += 1;
            let field = if first & INDEXED != 0 {
                let index = decode_integer(block, &mut pos, INDEXED_PREFIX)?;
                let (name, value) = lookup(&self.table, index)?;
                Field::new(name, value)
            } else {
                let (prefix, never_indexed) = if first & LITERAL_INDEXED != 0 {
                    (LITERAL_INDEXED_PREFIX, false)
                } else {
                    (LITERAL_PREFIX, first & LITERAL_NEVER_INDEXED != 0)
                };
                let index = decode_integer(block, &mut pos, prefix)?;
                let name = if index == 0 {
                    string(block, &mut pos, &mut self.name)?
                } else {
                    // Copied: an insertion below may evict the entry.
                    let (name, _) = lookup(&self.table, index)?;
                    self.name.clear();
                    self.name.extend_from_slice(name);
                    &self.name[..]
                };
                let value = string(block, &mut pos, &mut self.value)?;
                if first & LITERAL_INDEXED != 0 {
                    self.table.insert(name, value);
                }
                Field { name, value, never_indexed }
            };
            list_size = list_size.saturating_add(field.size());
            // RFC 9113 8.2.3: a client may split `cookie` into crumbs, one
            // field each, for compression; joined, they are the one field
            // HTTP/1.1 carries. Their bytes still count in `list_size`.
            if field.name != b"cookie" || !core::mem::replace(&mut cookie_counted, true) {
                counted += 1;
            }
            if over_limit.is_none() {
                if counted > self.max_fields {
                    over_limit = Some(DecodeError::TooManyFields { max: self.max_fields });
                } else if list_size > self.max_header_list_size {
                    over_limit =
                        Some(DecodeError::HeaderListTooLarge { max: self.max_header_list_size });
                } else {
                    sink(field);
                }
            }
        }
        over_limit.map_or(Ok(()), Err)
    }
}

/// The entry at `index` of the combined index space (RFC 7541 2.3.3).
fn lookup(table: &DynamicTable, index: u32) -> Result<(&[u8], &[u8]), DecodeError> {
    let at = index as usize;
    let found = if at <= STATIC_LEN { static_entry(at) } else { table.get(at - STATIC_LEN - 1) };
    found.ok_or(DecodeError::InvalidIndex { index })
}

/// A string literal at `block[*pos]` (RFC 7541 5.2): a slice of the block
/// when raw, decoded into `scratch` when Huffman-coded.
fn string<'a>(
    block: &'a [u8],
    pos: &mut usize,
    scratch: &'a mut Vec<u8>,
) -> Result<&'a [u8], DecodeError> {
    let huffman_coded = block.get(*pos).ok_or(DecodeError::Truncated)? & HUFFMAN != 0;
    let len = decode_integer(block, pos, STRING_LENGTH_PREFIX)? as usize;
    let raw = block.get(*pos..).and_then(|rest| rest.get(..len)).ok_or(DecodeError::Truncated)?;
    *pos += len;
    if huffman_coded {
        scratch.clear();
        huffman::decode(raw, scratch)?;
        Ok(&scratch[..])
    } else {
        Ok(raw)
    }
}
