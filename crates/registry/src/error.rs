//! The registry's errors.

use std::fmt;

/// `insert` found the registry at `max_connections`. The value comes back
/// untouched ([`Full::into_inner`]); nothing was registered.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Full<T> {
    value: T,
    max_connections: usize,
}

impl<T> Full<T> {
    pub(crate) fn new(value: T, max_connections: usize) -> Self {
        Self { value, max_connections }
    }

    /// The value that was not inserted.
    pub fn into_inner(self) -> T {
        self.value
    }

    /// The value that was not inserted, by reference.
    pub fn value(&self) -> &T {
        &self.value
    }

    /// The bound the registry is at ([`Options::max_connections`](crate::Options::max_connections)).
    pub fn max_connections(&self) -> usize {
        self.max_connections
    }
}

impl<T> fmt::Debug for Full<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Full")
            .field("max_connections", &self.max_connections)
            .finish_non_exhaustive()
    }
}

impl<T> fmt::Display for Full<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the registry is full: it holds its max_connections of {} entries (or as many slots are still held by removed entries' references)",
            self.max_connections
        )
    }
}

impl<T> std::error::Error for Full<T> {}

/// [`Options`](crate::Options) a registry cannot be built with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OptionsError {
    /// The shard count must be a power of two from 1 to 256.
    Shards(usize),
    /// `max_connections` must be at least 1 and at most what the shards can
    /// address (16,777,184 slots each).
    MaxConnections {
        /// What was asked for.
        requested: usize,
        /// The most this shard count can hold.
        capacity: usize,
    },
}

impl fmt::Display for OptionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Shards(shards) => {
                write!(f, "{shards} shards: the count must be a power of two from 1 to 256")
            }
            Self::MaxConnections { requested, capacity } => write!(
                f,
                "max_connections {requested}: must be from 1 to {capacity} for this shard count"
            ),
        }
    }
}

impl std::error::Error for OptionsError {}
