//! How a registry is built.

use crate::OptionsError;
use crate::id::{MAX_SHARDS, SLOTS_PER_SHARD};

/// The default bound on entries: 1,048,576.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1 << 20;

/// Shards and the bound on entries, checked by
/// [`Registry::with_options`](crate::Registry::with_options).
///
/// ```
/// use falconet_registry::{Options, Registry};
///
/// let registry: Registry<u32> = Registry::with_options(Options::new().shards(8).max_connections(10_000))?;
/// assert_eq!(registry.max_connections(), 10_000);
/// # Ok::<(), falconet_registry::OptionsError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    shards: usize,
    max_connections: usize,
}

impl Options {
    /// The defaults: two shards per available CPU (a power of two, at most
    /// 256) and [`DEFAULT_MAX_CONNECTIONS`].
    pub fn new() -> Self {
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        Self {
            shards: (2 * cpus).next_power_of_two().min(MAX_SHARDS),
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }

    /// The number of shards: a power of two from 1 to 256. Each thread
    /// inserts into a shard of its own while there are enough, so inserts
    /// from different threads rarely share a lock; lookups do not care.
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = shards;
        self
    }

    /// The most entries the registry holds at once; past it `insert`
    /// returns [`Full`](crate::Full).
    pub fn max_connections(mut self, max_connections: usize) -> Self {
        self.max_connections = max_connections;
        self
    }

    pub(crate) fn validate(self) -> Result<(usize, usize), OptionsError> {
        if !self.shards.is_power_of_two() || self.shards > MAX_SHARDS {
            return Err(OptionsError::Shards(self.shards));
        }
        let capacity = self.shards * SLOTS_PER_SHARD;
        if self.max_connections == 0 || self.max_connections > capacity {
            return Err(OptionsError::MaxConnections { requested: self.max_connections, capacity });
        }
        Ok((self.shards, self.max_connections))
    }
}

impl Default for Options {
    fn default() -> Self {
        Self::new()
    }
}
