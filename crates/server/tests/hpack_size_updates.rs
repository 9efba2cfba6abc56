//! HPACK dynamic tables reserve their storage at their first insert (an
//! idle HTTP/2 connection holds none): the decoder against a reference
//! model over hand-built blocks with random size updates (before the first
//! insert, to 0, back up, entries larger than the table),
//! encode-then-decode across random peer table sizes, and allocation
//! counts once a table's size was raised after its first insert.

mod common;

use std::collections::VecDeque;

use common::h2raw::{integer, string};

use falconet_server::h2::hpack::{DecodeError, Decoder, Encoder, Field};

#[global_allocator]
static GLOBAL: falconet_testkit::Counting = falconet_testkit::Counting;

/// xorshift64*: deterministic, seedable.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// RFC 7541 4: the reference table.
struct Model {
    entries: VecDeque<(Vec<u8>, Vec<u8>)>,
    size: usize,
    max: usize,
}

impl Model {
    fn evict_to(&mut self, target: usize) {
        while self.size > target {
            let (n, v) = self.entries.pop_back().unwrap();
            self.size -= n.len() + v.len() + 32;
        }
    }
    fn set_max(&mut self, max: usize) {
        self.max = max;
        self.evict_to(max);
    }
    fn insert(&mut self, n: Vec<u8>, v: Vec<u8>) {
        let size = n.len() + v.len() + 32;
        if size > self.max {
            self.evict_to(0);
            return;
        }
        self.evict_to(self.max - size);
        self.entries.push_front((n, v));
        self.size += size;
    }
}

/// A size for an update: mostly the edges.
fn size(rng: &mut Rng) -> usize {
    match rng.below(8) {
        0 => 0,
        1 => 4096,
        2 => 32 + rng.below(8) as usize,
        3 => rng.below(64) as usize,
        4 => rng.below(300) as usize,
        _ => rng.below(4097) as usize,
    }
}

fn value_len(rng: &mut Rng) -> usize {
    match rng.below(10) {
        0 => rng.below(5000) as usize, // often larger than the table
        1 => 0,
        _ => rng.below(120) as usize,
    }
}

/// The decoder against the model: random blocks of size updates, inserts
/// (new names and names taken from dynamic entries that the insert itself
/// may evict), indexed references, and references just past the end.
#[test]
fn decoder_matches_the_model_across_random_size_updates() {
    for seed in 1..=3000u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let mut decoder = Decoder::new(4096);
        decoder.set_max_header_list_size(usize::MAX);
        decoder.set_max_fields(usize::MAX);
        let mut model = Model { entries: VecDeque::new(), size: 0, max: 4096 };
        for block_no in 0..40 {
            let mut block = Vec::new();
            let mut expected: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            for _ in 0..rng.below(3) {
                let s = size(&mut rng);
                integer(&mut block, s, 5, 0x20);
                model.set_max(s);
            }
            let mut past_end = false;
            for _ in 0..rng.below(8) {
                match rng.below(6) {
                    0 | 1 => {
                        // Literal with incremental indexing, new name.
                        let n = {
                            let l = rng.below(20) as usize;
                            rng.bytes(l)
                        };
                        let v = {
                            let l = value_len(&mut rng);
                            rng.bytes(l)
                        };
                        block.push(0x40);
                        string(&mut block, &n);
                        string(&mut block, &v);
                        expected.push((n.clone(), v.clone()));
                        model.insert(n, v);
                    }
                    2 if !model.entries.is_empty() => {
                        // Literal with incremental indexing, name from the
                        // oldest dynamic entry (evicted by this insert when
                        // the table is full).
                        let i = model.entries.len() - 1;
                        let n = model.entries[i].0.clone();
                        let v = {
                            let l = value_len(&mut rng);
                            rng.bytes(l)
                        };
                        integer(&mut block, 62 + i, 6, 0x40);
                        string(&mut block, &v);
                        expected.push((n.clone(), v.clone()));
                        model.insert(n, v);
                    }
                    3 | 4 if !model.entries.is_empty() => {
                        let i = rng.below(model.entries.len() as u64) as usize;
                        integer(&mut block, 62 + i, 7, 0x80);
                        expected.push(model.entries[i].clone());
                    }
                    5 if rng.below(4) == 0 => {
                        // Just past the end: must be an error.
                        integer(&mut block, 62 + model.entries.len(), 7, 0x80);
                        past_end = true;
                        break;
                    }
                    _ => {}
                }
            }
            let mut got = Vec::new();
            let result = decoder.decode(&block, |f| got.push((f.name.to_vec(), f.value.to_vec())));
            if past_end {
                assert!(
                    matches!(result, Err(DecodeError::InvalidIndex { .. })),
                    "seed {seed} block {block_no}: {result:?}"
                );
                break; // a connection error: the decoder is done
            }
            assert_eq!(result, Ok(()), "seed {seed} block {block_no}");
            assert!(got == expected, "seed {seed} block {block_no}: fields differ");
            assert_eq!(decoder.table_size(), model.size, "seed {seed} block {block_no}");
        }
    }
}

