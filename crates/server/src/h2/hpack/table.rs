//! The static table (RFC 7541 Appendix A) and the dynamic table (section
//! 2.3.2, 4).
//!
//! The dynamic table keeps its entries' bytes in one buffer, oldest first,
//! each entry's name then value, and an index of `(offset, name length,
//! value length)` newest first. Inserting appends; evicting the oldest
//! advances the buffer's start; when the buffer's end reaches its capacity
//! the live bytes move to the front (at most `max_size` bytes, once per
//! `capacity - max_size` bytes inserted). The buffer and the index are
//! sized for the table's maximum when it is made, so a table in steady
//! state never allocates.

use std::collections::VecDeque;

/// The number of static entries; dynamic indices start after them.
pub(crate) const STATIC_LEN: usize = 61;

/// Each entry's size is its name and value lengths plus this (RFC 7541
/// section 4.1).
pub const ENTRY_OVERHEAD: usize = 32;

/// RFC 7541 Appendix A, index 1 first.
#[rustfmt::skip]
const STATIC: [(&[u8], &[u8]); STATIC_LEN] = [
    (b":authority", b""), // 1
    (b":method", b"GET"), // 2
    (b":method", b"POST"), // 3
    (b":path", b"/"), // 4
    (b":path", b"/index.html"), // 5
    (b":scheme", b"http"), // 6
    (b":scheme", b"https"), // 7
    (b":status", b"200"), // 8
    (b":status", b"204"), // 9
    (b":status", b"206"), // 10
    (b":status", b"304"), // 11
    (b":status", b"400"), // 12
    (b":status", b"404"), // 13
    (b":status", b"500"), // 14
    (b"accept-charset", b""), // 15
    (b"accept-encoding", b"gzip, deflate"), // 16
    (b"accept-language", b""), // 17
    (b"accept-ranges", b""), // 18
    (b"accept", b""), // 19
    (b"access-control-allow-origin", b""), // 20
    (b"age", b""), // 21
    (b"allow", b""), // 22
    (b"authorization", b""), // 23
    (b"cache-control", b""), // 24
    (b"content-disposition", b""), // 25
    (b"content-encoding", b""), // 26
    (b"content-language", b""), // 27
    (b"content-length", b""), // 28
    (b"content-location", b""), // 29
    (b"content-range", b""), // 30
    (b"content-type", b""), // 31
    (b"cookie", b""), // 32
    (b"date", b""), // 33
    (b"etag", b""), // 34
    (b"expect", b""), // 35
    (b"expires", b""), // 36
    (b"from", b""), // 37
    (b"host", b""), // 38
    (b"if-match", b""), // 39
    (b"if-modified-since", b""), // 40
    (b"if-none-match", b""), // 41
    (b"if-range", b""), // 42
    (b"if-unmodified-since", b""), // 43
    (b"last-modified", b""), // 44
    (b"link", b""), // 45
    (b"location", b""), // 46
    (b"max-forwards", b""), // 47
    (b"proxy-authenticate", b""), // 48
    (b"proxy-authorization", b""), // 49
    (b"range", b""), // 50
    (b"referer", b""), // 51
    (b"refresh", b""), // 52
    (b"retry-after", b""), // 53
    (b"server", b""), // 54
    (b"set-cookie", b""), // 55
    (b"strict-transport-security", b""), // 56
    (b"transfer-encoding", b""), // 57
    (b"user-agent", b""), // 58
    (b"vary", b""), // 59
    (b"via", b""), // 60
    (b"www-authenticate", b""), // 61
];

/// The static entry at `index` (1-based), if there is one.
pub(crate) fn static_entry(index: usize) -> Option<(&'static [u8], &'static [u8])> {
    STATIC.get(index.checked_sub(1)?).copied()
}

