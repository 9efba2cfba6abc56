//! What `cargo bench` at the workspace root runs: a pointer to the real
//! comparisons, which live in the `falconet-benches` crate so that
//! `cargo test` never compiles the peer crates (dashmap, rtrb, hyper, ...)
//! they are measured against.

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not run
    // this target (it is not a test), so nothing else calls it.
    println!(
        "\
falconet's benchmarks compare each primitive with its lock-based twin and the
best published crates, at 1, 2 and 4 threads, counting completed work. They
live in the falconet-benches crate, so that `cargo test` never builds the peers.

  cargo bench -p falconet-benches                 every criterion comparison
  cargo bench -p falconet-benches --bench flow    one of: pool, block_layout, pipe,
                                                  flow, registry, server
  scripts/bench.sh                                all of them, the interleaved runs
                                                  (less noise) and the report tables
  scripts/bench-server.sh                         the HTTP server against hyper and
                                                  may_minihttp under wrk

criterion writes target/criterion/report/index.html; the figures we recorded,
with the machine and the command behind each, are in docs/benchmarks.md."
    );
}