/// Encode then decode, with the peer's SETTINGS_HEADER_TABLE_SIZE changed
/// at random, including before the encoder's first block and first insert.
#[test]
fn encode_then_decode_across_random_peer_table_sizes() {
    for seed in 1..=2000u64 {
        let mut rng = Rng(seed.wrapping_mul(0xd1b5_4a32_d192_ed03) | 1);
        let mut encoder = Encoder::new();
        let mut decoder = Decoder::new(4096);
        decoder.set_max_header_list_size(usize::MAX);
        decoder.set_max_fields(usize::MAX);
        let names: [&[u8]; 5] = [b"x-a", b"x-b", b"content-type", b"set-cookie", b"x-long-name"];
        for block_no in 0..60 {
            for _ in 0..rng.below(3) {
                if rng.below(3) == 0 {
                    encoder.set_peer_table_size(size(&mut rng) as u32);
                }
            }
            let fields: Vec<(Vec<u8>, Vec<u8>, bool)> = (0..rng.below(10))
                .map(|_| {
                    let n = if rng.below(4) == 0 {
                        {
                            let l = rng.below(12) as usize;
                            rng.bytes(l)
                        }
                    } else {
                        names[rng.below(5) as usize].to_vec()
                    };
                    // A small value set, so that fields repeat (indexed).
                    let v = if rng.below(3) == 0 {
                        {
                            let l = value_len(&mut rng);
                            rng.bytes(l)
                        }
                    } else {
                        format!("v{}", rng.below(6)).into_bytes()
                    };
                    (n, v, rng.below(20) == 0)
                })
                .collect();
            let mut block = Vec::new();
            encoder.encode(
                fields.iter().map(|(n, v, s)| Field { name: n, value: v, never_indexed: *s }),
                &mut block,
            );
            let mut got = Vec::new();
            decoder
                .decode(&block, |f| got.push((f.name.to_vec(), f.value.to_vec(), f.never_indexed)))
                .unwrap_or_else(|e| panic!("seed {seed} block {block_no}: {e}"));
            assert!(got == fields, "seed {seed} block {block_no}");
            assert_eq!(decoder.table_size(), encoder.table_size(), "seed {seed} block {block_no}");
        }
    }
}

/// A peer whose encoder inserts its first entry while its table is 64
/// bytes (the lazy reservation: 128 bytes, 2 entries), then raises the
/// table to 4,096: the storage grows with the entries, then a steady
/// stream of inserts of the same kinds allocates nothing.
#[test]
fn decoder_raised_after_the_first_insert_reaches_a_steady_state() {
    let _serial = falconet_testkit::serial();
    let mut decoder = Decoder::new(4096);
    let mut block = Vec::new();
    integer(&mut block, 64, 5, 0x20);
    block.push(0x40);
    string(&mut block, b"a");
    string(&mut block, b"b");
    decoder.decode(&block, |_| {}).unwrap();
    let mut block = Vec::new();
    integer(&mut block, 4096, 5, 0x20);
    decoder.decode(&block, |_| {}).unwrap();
    let mut rng = Rng(7);
    // Blocks prepared up front (the test's own allocations not counted).
    let blocks: Vec<Vec<u8>> = (0..40_000)
        .map(|_| {
            let mut block = Vec::new();
            let n = {
                let l = 1 + rng.below(10) as usize;
                rng.bytes(l)
            };
            let v = {
                let l = rng.below(100) as usize;
                rng.bytes(l)
            };
            block.push(0x40);
            string(&mut block, &n);
            string(&mut block, &v);
            block
        })
        .collect();
    let (warm, measured) = blocks.split_at(20_000);
    let mut sum = 0usize;
    let warm_allocations = falconet_testkit::count_allocations(|| {
        for block in warm {
            decoder.decode(block, |f| sum += f.size()).unwrap();
        }
    });
    let allocations = falconet_testkit::count_allocations(|| {
        for block in measured {
            decoder.decode(block, |f| sum += f.size()).unwrap();
        }
    });
    eprintln!("decoder: {warm_allocations} allocations warming up, {allocations} after");
    assert!(sum > 0);
    assert_eq!(allocations, 0, "a steady state of inserts allocated");
}

