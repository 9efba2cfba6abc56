//! Stress with real threads: a writer and a reader move
//! `FALCONET_PIPE_STRESS_BYTES` (default 10 GiB) through a pipe with random
//! write sizes (copied and in place), random reads (`read`,
//! `read_at_least`, `try_read`) and random consumed/examined advances. Every
//! byte carries its stream position, so a lost, duplicated or reordered
//! byte fails the test at the byte where it happens; both ends also keep a
//! running checksum.
#![cfg(not(falconet_pipe_loom))]

mod common;

use common::{Rng, byte_at};
use std::thread;

use falconet_pipe::{Options, pipe};
use falconet_pool::Pool;

fn total_bytes() -> u64 {
    std::env::var("FALCONET_PIPE_STRESS_BYTES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(if cfg!(miri) { 1 << 16 } else { 10 << 30 })
}

#[test]
fn two_threads_move_every_byte_once_in_order() {
    let total = total_bytes();
    let pool = Pool::new();
    let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
    let producer = thread::spawn(move || {
        let mut rng = Rng(0x5EED);
        let mut scratch = vec![0u8; 64 * 1024];
        let (mut pos, mut sum) = (0u64, 0u64);
        while pos < total {
            let left = total - pos;
            if rng.below(2) == 0 {
                // Copied: 1 byte to 64 KiB, small sizes more often.
                let max = [16, 512, 4096, 65536][rng.below(4) as usize];
                let n = (1 + rng.below(max)).min(left) as usize;
                for (i, byte) in scratch[..n].iter_mut().enumerate() {
                    *byte = byte_at(pos + i as u64);
                }
                writer.put_slice(&scratch[..n]).unwrap();
                sum = scratch[..n].iter().fold(sum, |sum, &b| sum.wrapping_add(u64::from(b)));
                pos += n as u64;
            } else {
                // In place, as a socket read would land.
                let min = 1 + rng.below(4096) as usize;
                let buffer = writer.buffer(min).unwrap();
                let n = (1 + rng.below(buffer.len() as u64)).min(left) as usize;
                for (i, byte) in buffer[..n].iter_mut().enumerate() {
                    *byte = byte_at(pos + i as u64);
                }
                sum = buffer[..n].iter().fold(sum, |sum, &b| sum.wrapping_add(u64::from(b)));
                writer.commit(n).unwrap();
                pos += n as u64;
            }
            writer.flush_blocking().unwrap();
        }
        writer.close();
        sum
    });
    let mut rng = Rng(0xFACE);
    let (mut pos, mut sum) = (0u64, 0u64);
    loop {
        let read = match rng.below(8) {
            0 => reader.read_at_least_blocking(1 + rng.below(200_000) as usize).unwrap(),
            1 => match reader.try_read().unwrap() {
                Some(read) => read,
                None => continue,
            },
            _ => reader.read_blocking().unwrap(),
        };
        let len = read.len();
        let consumed = if rng.below(4) == 0 { rng.below(len as u64 + 1) as usize } else { len };
        let examined = consumed + rng.below((len - consumed) as u64 + 1) as usize;
        // Check only what is consumed: the rest comes back next read.
        let mut at = pos;
        let mut left = consumed;
        for chunk in read.chunks() {
            let chunk = &chunk[..chunk.len().min(left)];
            for &byte in chunk {
                assert_eq!(byte, byte_at(at), "stream position {at}");
                at += 1;
            }
            sum = chunk.iter().fold(sum, |sum, &b| sum.wrapping_add(u64::from(b)));
            left -= chunk.len();
        }
        pos += consumed as u64;
        let done = read.is_completed() && consumed == len;
        read.advance_to(consumed, examined).unwrap();
        if done {
            break;
        }
    }
    assert_eq!(pos, total, "every byte arrived");
    assert_eq!(sum, producer.join().unwrap(), "checksums agree");
}
