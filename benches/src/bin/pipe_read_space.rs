//! Kestrel's 2 KiB rule, measured: `Writer::read_from` reads into the tail
//! block while at least `min_read_space` bytes are free there, else into a
//! fresh block. Small values pack blocks tightly but cut reads short (each
//! short read is one more `read(2)`); large values waste block tails.
//!
//! A simulated socket delivers bursts (HTTP requests of 100-900 B, one in
//! ten a 2-16 KiB body) while the parser lags, so the bytes accumulate in
//! the pipe. For each `min_read_space` this prints how full the leased
//! blocks are and how many reads each burst took.
//!
//! `cargo run --release -p falconet-benches --bin pipe_read_space`

use std::io::{self, Read};

use falconet_pipe::{Options, pipe};
use falconet_pool::Pool;

/// A socket whose next `read` returns up to the rest of the current burst.
struct Bursts {
    left_in_burst: usize,
    rng: u64,
    bursts: usize,
    reads: usize,
}

impl Bursts {
    fn next_size(&mut self) -> usize {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        if self.rng.is_multiple_of(10) {
            2048 + (self.rng >> 8) as usize % 14_336
        } else {
            100 + (self.rng >> 8) as usize % 800
        }
    }
}

impl Read for Bursts {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left_in_burst == 0 {
            self.left_in_burst = self.next_size();
            self.bursts += 1;
        }
        self.reads += 1;
        let n = buf.len().min(self.left_in_burst);
        buf[..n].fill(b'x');
        self.left_in_burst -= n;
        Ok(n)
    }
}

fn main() {
    const BYTES: u64 = 4 << 20;
    let pool = Pool::new();
    println!("| min_read_space | bytes per leased block (of 4096) | reads per burst |");
    println!("|---|---|---|");
    for space in [256, 512, 1024, 2048, 3072, 4096] {
        let options = Options::new().without_back_pressure().min_read_space(space);
        let (mut writer, reader) = pipe(&pool, options).unwrap();
        let mut socket = Bursts { left_in_burst: 0, rng: 0x9E37_79B9, bursts: 0, reads: 0 };
        while writer.written() < BYTES {
            writer.read_from(&mut socket).unwrap();
        }
        let leased = pool.stats().leased;
        let fill = writer.written() as f64 / leased as f64;
        let reads = socket.reads as f64 / socket.bursts as f64;
        println!("| {space} | {fill:.0} ({:.0}%) | {reads:.2} |", fill / 40.96);
        drop((writer, reader));
    }
}
