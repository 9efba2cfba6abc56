//! Shared helpers for the falconet benchmarks.
