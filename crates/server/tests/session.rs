//! The connection state machine without sockets: a proptest against a
//! sequential model (requests in, responses out, in order, whatever the
//! splits), arbitrary bytes, and one read -> one output.

mod common;

use common::{Echo, FNV_START, fnv};
use falconet_server::{Context, Options, Progress, Session};
use proptest::prelude::*;

/// A request the model knows how to answer.
#[derive(Clone, Debug)]
enum Req {
    Get(u16),
    Sized(Vec<u8>),
    /// Chunks, and a seed choosing their extensions and trailer fields.
    Chunked(Vec<Vec<u8>>, u8),
    Close(u16),
}

/// Valid chunk extensions (RFC 9112 §7.1.1), ignored by the server.
const EXTENSIONS: [&str; 4] = ["", ";a", " ; a = b ;c", "\t;sig=\"q \\\" ;=\""];
/// Valid trailer sections (RFC 9112 §7.1.2), discarded by the server.
const TRAILERS: [&str; 3] = ["", "X-Sum: 1\r\n", "A:b\r\nC: d\te \r\n"];

impl Req {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Req::Get(n) => {
                out.extend_from_slice(format!("GET /g{n} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes())
            }
            Req::Close(n) => out.extend_from_slice(
                format!("GET /c{n} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").as_bytes(),
            ),
            Req::Sized(body) => {
                out.extend_from_slice(
                    format!(
                        "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
                        body.len()
                    )
                    .as_bytes(),
                );
                out.extend_from_slice(body);
            }
            Req::Chunked(chunks, seed) => {
                out.extend_from_slice(
                    b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n",
                );
                let seed = usize::from(*seed);
                for (i, chunk) in chunks.iter().filter(|c| !c.is_empty()).enumerate() {
                    let extension = EXTENSIONS[(seed + i) % EXTENSIONS.len()];
                    out.extend_from_slice(format!("{:x}{extension}\r\n", chunk.len()).as_bytes());
                    out.extend_from_slice(chunk);
                    out.extend_from_slice(b"\r\n");
                }
                out.extend_from_slice(b"0\r\n");
                out.extend_from_slice(TRAILERS[seed % TRAILERS.len()].as_bytes());
                out.extend_from_slice(b"\r\n");
            }
        }
    }

    /// The model: the body the response carries.
    fn expected(&self) -> String {
        match self {
            Req::Get(n) => format!("/g{n}"),
            Req::Close(n) => format!("/c{n}"),
            Req::Sized(body) => format!("len={} fnv={:x}", body.len(), fnv(FNV_START, body)),
            Req::Chunked(chunks, _) => {
                let body = chunks.concat();
                format!("len={} fnv={:x}", body.len(), fnv(FNV_START, &body))
            }
        }
    }
}

fn req() -> impl Strategy<Value = Req> {
    prop_oneof![
        4 => any::<u16>().prop_map(Req::Get),
        2 => proptest::collection::vec(any::<u8>(), 0..300).prop_map(Req::Sized),
        2 => (proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..100), 0..5), any::<u8>())
            .prop_map(|(chunks, seed)| Req::Chunked(chunks, seed)),
        1 => any::<u16>().prop_map(Req::Close),
    ]
}

/// Bodies of the responses in `output`, in order (Content-Length framing).
fn bodies(mut output: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    while !output.is_empty() {
        let end = output.windows(4).position(|w| w == b"\r\n\r\n").expect("a complete head") + 4;
        let head = std::str::from_utf8(&output[..end]).unwrap();
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .expect("Content-Length")
            .parse()
            .unwrap();
        found.push(String::from_utf8(output[end..end + length].to_vec()).unwrap());
        output = &output[end + length..];
    }
    found
}