/// The static entries with this name: the first index and how many.
pub(crate) fn static_name(name: &[u8]) -> Option<(usize, usize)> {
    Some(match name {
        b":authority" => (1, 1),
        b":method" => (2, 2),
        b":path" => (4, 2),
        b":scheme" => (6, 2),
        b":status" => (8, 7),
        b"accept-charset" => (15, 1),
        b"accept-encoding" => (16, 1),
        b"accept-language" => (17, 1),
        b"accept-ranges" => (18, 1),
        b"accept" => (19, 1),
        b"access-control-allow-origin" => (20, 1),
        b"age" => (21, 1),
        b"allow" => (22, 1),
        b"authorization" => (23, 1),
        b"cache-control" => (24, 1),
        b"content-disposition" => (25, 1),
        b"content-encoding" => (26, 1),
        b"content-language" => (27, 1),
        b"content-length" => (28, 1),
        b"content-location" => (29, 1),
        b"content-range" => (30, 1),
        b"content-type" => (31, 1),
        b"cookie" => (32, 1),
        b"date" => (33, 1),
        b"etag" => (34, 1),
        b"expect" => (35, 1),
        b"expires" => (36, 1),
        b"from" => (37, 1),
        b"host" => (38, 1),
        b"if-match" => (39, 1),
        b"if-modified-since" => (40, 1),
        b"if-none-match" => (41, 1),
        b"if-range" => (42, 1),
        b"if-unmodified-since" => (43, 1),
        b"last-modified" => (44, 1),
        b"link" => (45, 1),
        b"location" => (46, 1),
        b"max-forwards" => (47, 1),
        b"proxy-authenticate" => (48, 1),
        b"proxy-authorization" => (49, 1),
        b"range" => (50, 1),
        b"referer" => (51, 1),
        b"refresh" => (52, 1),
        b"retry-after" => (53, 1),
        b"server" => (54, 1),
        b"set-cookie" => (55, 1),
        b"strict-transport-security" => (56, 1),
        b"transfer-encoding" => (57, 1),
        b"user-agent" => (58, 1),
        b"vary" => (59, 1),
        b"via" => (60, 1),
        b"www-authenticate" => (61, 1),
        _ => return None,
    })
}

/// Where one dynamic entry's bytes sit in the buffer.
#[derive(Clone, Copy, Debug)]
struct Entry {
    /// Offset of the name in `bytes`; the value follows it.
    at: usize,
    name: usize,
    value: usize,
}

impl Entry {
    fn size(self) -> usize {
        self.name + self.value + ENTRY_OVERHEAD
    }
}

/// The first allocation of a dynamic table's bytes (it doubles from there).
const MIN_TABLE_BYTES: usize = 512;
/// The first allocation of a dynamic table's entry slots.
const MIN_TABLE_SLOTS: usize = 8;

/// An HPACK dynamic table: FIFO eviction, sizes counted as RFC 7541 4.1
/// does.
#[derive(Debug)]
pub(crate) struct DynamicTable {
    /// The entries' bytes; the live ones are `bytes[start..]`, oldest first.
    bytes: Vec<u8>,
    start: usize,
    /// Newest first: index 0 is HPACK index 62.
    entries: VecDeque<Entry>,
    /// The sum of the entries' sizes.
    size: usize,
    /// The table's current maximum size (a size update changes it).
    max_size: usize,
}

impl DynamicTable {
    /// An empty table of at most `max_size` bytes. Its storage grows with
    /// its entries (see `make_room`), to at most twice `max_size` in bytes
    /// and a slot per possible entry: a connection whose peer never indexes
    /// a field (or that never answers) holds none, where the two tables of
    /// each idle HTTP/2 connection took 8.9 KiB of its 23 KiB of heap, and
    /// one small entry does not commit a large table's storage.
    pub(crate) fn new(max_size: usize) -> Self {
        Self { bytes: Vec::new(), start: 0, entries: VecDeque::new(), size: 0, max_size }
    }

