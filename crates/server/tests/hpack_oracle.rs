//! A second HPACK implementation as the oracle: header blocks made by
//! Python's `hpack` 4.2.0 encoder (with and without Huffman coding, table
//! size changes, evictions, never-indexed fields), decoded by ours, block
//! after block on one decoder per connection. `scripts/hpack_oracle.py`
//! writes the data file.

use falconet_server::h2::hpack::Decoder;

const DATA: &str = include_str!("data/hpack-python.txt");

fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect()
}

#[test]
fn python_hpack_blocks_decode_to_their_fields() {
    let mut decoder = Decoder::default();
    let (mut blocks, mut fields_seen, mut connections) = (0, 0, 0);
    for line in DATA.lines() {
        if line.is_empty() {
            decoder = Decoder::default();
            connections += 1;
            continue;
        }
        if line.starts_with("table ") {
            continue; // the next block carries the size update itself
        }
        let (wire, fields) = line.split_once(' ').unwrap_or((line, ""));
        let expected: Vec<(Vec<u8>, Vec<u8>)> = fields
            .split(',')
            .filter(|f| !f.is_empty())
            .map(|f| {
                let (name, value) = f.split_once('=').unwrap();
                (unhex(name), unhex(value))
            })
            .collect();
        let mut decoded = Vec::new();
        decoder
            .decode(&unhex(wire), |f| decoded.push((f.name.to_vec(), f.value.to_vec())))
            .unwrap_or_else(|e| panic!("block {blocks}: {e}"));
        assert_eq!(decoded, expected, "block {blocks}");
        blocks += 1;
        fields_seen += expected.len();
    }
    assert!(connections >= 40 && blocks >= 200 && fields_seen >= 1000, "{blocks} {fields_seen}");
}