/// The same for the encoder: the peer's first SETTINGS says 80, a response
/// is encoded (first insert, the table at 80 bytes), then the peer says 4,096.
#[test]
fn encoder_raised_after_the_first_insert_reaches_a_steady_state() {
    let _serial = falconet_testkit::serial();
    let mut encoder = Encoder::new();
    encoder.set_peer_table_size(80); // indexes fields up to 40 bytes
    let mut dst = Vec::with_capacity(1 << 16);
    encoder.encode([Field::new(b"x-a", b"b")], &mut dst);
    assert!(encoder.table_size() > 0);
    encoder.set_peer_table_size(4096);
    let mut rng = Rng(11);
    let fields: Vec<(Vec<u8>, Vec<u8>)> = (0..40_000)
        .map(|_| {
            (format!("x-{}", rng.below(1000)).into_bytes(), {
                let l = rng.below(100) as usize;
                rng.bytes(l)
            })
        })
        .collect();
    let (warm, measured) = fields.split_at(20_000);
    let warm_allocations = falconet_testkit::count_allocations(|| {
        for (n, v) in warm {
            dst.clear();
            encoder.encode([Field::new(n, v)], &mut dst);
        }
    });
    let allocations = falconet_testkit::count_allocations(|| {
        for (n, v) in measured {
            dst.clear();
            encoder.encode([Field::new(n, v)], &mut dst);
        }
    });
    eprintln!("encoder: {warm_allocations} allocations warming up, {allocations} after");
    assert_eq!(allocations, 0, "a steady state of inserts allocated");
}

/// A table that never indexes anything stays without storage: size 0,
/// then updates, then entries larger than the table, allocate nothing.
#[test]
fn size_updates_and_oversized_entries_before_any_insert_allocate_nothing() {
    let _serial = falconet_testkit::serial();
    let mut decoder = Decoder::new(4096);
    let mut blocks = Vec::new();
    for s in [0usize, 4096, 10, 0, 40] {
        let mut block = Vec::new();
        integer(&mut block, s, 5, 0x20);
        blocks.push(block);
    }
    // With the table at 40: an entry of 41 bytes empties it, not inserted.
    let mut big = Vec::new();
    big.push(0x40);
    string(&mut big, b"n");
    string(&mut big, b"01234567");
    let allocations = falconet_testkit::count_allocations(|| {
        for block in &blocks {
            decoder.decode(block, |_| {}).unwrap();
        }
        decoder.decode(&big, |_| {}).unwrap();
    });
    assert_eq!(decoder.table_size(), 0);
    // The decoder's scratch for names/values may not allocate either: the
    // literal is not Huffman-coded and the name is new (borrowed).
    assert_eq!(allocations, 0);
}