    /// The sum of the entries' sizes.
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// The current maximum size.
    pub(crate) fn max_size(&self) -> usize {
        self.max_size
    }

    /// The number of entries.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The entry at dynamic position `i` (0 is the newest).
    pub(crate) fn get(&self, i: usize) -> Option<(&[u8], &[u8])> {
        let entry = *self.entries.get(i)?;
        let name = &self.bytes[entry.at..entry.at + entry.name];
        let value = &self.bytes[entry.at + entry.name..entry.at + entry.name + entry.value];
        Some((name, value))
    }

    /// A new maximum size: entries are evicted until the table fits
    /// (RFC 7541 4.3).
    pub(crate) fn set_max_size(&mut self, max_size: usize) {
        self.max_size = max_size;
        self.evict_to(max_size);
    }

    /// Inserts an entry as the newest, evicting the oldest to make room.
    /// An entry larger than the maximum size empties the table and is not
    /// inserted (RFC 7541 4.4: not an error).
    pub(crate) fn insert(&mut self, name: &[u8], value: &[u8]) {
        let entry_size = name.len() + value.len() + ENTRY_OVERHEAD;
        if entry_size > self.max_size {
            self.evict_to(0);
            return;
        }
        self.evict_to(self.max_size - entry_size);
        let needed = name.len() + value.len();
        if self.bytes.len() + needed > self.bytes.capacity() {
            self.make_room(needed);
        }
        if self.entries.len() == self.entries.capacity() {
            // Doubling, but never past a slot per possible entry.
            let slots = self.max_size / ENTRY_OVERHEAD;
            let more = self.entries.len().max(MIN_TABLE_SLOTS);
            let more = more.min(slots.saturating_sub(self.entries.len())).max(1);
            self.entries.reserve_exact(more);
        }
        let at = self.bytes.len();
        self.bytes.extend_from_slice(name);
        self.bytes.extend_from_slice(value);
        self.entries.push_front(Entry { at, name: name.len(), value: value.len() });
        self.size += entry_size;
    }

    /// Room at the end of `bytes` for `needed` more. The buffer doubles as
    /// inserts fill it, up to twice the maximum size (so storage follows
    /// what a peer inserts, not the full size at its first small entry);
    /// there, the live bytes (at most the maximum) are moved to the front
    /// over the evicted ones, at least the maximum of them: each move
    /// follows as many inserted bytes as it moves.
    fn make_room(&mut self, needed: usize) {
        let full = self.max_size.saturating_mul(2);
        if self.bytes.capacity() >= full || self.bytes.len() + needed > full {
            self.bytes.drain(..self.start);
            for entry in &mut self.entries {
                entry.at -= self.start;
            }
            self.start = 0;
        }
        let len = self.bytes.len();
        if len + needed > self.bytes.capacity() {
            let target = (self.bytes.capacity() * 2).max(MIN_TABLE_BYTES).min(full);
            self.bytes.reserve_exact(target.max(len + needed) - len);
        }
    }

    /// Evicts the oldest entries until the size is at most `target`.
    fn evict_to(&mut self, target: usize) {
        while self.size > target {
            let Some(oldest) = self.entries.pop_back() else { break };
            self.size -= oldest.size();
            self.start = oldest.at + oldest.name + oldest.value;
        }
        if self.entries.is_empty() {
            self.bytes.clear();
            self.start = 0;
        }
    }

