//! Heap places for the futures and bodies the worker polls, kept per
//! thread and reused.

use std::any::Any;
use std::cell::RefCell;
use std::marker::PhantomData;
use std::pin::Pin;

thread_local! {
    /// Each thread's [`Place`]s, one per type, kept between uses.
    static PLACES: RefCell<Vec<Box<dyn Any>>> = const { RefCell::new(Vec::new()) };
}

/// A pinned heap place for a `T`, borrowed from this thread's cache and
/// returned (emptied) on drop: a future or body polled in it can be handed
/// to a task without moving ([`steal`](Self::steal)), and one that
/// finishes at once costs no allocation.
pub(super) struct Place<T: 'static> {
    /// Holds a `Pin<Box<Option<T>>>`.
    cell: Option<Box<dyn Any>>,
    _type: PhantomData<fn() -> T>,
}

impl<T: 'static> Place<T> {
    pub(super) fn take() -> Self {
        let cached = PLACES
            .try_with(|places| {
                let mut places = places.borrow_mut();
                let i = places.iter().position(|place| (**place).is::<Pin<Box<Option<T>>>>())?;
                Some(places.swap_remove(i))
            })
            .ok()
            .flatten();
        let cell = cached.unwrap_or_else(|| Box::new(Box::pin(None::<T>)));
        Self { cell: Some(cell), _type: PhantomData }
    }

    fn slot(&mut self) -> &mut Pin<Box<Option<T>>> {
        self.cell
            .as_mut()
            .and_then(|cell| (**cell).downcast_mut::<Pin<Box<Option<T>>>>())
            .expect("a place holds its own type")
    }

    pub(super) fn pinned(&mut self) -> Pin<&mut Option<T>> {
        self.slot().as_mut()
    }

    /// Takes the place away with its value (an empty one is cached instead).
    pub(super) fn steal(&mut self) -> Pin<Box<Option<T>>> {
        std::mem::replace(self.slot(), Box::pin(None))
    }
}

impl<T: 'static> Drop for Place<T> {
    fn drop(&mut self) {
        // The value drops where it was pinned; the place is kept.
        self.slot().set(None);
        if let Some(cell) = self.cell.take() {
            let _ = PLACES.try_with(|places| places.borrow_mut().push(cell));
        }
    }
}
