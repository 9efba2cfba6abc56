//! RFC 7541 Appendix C, the limits, and encode-then-decode identity.

use proptest::prelude::*;

use super::huffman::tests::unhex;
use super::*;

type Owned = Vec<(Vec<u8>, Vec<u8>)>;

fn decode(decoder: &mut Decoder, hex: &str) -> Result<Owned, DecodeError> {
    let mut fields = Vec::new();
    decoder.decode(&unhex(hex), |f| fields.push((f.name.to_vec(), f.value.to_vec())))?;
    Ok(fields)
}

fn owned(fields: &[(&str, &str)]) -> Owned {
    fields.iter().map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec())).collect()
}

fn encode(encoder: &mut Encoder, fields: &[(&str, &str)]) -> Vec<u8> {
    let mut block = Vec::new();
    encoder.encode(fields.iter().map(|(n, v)| Field::new(n.as_bytes(), v.as_bytes())), &mut block);
    block
}

/// C.2.1 to C.2.4: one representation each.
#[test]
fn c2_field_representations() {
    let mut decoder = Decoder::default();
    let fields =
        decode(&mut decoder, "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572");
    assert_eq!(fields.unwrap(), owned(&[("custom-key", "custom-header")]));
    assert_eq!(decoder.table_size(), 55);

    let mut decoder = Decoder::default();
    let fields = decode(&mut decoder, "040c 2f73 616d 706c 652f 7061 7468").unwrap();
    assert_eq!(fields, owned(&[(":path", "/sample/path")]));
    assert_eq!(decoder.table_size(), 0);

    let mut decoder = Decoder::default();
    let mut sensitive = None;
    decoder
        .decode(&unhex("1008 7061 7373 776f 7264 0673 6563 7265 74"), |f| {
            sensitive = Some((f.name.to_vec(), f.value.to_vec(), f.never_indexed));
        })
        .unwrap();
    assert_eq!(sensitive, Some((b"password".to_vec(), b"secret".to_vec(), true)));
    assert_eq!(decoder.table_size(), 0);

    let mut decoder = Decoder::default();
    assert_eq!(decode(&mut decoder, "82").unwrap(), owned(&[(":method", "GET")]));
    assert_eq!(decoder.table_size(), 0);
}

