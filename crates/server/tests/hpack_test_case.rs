//! RFC 7541 against other implementations' encoders: the interop corpus
//! of http2jp/hpack-test-case (the one h2 and nghttp2 test with), in which
//! 14 HPACK encoders (nghttp2 with the default, a 16 KiB and a changing
//! table; Go's; node's; Python's; swift-nio's with and without Huffman;
//! Haskell's http2 with static, naive and linear indexing, each with and
//! without Huffman) encoded the same stories of real requests and
//! responses. Every block of 22 stories (0.7 MB of blocks) must decode, on
//! one decoder per story as on one connection, to the story's fields in
//! order. `scripts/hpack_test_case.py` writes the data file and says which
//! stories.

use falconet_server::h2::hpack::Decoder;

const DATA: &str = include_str!("data/hpack-test-case.txt");

fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect()
}

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

#[test]
fn every_encoders_blocks_decode_to_the_storys_fields() {
    let mut stories: Vec<(u32, Vec<Fields>)> = Vec::new();
    let mut lines = DATA.lines().filter(|line| !line.starts_with('#')).peekable();
    // The stories' fields first.
    while let Some(line) = lines.next_if(|line| !line.starts_with("wire ")) {
        if let Some(n) = line.strip_prefix("story ") {
            stories.push((n.parse().unwrap(), Vec::new()));
        } else if line == "case" {
            stories.last_mut().unwrap().1.push(Vec::new());
        } else {
            let (name, value) = line.split_once('\t').unwrap();
            let case = stories.last_mut().unwrap().1.last_mut().unwrap();
            case.push((name.as_bytes().to_vec(), value.as_bytes().to_vec()));
        }
    }
    // Then each encoder's blocks, a story at a time.
    let (mut encoders, mut blocks, mut fields) = (Vec::new(), 0, 0);
    while let Some(line) = lines.next() {
        let mut words = line.strip_prefix("wire ").unwrap().split(' ');
        let (encoder, story, table) = (words.next().unwrap(), words.next().unwrap(), words.next());
        let story: u32 = story.parse().unwrap();
        let cases = &stories.iter().find(|(n, _)| *n == story).unwrap().1;
        let mut decoder = Decoder::new(table.unwrap().parse().unwrap());
        for (seqno, expected) in cases.iter().enumerate() {
            let wire = unhex(lines.next().unwrap());
            let mut decoded = Vec::new();
            decoder
                .decode(&wire, |f| decoded.push((f.name.to_vec(), f.value.to_vec())))
                .unwrap_or_else(|e| panic!("{encoder} story {story} case {seqno}: {e}"));
            assert!(decoded == *expected, "{encoder} story {story} case {seqno}");
            blocks += 1;
            fields += expected.len();
        }
        if !encoders.contains(&encoder) {
            encoders.push(encoder);
        }
    }
    // Every story and encoder the script wrote, none skipped.
    assert_eq!((stories.len(), encoders.len(), blocks, fields), (22, 14, 4_456, 46_720));
}