    /// The newest entry equal to `(name, value)` and, failing that, the
    /// newest with `name`: `(dynamic position, whether the value matched)`.
    pub(crate) fn find(&self, name: &[u8], value: &[u8]) -> Option<(usize, bool)> {
        let mut by_name = None;
        for i in 0..self.entries.len() {
            let (n, v) = self.get(i)?;
            if n == name {
                if v == value {
                    return Some((i, true));
                }
                by_name.get_or_insert((i, false));
            }
        }
        by_name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_table_ends() {
        assert_eq!(static_entry(0), None);
        assert_eq!(static_entry(1), Some((&b":authority"[..], &b""[..])));
        assert_eq!(static_entry(8), Some((&b":status"[..], &b"200"[..])));
        assert_eq!(static_entry(61), Some((&b"www-authenticate"[..], &b""[..])));
        assert_eq!(static_entry(62), None);
        assert_eq!(static_entry(usize::MAX), None);
    }

    #[test]
    fn static_names_agree_with_the_table() {
        for (i, &(name, _)) in STATIC.iter().enumerate() {
            let (first, count) = static_name(name).unwrap();
            assert!((first..first + count).contains(&(i + 1)), "{}", i + 1);
            for j in first..first + count {
                assert_eq!(static_entry(j).unwrap().0, name);
            }
        }
        assert_eq!(static_name(b"x-unknown"), None);
    }

    #[test]
    fn fifo_eviction_counts_32_bytes_per_entry() {
        let mut table = DynamicTable::new(100);
        table.insert(b"a", b"1"); // 34
        table.insert(b"b", b"22"); // 35
        assert_eq!((table.len(), table.size()), (2, 69));
        assert_eq!(table.get(0), Some((&b"b"[..], &b"22"[..])));
        table.insert(b"c", b"333"); // 36: "a" goes
        assert_eq!((table.len(), table.size()), (2, 71));
        assert_eq!(table.get(1), Some((&b"b"[..], &b"22"[..])));
        assert_eq!(table.get(2), None);
    }

    #[test]
    fn an_entry_larger_than_the_table_empties_it() {
        let mut table = DynamicTable::new(64);
        table.insert(b"a", b"1");
        table.insert(&[b'x'; 20], &[b'y'; 13]); // 65 > 64
        assert_eq!((table.len(), table.size()), (0, 0));
        table.insert(&[b'x'; 20], &[b'y'; 12]); // exactly 64
        assert_eq!((table.len(), table.size()), (1, 64));
    }

    #[test]
    fn a_smaller_maximum_evicts_and_zero_empties() {
        let mut table = DynamicTable::new(4096);
        for i in 0..10u8 {
            table.insert(&[b'n', i], &[i; 10]); // 44 each
        }
        table.set_max_size(100);
        assert_eq!((table.len(), table.size()), (2, 88));
        assert_eq!(table.get(0).unwrap().1, &[9; 10]);
        table.set_max_size(0);
        assert_eq!((table.len(), table.size()), (0, 0));
        table.insert(b"a", b"");
        assert_eq!(table.len(), 0);
    }

    #[test]
    fn steady_inserts_compact_without_growing() {
        let mut table = DynamicTable::new(256);
        // No storage until the first entry, then room for a full table.
        assert_eq!((table.bytes.capacity(), table.entries.capacity()), (0, 0));
        table.insert(b"name", b"first");
        let capacity = table.bytes.capacity();
        assert!(capacity >= 2 * 256, "{capacity}");
        for i in 0..10_000u32 {
            let value = i.to_string();
            table.insert(b"name", value.as_bytes());
            assert_eq!(table.get(0).unwrap().1, value.as_bytes());
            assert!(table.size() <= 256);
        }
        assert_eq!(table.bytes.capacity(), capacity);
        let (n, v) = table.get(table.len() - 1).unwrap();
        assert_eq!(n, b"name");
        assert_eq!(v, (10_000 - table.len()).to_string().as_bytes());
    }

    #[test]
    fn find_prefers_the_full_match() {
        let mut table = DynamicTable::new(4096);
        table.insert(b"k", b"1");
        table.insert(b"k", b"2");
        table.insert(b"j", b"3");
        assert_eq!(table.find(b"k", b"1"), Some((2, true)));
        assert_eq!(table.find(b"k", b"9"), Some((1, false)));
        assert_eq!(table.find(b"z", b"1"), None);
    }
}
