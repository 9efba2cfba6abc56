//! A bounded memory of recent stream ids: the streams a connection reset
//! or closed lately, so that frames the client sent before it learned of
//! it are told apart from frames on streams it never opened (RFC 9113
//! 5.1). A ring: once full, each new id takes the oldest one's place.
//! Its room is reserved the first time it is used (one allocation per
//! memory, per connection, none after).

/// The last `capacity` ids remembered.
#[derive(Debug)]
pub(crate) struct RecentIds {
    ids: Vec<u32>,
    /// Where the next id goes once `ids` is full.
    next: usize,
    capacity: usize,
}

impl RecentIds {
    /// Remembers up to `capacity` ids (at least one).
    pub(crate) fn new(capacity: usize) -> Self {
        Self { ids: Vec::new(), next: 0, capacity: capacity.max(1) }
    }

    /// Remembers `id`, forgetting the oldest if full.
    pub(crate) fn remember(&mut self, id: u32) {
        if self.ids.len() < self.capacity {
            if self.ids.is_empty() {
                self.ids.reserve_exact(self.capacity);
            }
            self.ids.push(id);
        } else {
            self.ids[self.next] = id;
            self.next = (self.next + 1) % self.capacity;
        }
    }

    /// Whether `id` is among the last `capacity` remembered.
    pub(crate) fn contains(&self, id: u32) -> bool {
        self.ids.contains(&id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_capacity_ids() {
        let mut recent = RecentIds::new(3);
        assert!(!recent.contains(1) && !recent.contains(0));
        for id in [1, 3, 5] {
            recent.remember(id);
        }
        assert!(recent.contains(1) && recent.contains(3) && recent.contains(5));
        recent.remember(7);
        assert!(!recent.contains(1) && recent.contains(3) && recent.contains(7));
        recent.remember(9);
        recent.remember(11);
        assert_eq!(
            [3, 5, 7, 9, 11].map(|id| recent.contains(id)),
            [false, false, true, true, true]
        );
        // The room never grows past the capacity.
        for id in 0..100 {
            recent.remember(id);
        }
        assert_eq!(recent.ids.len(), 3);
        assert!(recent.contains(97) && recent.contains(99) && !recent.contains(96));
    }

    #[test]
    fn capacity_zero_is_one() {
        let mut recent = RecentIds::new(0);
        recent.remember(5);
        assert!(recent.contains(5));
        recent.remember(7);
        assert!(!recent.contains(5) && recent.contains(7));
    }
}
