//! Encoding a header block (RFC 7541 section 6).
//!
//! For each field, the shortest representation this encoder knows:
//!
//! 1. the whole field in the static or the dynamic table: an indexed field
//!    (one byte for `:status: 200`);
//! 2. otherwise a literal whose name is an index when the name is in a
//!    table, with incremental indexing when the entry would take at most
//!    half the table (so one large value does not flush everything else),
//!    never indexed when the field says so;
//! 3. strings Huffman-coded when that is shorter.
//!
//! The table's size is the smaller of the peer's `SETTINGS_HEADER_TABLE_SIZE`
//! and [`ENCODER_MAX_TABLE_SIZE`]; a change is announced by size updates at
//! the start of the next block: the smallest size since the last block,
//! then the final one (RFC 7541 4.2).

use super::table::{DynamicTable, STATIC_LEN, static_entry, static_name};
use super::{
    DEFAULT_TABLE_SIZE, Field, INDEXED, INDEXED_PREFIX, LITERAL_INDEXED, LITERAL_INDEXED_PREFIX,
    LITERAL_NEVER_INDEXED, LITERAL_NOT_INDEXED, LITERAL_PREFIX, SIZE_UPDATE, SIZE_UPDATE_PREFIX,
    encode_integer, encode_string,
};

/// The most dynamic table this encoder keeps, whatever the peer allows:
/// a larger one costs memory per connection and a longer search.
pub const ENCODER_MAX_TABLE_SIZE: usize = DEFAULT_TABLE_SIZE;

/// An HPACK encoder: one per connection, every header block it encodes
/// sent in order.
///
/// ```
/// use falconet_server::h2::hpack::{Encoder, Field};
///
/// let mut encoder = Encoder::new();
/// let mut block = Vec::new();
/// encoder.encode([Field::new(b":status", b"200")], &mut block);
/// assert_eq!(block, [0x88]); // static index 8
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Encoder {
    table: DynamicTable,
    /// The smallest size since the last block, if the size changed.
    smallest_pending: Option<usize>,
}

impl Default for Encoder {
    fn default() -> Self {
        Self::new()
    }
}

impl Encoder {
    /// An encoder with the protocol's default table size (4,096 bytes).
    pub fn new() -> Self {
        Self { table: DynamicTable::new(ENCODER_MAX_TABLE_SIZE), smallest_pending: None }
    }

    /// An encoder whose table is already `size` bytes, announced (the
    /// RFC 7541 C.6 examples).
    #[cfg(test)]
    pub(crate) fn with_table_size(size: usize) -> Self {
        let mut encoder = Self::new();
        encoder.table.set_max_size(size);
        encoder
    }

    /// The peer's `SETTINGS_HEADER_TABLE_SIZE`: the table shrinks to it (or
    /// to [`ENCODER_MAX_TABLE_SIZE`]) and the next block announces it.
    pub fn set_peer_table_size(&mut self, size: u32) {
        let size = (size as usize).min(ENCODER_MAX_TABLE_SIZE);
        if size == self.table.max_size() && self.smallest_pending.is_none() {
            return;
        }
        let smallest = self.smallest_pending.map_or(size, |s| s.min(size));
        self.smallest_pending = Some(smallest);
        self.table.set_max_size(size);
    }

    /// The dynamic table's current size (sum of entry sizes).
    pub fn table_size(&self) -> usize {
        self.table.size()
    }

    /// Appends one header block holding `fields`, in order, to `dst`.
    pub fn encode<'f, I>(&mut self, fields: I, dst: &mut Vec<u8>)
    where
        I: IntoIterator<Item = Field<'f>>,
    {
        if let Some(smallest) = self.smallest_pending.take() {
            if smallest < self.table.max_size() {
                encode_integer(smallest, SIZE_UPDATE_PREFIX, SIZE_UPDATE, dst);
            }
            encode_integer(self.table.max_size(), SIZE_UPDATE_PREFIX, SIZE_UPDATE, dst);
        }
        for field in fields {
            self.encode_field(field, dst);
        }
    }

    fn encode_field(&mut self, field: Field<'_>, dst: &mut Vec<u8>) {
        let Field { name, value, never_indexed } = field;
        let mut name_index = None;
        if let Some((first, count)) = static_name(name) {
            name_index = Some(first);
            if !never_indexed {
                for index in first..first + count {
                    if static_entry(index).is_some_and(|(_, v)| v == value) {
                        encode_integer(index, INDEXED_PREFIX, INDEXED, dst);
                        return;
                    }
                }
            }
        }
        if !never_indexed && let Some((position, full)) = self.table.find(name, value) {
            let index = STATIC_LEN + 1 + position;
            if full {
                encode_integer(index, INDEXED_PREFIX, INDEXED, dst);
                return;
            }
            name_index.get_or_insert(index);
        }
        let index_it = !never_indexed && field.size() * 2 <= self.table.max_size();
        let (flags, prefix) = if never_indexed {
            (LITERAL_NEVER_INDEXED, LITERAL_PREFIX)
        } else if index_it {
            (LITERAL_INDEXED, LITERAL_INDEXED_PREFIX)
        } else {
            (LITERAL_NOT_INDEXED, LITERAL_PREFIX)
        };
        match name_index {
            Some(index) => encode_integer(index, prefix, flags, dst),
            None => {
                encode_integer(0, prefix, flags, dst);
                encode_string(name, dst);
            }
        }
        encode_string(value, dst);
        if index_it {
            self.table.insert(name, value);
        }
    }
}
