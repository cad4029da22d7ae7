//! The bus: a copy-on-write list of subscribers, so that emitting takes no lock.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use arc_swap::ArcSwap;
use parking_lot::Mutex;

use crate::store::{Store, Subscription};

use super::event::Event;

type Callback = Arc<dyn Fn(&Event) + Send + Sync>;
type Subscribers = Vec<(u64, Callback)>;

struct BusInner {
    /// Emitting loads this list without locking; (un)subscribing replaces it whole.
    subscribers: ArcSwap<Subscribers>,
    /// Serializes (un)subscribing, so two concurrent changes cannot lose one another.
    edit: Mutex<()>,
    next_id: AtomicU64,
    panics: AtomicU64,
}

impl BusInner {
    fn edit(&self, change: impl FnOnce(&mut Subscribers)) {
        let _guard = self.edit.lock();
        let mut list = Vec::clone(&self.subscribers.load());
        change(&mut list);
        self.subscribers.store(Arc::new(list));
    }
}

/// A thread-safe event bus: cheap to clone (clones share subscribers), `Send + Sync`.
///
/// Subscribers are called in subscription order, on the thread that emits, one event at a
/// time per emitting thread. Keep them quick; hand slow work to a channel. A subscriber may
/// subscribe, unsubscribe or emit from inside its callback: emitting works on a copy of the
/// list taken when it starts.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// use capstore::{Event, EventBus};
///
/// let bus = EventBus::new();
/// let count = Arc::new(AtomicUsize::new(0));
/// let counter = Arc::clone(&count);
/// let _sub = bus.subscribe(move |_| { counter.fetch_add(1, Ordering::SeqCst); });
/// let other = bus.clone();
/// std::thread::spawn(move || other.emit(&Event::CatalogChanged { version: 1, changes: 1 }))
///     .join()
///     .unwrap();
/// assert_eq!(count.load(Ordering::SeqCst), 1);
/// ```
#[derive(Clone)]
pub struct EventBus {
    inner: Arc<BusInner>,
}

impl Default for EventBus {
    fn default() -> Self {
        EventBus::new()
    }
}

impl fmt::Debug for EventBus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventBus")
            .field("subscribers", &self.subscriber_count())
            .field("subscriber_panics", &self.subscriber_panics())
            .finish()
    }
}

impl EventBus {
    /// A bus with no subscribers.
    ///
    /// ```
    /// assert_eq!(capstore::EventBus::new().subscriber_count(), 0);
    /// ```
    pub fn new() -> Self {
        EventBus {
            inner: Arc::new(BusInner {
                subscribers: ArcSwap::from_pointee(Vec::new()),
                edit: Mutex::new(()),
                next_id: AtomicU64::new(1),
                panics: AtomicU64::new(0),
            }),
        }
    }

    /// Adds a subscriber, called with every event emitted from now on until the returned
    /// subscription is dropped or [unsubscribed](EventSubscription::unsubscribe).
    ///
    /// ```
    /// let bus = capstore::EventBus::new();
    /// let sub = bus.subscribe(|event| println!("{event:?}"));
    /// assert_eq!(bus.subscriber_count(), 1);
    /// drop(sub);
    /// assert_eq!(bus.subscriber_count(), 0);
    /// ```
    pub fn subscribe(
        &self,
        callback: impl Fn(&Event) + Send + Sync + 'static,
    ) -> EventSubscription {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let callback: Callback = Arc::new(callback);
        self.inner.edit(|list| list.push((id, callback)));
        EventSubscription {
            id,
            bus: Arc::downgrade(&self.inner),
        }
    }