/// Feeds `input` cut at `cuts`, processing and draining the output after
/// every piece. Returns everything output and the last progress.
fn run(input: &[u8], cuts: &[usize], end: bool) -> (Vec<u8>, Progress) {
    let pool = falconet_pool::Pool::new();
    let mut cx = Context::new(&Options::new()).unwrap();
    let mut session = Session::<Echo>::new(&pool).unwrap();
    let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
    bounds.push(input.len());
    bounds.sort_unstable();
    let mut output = Vec::new();
    let mut start = 0;
    let mut progress = Progress::NeedInput;
    for bound in bounds {
        if bound > start && !session.is_closed() {
            session.receive(&input[start..bound]).unwrap();
            start = bound;
        }
        progress = session.process(&Echo, &mut cx);
        output.extend_from_slice(session.output());
        let n = session.output().len();
        session.consume_output(n);
    }
    if end {
        session.end_input();
        progress = session.process(&Echo, &mut cx);
        output.extend_from_slice(session.output());
    }
    (output, progress)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Whatever the splits, every request before the first
    /// `Connection: close` is answered, in order, and nothing after it.
    #[test]
    fn responses_match_the_model(reqs in proptest::collection::vec(req(), 1..12), cuts in proptest::collection::vec(any::<usize>(), 0..10)) {
        let mut input = Vec::new();
        for r in &reqs {
            r.encode(&mut input);
        }
        let answered = reqs.iter().position(|r| matches!(r, Req::Close(_))).map_or(reqs.len(), |i| i + 1);
        let expected: Vec<String> = reqs[..answered].iter().map(Req::expected).collect();
        let (output, progress) = run(&input, &cuts, false);
        prop_assert_eq!(bodies(&output), expected);
        prop_assert_eq!(progress == Progress::Close, answered < reqs.len() || matches!(reqs.last(), Some(Req::Close(_))));
    }

    /// Arbitrary bytes: no panic, a verdict, output bounded by the input
    /// (each response answers at least one request line) plus one error.
    #[test]
    fn arbitrary_bytes(input in proptest::collection::vec(any::<u8>(), 0..400), cuts in proptest::collection::vec(any::<usize>(), 0..6)) {
        let (output, _) = run(&input, &cuts, true);
        prop_assert!(output.len() <= 200 * (input.len() / 16 + 1) + 200, "{} bytes out", output.len());
    }
}

#[test]
fn one_read_one_output() {
    let pool = falconet_pool::Pool::new();
    let mut cx = Context::new(&Options::new()).unwrap();
    let mut session = Session::<Echo>::new(&pool).unwrap();
    let mut input = Vec::new();
    for i in 0..16 {
        Req::Get(i).encode(&mut input);
    }
    session.receive(&input).unwrap();
    assert_eq!(session.process(&Echo, &mut cx), Progress::NeedInput);
    let expected: Vec<String> = (0..16).map(|i| format!("/g{i}")).collect();
    assert_eq!(bodies(session.output()), expected, "all sixteen responses wait in one buffer");
    assert_eq!(cx.requests(), 16);
}

#[test]
fn output_past_its_bound_pauses_parsing() {
    let pool = falconet_pool::Pool::new();
    let mut cx = Context::new(&Options::new().max_pending_output(1000)).unwrap();
    let mut session = Session::<Echo>::new(&pool).unwrap();
    let mut input = Vec::new();
    for i in 0..100 {
        Req::Get(i).encode(&mut input);
    }
    session.receive(&input).unwrap();
    assert_eq!(session.process(&Echo, &mut cx), Progress::OutputFull);
    let first = bodies(session.output()).len();
    assert!(first < 100 && session.output().len() >= 1000);
    assert!(!session.wants_input(&cx), "no reading while the output is full");
    let mut all = bodies(session.output());
    while all.len() < 100 {
        let n = session.output().len();
        session.consume_output(n);
        session.process(&Echo, &mut cx);
        all.extend(bodies(session.output()));
    }
    assert_eq!(all, (0..100).map(|i| format!("/g{i}")).collect::<Vec<_>>());
}