const REQUESTS: [&[(&str, &str)]; 3] = [
    &[(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com")],
    &[
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/"),
        (":authority", "www.example.com"),
        ("cache-control", "no-cache"),
    ],
    &[
        (":method", "GET"),
        (":scheme", "https"),
        (":path", "/index.html"),
        (":authority", "www.example.com"),
        ("custom-key", "custom-value"),
    ],
];
const REQUEST_TABLE_SIZES: [usize; 3] = [57, 110, 164];

const C3_PLAIN: [&str; 3] = [
    "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
    "8286 84be 5808 6e6f 2d63 6163 6865",
    "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
];
const C4_HUFFMAN: [&str; 3] = [
    "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
    "8286 84be 5886 a8eb 1064 9cbf",
    "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
];

/// C.3 and C.4: three requests on one connection, the table growing.
#[test]
fn c3_c4_requests_decode() {
    for blocks in [C3_PLAIN, C4_HUFFMAN] {
        let mut decoder = Decoder::default();
        for ((hex, fields), size) in blocks.iter().zip(REQUESTS).zip(REQUEST_TABLE_SIZES) {
            assert_eq!(decode(&mut decoder, hex).unwrap(), owned(fields));
            assert_eq!(decoder.table_size(), size);
        }
    }
}

/// C.4: our encoder makes the RFC's Huffman blocks.
#[test]
fn c4_requests_encode() {
    let mut encoder = Encoder::new();
    for ((hex, fields), size) in C4_HUFFMAN.iter().zip(REQUESTS).zip(REQUEST_TABLE_SIZES) {
        assert_eq!(encode(&mut encoder, fields), unhex(hex));
        assert_eq!(encoder.table_size(), size);
    }
}

const DATE_1: &str = "Mon, 21 Oct 2013 20:13:21 GMT";
const COOKIE: &str = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1";
const RESPONSES: [&[(&str, &str)]; 3] = [
    &[
        (":status", "302"),
        ("cache-control", "private"),
        ("date", DATE_1),
        ("location", "https://www.example.com"),
    ],
    &[
        (":status", "307"),
        ("cache-control", "private"),
        ("date", DATE_1),
        ("location", "https://www.example.com"),
    ],
    &[
        (":status", "200"),
        ("cache-control", "private"),
        ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
        ("location", "https://www.example.com"),
        ("content-encoding", "gzip"),
        ("set-cookie", COOKIE),
    ],
];
const RESPONSE_TABLE_SIZES: [usize; 3] = [222, 222, 215];

const C5_PLAIN: [&str; 3] = [
    "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a \
     3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
    "4803 3330 37c1 c0bf",
    "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 \
     677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 \
     553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31",
];
const C6_HUFFMAN: [&str; 3] = [
    "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e \
     919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
    "4883 640e ffc1 c0bf",
    "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 \
     821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed \
     4ee5 b106 3d50 07",
];

/// C.5 and C.6: three responses in a 256-byte table, with evictions.
#[test]
fn c5_c6_responses_decode() {
    for blocks in [C5_PLAIN, C6_HUFFMAN] {
        let mut decoder = Decoder::with_table_size(256);
        for ((hex, fields), size) in blocks.iter().zip(RESPONSES).zip(RESPONSE_TABLE_SIZES) {
            assert_eq!(decode(&mut decoder, hex).unwrap(), owned(fields));
            assert_eq!(decoder.table_size(), size);
        }
        let (name, value) = decoder.table.get(0).unwrap();
        assert_eq!((name, value), (&b"set-cookie"[..], COOKIE.as_bytes()));
        assert_eq!(decoder.table.len(), 3);
    }
}

/// C.6: our encoder makes the RFC's Huffman blocks, evictions included.
#[test]
fn c6_responses_encode() {
    let mut encoder = Encoder::with_table_size(256);
    for ((hex, fields), size) in C6_HUFFMAN.iter().zip(RESPONSES).zip(RESPONSE_TABLE_SIZES) {
        assert_eq!(encode(&mut encoder, fields), unhex(hex));
        assert_eq!(encoder.table_size(), size);
    }
}

/// RFC 7541 4.2, 6.3: updates at the start of a block, up to the limit.
#[test]
fn table_size_updates() {
    let mut decoder = Decoder::default();
    decode(&mut decoder, "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572")
        .unwrap();
    assert_eq!(decoder.table_size(), 55);
    // To 0 (empties the table), then back to 4,096, in one block.
    assert_eq!(decode(&mut decoder, "20 3fe11f 82").unwrap(), owned(&[(":method", "GET")]));
    assert_eq!(decoder.table_size(), 0);
    assert_eq!(decode(&mut decoder, "be"), Err(DecodeError::InvalidIndex { index: 62 }));

    let mut decoder = Decoder::default();
    assert_eq!(
        decode(&mut decoder, "3fe21f"),
        Err(DecodeError::TableSizeTooLarge { size: 4097, max: 4096 })
    );
    let mut decoder = Decoder::default();
    assert_eq!(decode(&mut decoder, "82 20"), Err(DecodeError::TableSizeUpdateTooLate));
    let mut decoder = Decoder::new(0);
    assert_eq!(decode(&mut decoder, "20 82").unwrap(), owned(&[(":method", "GET")]));
}

/// The encoder announces a change: the smallest size, then the final.
#[test]
fn encoder_announces_table_size_changes() {
    let mut encoder = Encoder::new();
    let mut decoder = Decoder::default();
    let block = encode(&mut encoder, &[("custom-key", "custom-header")]);
    decoder.decode(&block, |_| {}).unwrap();
    encoder.set_peer_table_size(0);
    encoder.set_peer_table_size(100);
    let block = encode(&mut encoder, &[(":method", "GET")]);
    assert_eq!(block, unhex("20 3f45 82"));
    decoder.decode(&block, |_| {}).unwrap();
    assert_eq!((encoder.table_size(), decoder.table_size()), (0, 0));
    // A peer's size above our cap is clamped to it.
    encoder.set_peer_table_size(u32::MAX);
    assert_eq!(encode(&mut encoder, &[(":method", "GET")]), unhex("3fe11f 82"));
    // No change, no update.
    encoder.set_peer_table_size(65_536);
    assert_eq!(encode(&mut encoder, &[(":method", "GET")]), unhex("82"));
}

/// Every malformed input is a typed error, never a panic.
#[test]
fn malformed_blocks() {
    let cases: [(&str, DecodeError); 10] = [
        ("80", DecodeError::InvalidIndex { index: 0 }),
        ("be", DecodeError::InvalidIndex { index: 62 }),
        ("7f00 0161", DecodeError::InvalidIndex { index: 63 }),
        ("0005 6162", DecodeError::Truncated),
        ("00", DecodeError::Truncated),
        ("0001", DecodeError::Truncated),
        ("ff", DecodeError::Truncated),
        ("ff80 8080 8080 00", DecodeError::IntegerOverflow),
        ("ff ffff ffff 0f", DecodeError::IntegerOverflow),
        ("0081 ff 0161", DecodeError::HuffmanPadding),
    ];
    for (hex, error) in cases {
        let mut decoder = Decoder::default();
        assert_eq!(decode(&mut decoder, hex), Err(error), "{hex}");
        assert!(error.is_connection_error());
    }
    // The largest integer that fits: 2^32 - 1 as an index, out of range.
    let mut decoder = Decoder::default();
    assert_eq!(
        decode(&mut decoder, "ff 80ff ffff 0f"),
        Err(DecodeError::InvalidIndex { index: u32::MAX })
    );
}

/// An HPACK bomb: one 4 KiB entry, then many one-byte references to it.
/// The list limit stops the output; the block is still decoded to its end.
#[test]
fn header_list_limit_stops_a_bomb_and_keeps_the_table_in_step() {
    let mut encoder = Encoder::new();
    let big = "x".repeat(1500);
    let mut block = Vec::new();
    encoder.encode([Field::new(b"bomb", big.as_bytes())], &mut block);
    block.extend(std::iter::repeat_n(0xbe, 10_000)); // index 62, 10,000 times
    encoder.encode([Field::new(b"after", b"1")], &mut block); // inserted at the end
    let mut decoder = Decoder::default();
    decoder.set_max_header_list_size(16 * 1024);
    let mut delivered = 0;
    let mut bytes = 0;
    let error = decoder.decode(&block, |f| {
        delivered += 1;
        bytes += f.size();
    });
    assert_eq!(error, Err(DecodeError::HeaderListTooLarge { max: 16 * 1024 }));
    assert!(!error.unwrap_err().is_connection_error());
    assert!(bytes <= 16 * 1024 && delivered == 10, "{delivered} fields, {bytes} bytes");
    // The table followed the whole block: the next block decodes.
    assert_eq!(decoder.table_size(), encoder.table_size());
    let mut next = Vec::new();
    encoder.encode([Field::new(b"after", b"1")], &mut next);
    assert_eq!(next, [0xbe]);
    assert_eq!(decode_bytes(&mut decoder, &next).unwrap(), owned(&[("after", "1")]));
}

fn decode_bytes(decoder: &mut Decoder, block: &[u8]) -> Result<Owned, DecodeError> {
    let mut fields = Vec::new();
    decoder.decode(block, |f| fields.push((f.name.to_vec(), f.value.to_vec())))?;
    Ok(fields)
}

/// A header-list limit of 0: the first field is over it, nothing reaches
/// the sink, and the table still follows the block.
#[test]
fn a_zero_header_list_limit() {
    let mut decoder = Decoder::default();
    decoder.set_max_header_list_size(0);
    let mut seen = 0;
    let block = unhex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572");
    let result = decoder.decode(&block, |_| seen += 1);
    assert_eq!(result, Err(DecodeError::HeaderListTooLarge { max: 0 }));
    assert_eq!((seen, decoder.table_size()), (0, 55));
    assert_eq!(decode(&mut decoder, ""), Ok(Vec::new()));
}

#[test]
fn field_count_limit() {
    let mut decoder = Decoder::default();
    decoder.set_max_fields(2);
    assert_eq!(decode(&mut decoder, "82 84").unwrap().len(), 2);
    assert_eq!(decode(&mut decoder, "82 84 86"), Err(DecodeError::TooManyFields { max: 2 }));
    decoder.set_max_fields(0);
    assert_eq!(decode(&mut decoder, ""), Ok(Vec::new()));
    // The header-list limit at its exact edge: :method GET is 42 bytes.
    let mut decoder = Decoder::default();
    decoder.set_max_header_list_size(84);
    assert_eq!(decode(&mut decoder, "82 82").unwrap().len(), 2);
    assert_eq!(decode(&mut decoder, "82 82 82"), Err(DecodeError::HeaderListTooLarge { max: 84 }));
}

/// RFC 9113 8.2.3: a client may split `cookie` into crumbs, which the
/// server joins into one field, as HTTP/1.1 carries it: the crumbs count
/// once against the field limit (and each against the list size).
#[test]
fn cookie_crumbs_count_as_one_field() {
    let mut block = unhex("82 84"); // :method GET, :path /
    for i in 0..50u8 {
        // A literal without indexing, new name.
        block.extend_from_slice(&[0x00, 6]);
        block.extend_from_slice(b"cookie");
        block.extend_from_slice(&[3, b'a' + i % 26, b'=', b'1']);
    }
    let mut decoder = Decoder::default();
    decoder.set_max_fields(3);
    let mut seen = 0;
    assert_eq!(decoder.decode(&block, |_| seen += 1), Ok(()));
    assert_eq!(seen, 52);
    // A field after them is the fourth.
    block.extend_from_slice(&unhex("86"));
    seen = 0;
    assert_eq!(decoder.decode(&block, |_| seen += 1), Err(DecodeError::TooManyFields { max: 3 }));
    assert_eq!(seen, 52);
    // Their bytes still count, each 6 + 3 + 32 (`:method GET` is 42,
    // `:path /` 38): the list at its exact size, then a byte under it.
    let crumbs = &block[..block.len() - 1];
    let size = 42 + 38 + 50 * 41;
    let mut decoder = Decoder::default();
    decoder.set_max_header_list_size(size);
    assert_eq!(decoder.decode(crumbs, |_| {}), Ok(()));
    decoder.set_max_header_list_size(size - 1);
    let result = decoder.decode(crumbs, |_| {});
    assert_eq!(result, Err(DecodeError::HeaderListTooLarge { max: size - 1 }));
}

/// A name taken from a dynamic entry that the same field's insertion
/// evicts: the name must survive its entry.
#[test]
fn literal_naming_an_entry_it_evicts() {
    let mut decoder = Decoder::with_table_size(64);
    decode(&mut decoder, "400a 6375 7374 6f6d 2d6b 6579 0161").unwrap(); // 43 bytes
    // Literal with indexing, name index 62, value of 10 bytes: 52 > 64 - 43.
    let fields = decode(&mut decoder, "7e 0a 3031 3233 3435 3637 3839").unwrap();
    assert_eq!(fields, owned(&[("custom-key", "0123456789")]));
    assert_eq!(decoder.table_size(), 52);
}

/// Sensitive fields go out never indexed and are not inserted.
#[test]
fn sensitive_fields_are_never_indexed() {
    let mut encoder = Encoder::new();
    let mut block = Vec::new();
    encoder.encode([Field::sensitive(b"authorization", b"secret")], &mut block);
    assert_eq!(block[0] & 0xf0, 0x10);
    assert_eq!(encoder.table_size(), 0);
    let mut decoder = Decoder::default();
    let mut seen = None;
    decoder.decode(&block, |f| seen = Some(f.never_indexed)).unwrap();
    assert_eq!(seen, Some(true));
}

fn field_strategy() -> impl Strategy<Value = (Vec<u8>, Vec<u8>, bool)> {
    let names = prop_oneof![
        Just(b":status".to_vec()),
        Just(b"content-type".to_vec()),
        Just(b"date".to_vec()),
        Just(b"x-custom".to_vec()),
        proptest::collection::vec(any::<u8>(), 0..20),
    ];
    let values = prop_oneof![
        Just(b"200".to_vec()),
        Just(b"text/plain".to_vec()),
        proptest::collection::vec(any::<u8>(), 0..40),
        proptest::collection::vec(any::<u8>(), 0..3000),
    ];
    (names, values, proptest::bool::weighted(0.1))
}

proptest! {
    /// Encode then decode is the identity, block after block, whatever the
    /// peer's table size and its changes between blocks.
    #[test]
    fn encode_then_decode_is_the_identity(
        blocks in proptest::collection::vec(
            (proptest::option::of(0u32..5000), proptest::collection::vec(field_strategy(), 0..12)),
            1..8,
        )
    ) {
        let mut encoder = Encoder::new();
        let mut decoder = Decoder::default();
        decoder.set_max_header_list_size(usize::MAX);
        decoder.set_max_fields(usize::MAX);
        for (table_size, fields) in blocks {
            if let Some(size) = table_size {
                encoder.set_peer_table_size(size);
            }
            let mut block = Vec::new();
            encoder.encode(
                fields.iter().map(|(n, v, s)| Field { name: n, value: v, never_indexed: *s }),
                &mut block,
            );
            let mut decoded = Vec::new();
            decoder
                .decode(&block, |f| decoded.push((f.name.to_vec(), f.value.to_vec(), f.never_indexed)))
                .unwrap();
            prop_assert_eq!(&decoded, &fields);
            prop_assert_eq!(decoder.table_size(), encoder.table_size());
        }
    }

    /// Arbitrary bytes never panic the decoder, and the limits hold.
    #[test]
    fn random_blocks_never_panic(
        blocks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 1..4)
    ) {
        let mut decoder = Decoder::default();
        decoder.set_max_header_list_size(256);
        for block in blocks {
            let mut size = 0;
            let result = decoder.decode(&block, |f| size += f.size());
            prop_assert!(size <= 256);
            if result.is_err_and(|e| e.is_connection_error()) {
                break;
            }
        }
    }
}
