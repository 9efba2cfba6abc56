//! The user-space cost of a request in falconet-server: a `Session` (pipe,
//! parser, handler, response) answering the TechEmpower plaintext request,
//! alone and 16 pipelined, with no socket. Throughput counts requests
//! answered (the output is checked).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use falconet_server::{Context, Options, Session, hello::Hello};

const REQUEST: &[u8] = b"GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n";

fn session(c: &mut Criterion) {
    let mut group = c.benchmark_group("server session");
    for depth in [1usize, 16] {
        let pool = falconet_pool::Pool::new();
        let mut cx = Context::new(&Options::new()).unwrap();
        let mut session = Session::<Hello>::new(&pool).unwrap();
        let batch = REQUEST.repeat(depth);
        group.throughput(Throughput::Elements(depth as u64));
        group.bench_function(format!("plaintext x{depth}"), |b| {
            b.iter(|| {
                session.receive(&batch).unwrap();
                session.process(&Hello, &mut cx);
                let out = session.output().len();
                assert!(out > 100 * depth);
                session.consume_output(out);
            });
        });
    }
    group.finish();
}

criterion_group!(benches, session);
criterion_main!(benches);