/// Over a real connection: the client's first SETTINGS makes the server's
/// encoder table 64 bytes (nothing fits at half of it: no first insert),
/// then 0, then 4,096; answers with varying fields all decode, in step.
#[test]
fn server_encoder_follows_the_peers_table_size_changes() {
    use common::h2raw::{Event, Raw, req};
    use falconet_server::h2::frame::{self, kind};
    use std::time::Duration;

    let server = common::serve(falconet_server::Options::new().workers(1), common::Echo);
    let mut raw = Raw::handshake(server.addr, &[(frame::setting::HEADER_TABLE_SIZE, 64)]);
    let mut id = 1u32;
    let check = |raw: &mut Raw, id: &mut u32| {
        for _ in 0..30 {
            let path = format!("/{}", "p".repeat((*id as usize * 7) % 31));
            raw.headers(*id, &req("GET", &path), true);
            let mut body = Vec::new();
            loop {
                match raw.next(Duration::from_secs(5)) {
                    Event::Frame(f) if f.kind == kind::HEADERS => {
                        raw.decoder.decode(&f.payload, |_| {}).expect("the answer decodes");
                        if f.end_stream() && f.stream == *id {
                            break;
                        }
                    }
                    Event::Frame(f) if f.kind == kind::DATA && f.stream == *id => {
                        body.extend_from_slice(&f.payload);
                        if f.end_stream() {
                            break;
                        }
                    }
                    Event::Frame(f) if f.kind == kind::GOAWAY || f.kind == kind::RST_STREAM => {
                        panic!("{f:?}")
                    }
                    Event::Frame(_) => {}
                    other => panic!("{other:?}"),
                }
            }
            assert_eq!(body, path.as_bytes());
            *id += 2;
        }
    };
    check(&mut raw, &mut id);
    for size in [0u32, 4096, 100, 4096] {
        let mut out = Vec::new();
        frame::encode_settings(&mut out, &[(frame::setting::HEADER_TABLE_SIZE, size)]).unwrap();
        raw.send(&out);
        check(&mut raw, &mut id);
    }
}

/// One literal with incremental indexing: name `n`, value `v`.
fn indexed_literal(n: &[u8], v: &[u8]) -> Vec<u8> {
    let mut block = vec![0x40];
    string(&mut block, n);
    string(&mut block, v);
    block
}

/// A size update to `size` alone, or in front of `rest`.
fn update(size: usize, rest: &[u8]) -> Vec<u8> {
    let mut block = Vec::new();
    integer(&mut block, size, 5, 0x20);
    block.extend_from_slice(rest);
    block
}

/// RFC 9113 4.3.1 and RFC 7541 6.3 for a decoder advertising less than
/// the default 4,096: until the peer acknowledges it, its encoder may use
/// 4,096 without an update and may announce up to 4,096; once it has, the
/// next block must begin with an update to at most the advertised size,
/// and no update may exceed it (a reviewer found the limit applied before
/// the acknowledgement and never after).
#[test]
fn a_limit_below_the_default_binds_from_its_acknowledgement() {
    for advertised in [0usize, 1, 100, 1024, 4095] {
        let mut decoder = Decoder::new(advertised);
        // Before the acknowledgement: the default table, no update needed.
        for i in 0..80u8 {
            decoder.decode(&indexed_literal(b"x-a", &[i; 30]), |_| {}).unwrap();
        }
        assert!(decoder.table_size() > 4000, "{advertised}: {}", decoder.table_size());
        assert_eq!(decoder.decode(&update(4096, &[]), |_| {}), Ok(()), "{advertised}");
        assert_eq!(
            decoder.decode(&update(4097, &[]), |_| {}),
            Err(DecodeError::TableSizeTooLarge { size: 4097, max: 4096 }),
            "{advertised}"
        );

        // After it, a block without the update fails, and is a
        // connection error (COMPRESSION_ERROR).
        let mut decoder = Decoder::new(advertised);
        decoder.decode(&indexed_literal(b"x-a", b"v"), |_| {}).unwrap();
        decoder.settings_acknowledged();
        let missing = decoder.decode(&indexed_literal(b"x-b", b"v"), |_| {}).unwrap_err();
        assert_eq!(missing, DecodeError::TableSizeUpdateMissing { max: advertised });
        assert!(missing.is_connection_error());
        assert!(missing.to_string().contains("no dynamic table size update"), "{missing}");

        // An update above the advertised size is refused, even first.
        let mut decoder = Decoder::new(advertised);
        decoder.settings_acknowledged();
        assert_eq!(
            decoder.decode(&update(advertised + 1, &[]), |_| {}),
            Err(DecodeError::TableSizeTooLarge { size: advertised as u32 + 1, max: advertised })
        );

        // A conforming update (alone, or followed by fields, or after a
        // lower one) settles it for every later block.
        for lead in [update(advertised, &[]), update(0, &update(advertised, &[]))] {
            let mut decoder = Decoder::new(advertised);
            decoder.settings_acknowledged();
            decoder.decode(&lead, |_| {}).unwrap();
            for i in 0..40u8 {
                let mut got = Vec::new();
                decoder
                    .decode(&indexed_literal(b"x-c", &[i; 20]), |f| got.push(f.value[0]))
                    .unwrap();
                assert_eq!(got, [i]);
                assert!(decoder.table_size() <= advertised, "{advertised}");
            }
        }
        let mut decoder = Decoder::new(advertised);
        decoder.settings_acknowledged();
        let mut names = Vec::new();
        let block = update(advertised, &indexed_literal(b"x-d", b"v"));
        decoder.decode(&block, |f| names.push(f.name.to_vec())).unwrap();
        assert_eq!(names, [b"x-d".to_vec()]);

        // An empty block, before the update, does not need one.
        let mut decoder = Decoder::new(advertised);
        decoder.settings_acknowledged();
        assert_eq!(decoder.decode(&[], |_| {}), Ok(()));
        assert!(decoder.decode(&indexed_literal(b"x-e", b"v"), |_| {}).is_err());
    }
}

