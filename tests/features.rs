//! The facade's features reach the members' optional parts: a user who
//! depends on `falconet` alone, with `features = ["tower", "bytes"]`,
//! writes the paths the members' docs show.
#![cfg(all(feature = "tower", feature = "bytes"))]

use bytes::BufMut;
use falconet::pipe::{Options, pipe};
use falconet::pool::Pool;
use falconet::server::tower::TowerHandler;

#[test]
fn member_features_are_reachable_through_the_facade() {
    // `bytes`: a block filled through `BufMut`.
    let pool = Pool::new();
    let mut buf = pool.try_lease().unwrap().into_buf();
    buf.put_slice(b"hello");
    assert_eq!(&buf[..], b"hello");

    // `tokio`: the pipe's async socket read. (The root's dev-dependencies
    // turn the pipe's `tokio` on for its examples as well: `tower` and
    // `bytes` are what this test proves the facade passes through.)
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
    runtime.block_on(async {
        let mut source: &[u8] = b"from a socket";
        while writer.read_from_async(&mut source).await.unwrap() > 0 {}
    });
    writer.close();
    assert_eq!(reader.read_at_least_blocking(13).unwrap().len(), 13);

    // `tower`: the handler type that serves a tower service.
    let _: Option<TowerHandler<()>> = None;
}
