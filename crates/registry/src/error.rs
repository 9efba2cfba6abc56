//! The registry's errors.

use std::fmt;

/// `insert` found the registry at `max_connections`. The value comes back
/// untouched ([`Full::into_inner`]); nothing was registered.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Full<T>(pub T);

impl<T> Full<T> {
    /// The value that was not inserted.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> fmt::Debug for Full<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Full(..)")
    }
}

impl<T> fmt::Display for Full<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the registry holds max_connections entries")
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