/// A peer that brought its table down to the advertised size (or below)
/// before acknowledging owes no second update; at the default or above,
/// the acknowledgement changes nothing (the server's own case).
#[test]
fn an_acknowledged_limit_the_table_is_within_needs_no_update() {
    let mut decoder = Decoder::new(1024);
    decoder.decode(&update(512, &[]), |_| {}).unwrap();
    decoder.settings_acknowledged();
    decoder.decode(&indexed_literal(b"x-a", b"v"), |_| {}).unwrap();
    assert_eq!(decoder.decode(&update(1024, &[]), |_| {}), Ok(()));
    for advertised in [4096usize, 65_536] {
        let mut decoder = Decoder::new(advertised);
        decoder.decode(&indexed_literal(b"x-a", b"v"), |_| {}).unwrap();
        assert_eq!(decoder.decode(&update(advertised, &[]), |_| {}), Ok(()));
        decoder.settings_acknowledged();
        decoder.decode(&indexed_literal(b"x-b", b"v"), |_| {}).unwrap();
        assert_eq!(decoder.decode(&update(advertised, &[]), |_| {}), Ok(()));
        assert!(decoder.decode(&update(advertised + 1, &[]), |_| {}).is_err());
    }
}

/// The table's storage grows with what the peer inserts: one 33-byte entry
/// after an update to a large size allocates a little (it reserved 2.75
/// times the size: 44 MiB for 16 MiB, a reviewer's measure); filled, no
/// single allocation exceeds twice the size in bytes.
#[test]
fn one_small_entry_does_not_commit_a_large_tables_storage() {
    let _serial = falconet_testkit::serial();
    for max in [4096usize, 65_536, 1 << 20, 16 << 20] {
        let mut decoder = Decoder::new(max);
        let block = update(max, &indexed_literal(b"a", b""));
        let allocations = falconet_testkit::count_allocations(|| {
            decoder.decode(&block, |_| {}).unwrap();
        });
        let sizes = falconet_testkit::counted_sizes();
        assert_eq!(decoder.table_size(), 33);
        let total: usize = sizes.iter().sum();
        assert!(allocations <= 2 && total <= 1024, "{max}: {allocations} allocations, {sizes:?}");
    }
    let max = 65_536;
    let mut decoder = Decoder::new(max);
    decoder.decode(&update(max, &[]), |_| {}).unwrap();
    let mut rng = Rng(5);
    let blocks: Vec<Vec<u8>> = (0..3_000)
        .map(|_| {
            let l = rng.below(600) as usize;
            indexed_literal(b"x-fill", &rng.bytes(l))
        })
        .collect();
    let mut largest = 0;
    for block in &blocks {
        falconet_testkit::count_allocations(|| decoder.decode(block, |_| {}).unwrap());
        largest = falconet_testkit::counted_sizes().into_iter().fold(largest, usize::max);
    }
    assert!(decoder.table_size() > max - 700, "{}", decoder.table_size());
    assert!(largest <= 2 * max, "an allocation of {largest} bytes for a {max}-byte table");
}
