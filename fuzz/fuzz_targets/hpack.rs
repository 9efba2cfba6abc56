//! Arbitrary header blocks through falconet-server's HPACK decoder, one
//! decoder across several blocks (so the dynamic table carries state), with
//! a small header-list limit; then every field list the decoder accepted is
//! encoded and decoded again. Checks: no panic, the limit holds, and
//! encode-then-decode is the identity with both tables in step.
#![no_main]

use falconet_server::h2::hpack::{Decoder, Encoder, Field};
use libfuzzer_sys::fuzz_target;

/// The header-list limit of the decoder under test.
const LIST_LIMIT: usize = 1024;

fuzz_target!(|data: &[u8]| {
    let mut decoder = Decoder::new(256);
    decoder.set_max_header_list_size(LIST_LIMIT);
    let mut encoder = Encoder::new();
    let mut again = Decoder::default();
    // The first byte picks the block length; the rest is split into blocks.
    let Some((&len, mut rest)) = data.split_first() else { return };
    let len = usize::from(len).max(1);
    while !rest.is_empty() {
        let (block, tail) = rest.split_at(len.min(rest.len()));
        rest = tail;
        let mut fields: Vec<(Vec<u8>, Vec<u8>, bool)> = Vec::new();
        let mut size = 0;
        let result = decoder.decode(block, |f| {
            size += f.size();
            fields.push((f.name.to_vec(), f.value.to_vec(), f.never_indexed));
        });
        assert!(size <= LIST_LIMIT);
        let mut encoded = Vec::new();
        encoder.encode(
            fields.iter().map(|(n, v, s)| Field { name: n, value: v, never_indexed: *s }),
            &mut encoded,
        );
        let mut decoded = Vec::new();
        again
            .decode(&encoded, |f| decoded.push((f.name.to_vec(), f.value.to_vec(), f.never_indexed)))
            .expect("our own block decodes");
        assert_eq!(decoded, fields);
        assert_eq!(again.table_size(), encoder.table_size());
        if result.is_err_and(|e| e.is_connection_error()) {
            return;
        }
    }
});