    /// Calls every subscriber with `event`, in subscription order, on this thread. A
    /// subscriber that panics is caught and counted ([`subscriber_panics`](Self::subscriber_panics));
    /// the others are still called.
    ///
    /// ```
    /// use capstore::{Event, EventBus};
    /// let bus = EventBus::new();
    /// let _sub = bus.subscribe(|_| panic!("a broken subscriber"));
    /// bus.emit(&Event::CatalogChanged { version: 1, changes: 1 }); // does not panic
    /// assert_eq!(bus.subscriber_panics(), 1);
    /// ```
    pub fn emit(&self, event: &Event) {
        // A full Arc rather than a guard: a subscriber may emit again, nesting loads.
        let subscribers = self.inner.subscribers.load_full();
        for (_, callback) in subscribers.iter() {
            if catch_unwind(AssertUnwindSafe(|| callback(event))).is_err() {
                self.inner.panics.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// How many subscribers there are.
    ///
    /// ```
    /// assert_eq!(capstore::EventBus::default().subscriber_count(), 0);
    /// ```
    pub fn subscriber_count(&self) -> usize {
        self.inner.subscribers.load().len()
    }

    /// How many times a subscriber panicked (each panic was caught).
    ///
    /// ```
    /// assert_eq!(capstore::EventBus::new().subscriber_panics(), 0);
    /// ```
    pub fn subscriber_panics(&self) -> u64 {
        self.inner.panics.load(Ordering::Relaxed)
    }

    /// Emits [`Event::CatalogChanged`] for every commit of `store` from now on, in version
    /// order, until the returned store subscription is dropped. The events are emitted on the
    /// committing thread while it holds the store's writer lock, so subscribers must not write
    /// to that store.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use capstore::{Event, EventBus, Store, Tool, TOOLS};
    ///
    /// let (bus, store) = (EventBus::new(), Store::new());
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let log = Arc::clone(&seen);
    /// let _events = bus.subscribe(move |e| log.lock().unwrap().push(e.clone()));
    /// let _follow = bus.follow_store(&store);
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("a", "b")))?;
    /// assert_eq!(*seen.lock().unwrap(), [Event::CatalogChanged { version: 1, changes: 1 }]);
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn follow_store(&self, store: &Store) -> Subscription {
        let bus = self.clone();
        store.subscribe(move |changes| {
            bus.emit(&Event::CatalogChanged {
                version: changes.version,
                changes: changes.changes.len(),
            });
        })
    }
}

/// A subscriber's registration on an [`EventBus`]. Dropping it, or calling
/// [`unsubscribe`](Self::unsubscribe), removes the subscriber; [`detach`](Self::detach) keeps it
/// for the life of the bus.
///
/// ```
/// let bus = capstore::EventBus::new();
/// let sub = bus.subscribe(|_| {});
/// sub.detach();
/// assert_eq!(bus.subscriber_count(), 1);
/// ```
#[must_use = "dropping an EventSubscription unsubscribes at once; call `detach` to keep it"]
pub struct EventSubscription {
    id: u64,
    bus: Weak<BusInner>,
}

impl EventSubscription {
    /// Removes the subscriber. No emit that starts after this returns calls it (an emit
    /// already under way on another thread may still do so).
    ///
    /// ```
    /// let bus = capstore::EventBus::new();
    /// bus.subscribe(|_| {}).unsubscribe();
    /// assert_eq!(bus.subscriber_count(), 0);
    /// ```
    pub fn unsubscribe(self) {
        drop(self);
    }

    /// Keeps the subscriber for as long as the bus lives.
    ///
    /// ```
    /// let bus = capstore::EventBus::new();
    /// bus.subscribe(|_| {}).detach();
    /// assert_eq!(bus.subscriber_count(), 1);
    /// ```
    pub fn detach(mut self) {
        self.bus = Weak::new();
    }
}

impl Drop for EventSubscription {
    fn drop(&mut self) {
        if let Some(bus) = self.bus.upgrade() {
            let id = self.id;
            bus.edit(|list| list.retain(|(sid, _)| *sid != id));
        }
    }
}

impl fmt::Debug for EventSubscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventSubscription")
            .field("id", &self.id)
            .finish()
    }
}
