//! Misuse: a `Store` dropped inside one of its own callbacks (a listener, a
//! middleware, a reducer, a reducer that answers with a patch), from the
//! caller's thread and from a plugin's thread (the delay plugin's worker).
//! The C library defers such a destroy:
//! the dispatch under way still runs its remaining middleware, reducers and
//! listeners, so their closures must outlive the drop. Each scenario has a
//! witness of every kind after the dropping callback; it reads what its
//! closure captured, so a closure freed too early is an invalid read under
//! valgrind (`make test-rust` runs this binary under valgrind).
//!
//! In safe Rust a Store cannot be dropped while a call through it is under
//! way on the same thread (that call borrows it); the caller's-thread case
//! is a dispatch made through `sys` on `as_ptr()`, which the crate allows
//! while the Store is alive. A plugin's thread needs no `sys`: the delay
//! worker dispatches, and a listener takes the Store out of an
//! `Arc<Mutex<Option<Store>>>`.
use std::ffi::CString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use turnstate::{sys, Status, Store};

const DROP_ACTION: &str = r#"{"type":"test/drop"}"#;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Listener,
    Middleware,
    Reducer,
    /// A reducer added with add_reducer_for that answers with a patch.
    PatchReducer,
}

/// Sets its flag when dropped: tells when the store freed a closure.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

type Slot = Arc<Mutex<Option<Store>>>;

/// What the scenario's closures record.
#[derive(Default)]
struct Seen {
    /// The dropping callback's closure and each witness's were freed.
    dropper_freed: Arc<AtomicBool>,
    witnesses_freed: [Arc<AtomicBool>; 3],
    /// The store was dropped (inside the callback), and on which thread.
    dropped: AtomicBool,
    dropped_on: Mutex<Option<thread::ThreadId>>,
    /// Calls of each witness for the dropping action.
    middleware_witness: AtomicUsize,
    reducer_witness: AtomicUsize,
    listener_witness: AtomicUsize,
    /// A witness ran after the drop and found a closure already freed.
    freed_too_early: AtomicBool,
    /// What the listener witness's dispatch through its StoreRef returned.
    dispatch_after_drop: Mutex<Option<Result<(), turnstate::Error>>>,
}

impl Seen {
    fn all_freed(&self) -> bool {
        self.dropper_freed.load(Ordering::SeqCst) && self.witnesses_freed.iter().all(|f| f.load(Ordering::SeqCst))
    }

    fn check_alive(&self) {
        if self.dropper_freed.load(Ordering::SeqCst) || self.witnesses_freed.iter().any(|f| f.load(Ordering::SeqCst)) {
            self.freed_too_early.store(true, Ordering::SeqCst);
        }
    }
}

/// Takes the store out of the slot and drops it: the misuse under test.
fn drop_from_slot(slot: &Slot, seen: &Seen) {
    let taken = slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take();
    if let Some(store) = taken {
        drop(store);
        seen.dropped.store(true, Ordering::SeqCst);
        *seen.dropped_on.lock().unwrap() = Some(thread::current().id());
    }
}

/// A store whose callback of `kind` drops it on "test/drop", followed by a
/// witness of each kind. Returns the store, in `slot` too.
fn scenario(kind: Kind, seen: &Arc<Seen>, slot: &Slot) -> Store {
    let store = Store::new("{}").unwrap();
    // The dropping callback first, so that the witnesses of its kind run after it.
    let flag = DropFlag(seen.dropper_freed.clone());
    let (my_slot, my_seen) = (slot.clone(), seen.clone());
    match kind {
        Kind::Listener => {
            store
                .subscribe(None, move |_| {
                    let _ = &flag;
                    drop_from_slot(&my_slot, &my_seen);
                })
                .unwrap();
        }
        Kind::Middleware => {
            store
                .add_middleware("dropper", move |_, next, action| {
                    let _ = &flag;
                    if action.kind() == "test/drop" {
                        drop_from_slot(&my_slot, &my_seen);
                    }
                    next.pass()
                })
                .unwrap();
        }
        Kind::Reducer => {
            store
                .add_reducer("dropper", move |slice, action| {
                    let _ = &flag;
                    if action.kind() == "test/drop" {
                        drop_from_slot(&my_slot, &my_seen);
                    }
                    Ok(slice.is_none().then(|| "0".to_string()))
                })
                .unwrap();
        }
        Kind::PatchReducer => {
            store
                .add_reducer_for("dropper", &["test/*"], move |slice, _| {
                    let _ = &flag;
                    if slice.is_none() {
                        return Ok(turnstate::Reduced::Slice("0".to_string()));
                    }
                    drop_from_slot(&my_slot, &my_seen);
                    Ok(turnstate::Patch::new().replace("", "1").into())
                })
                .unwrap();
        }
    }
    let flag = DropFlag(seen.witnesses_freed[0].clone());
    let my_seen = seen.clone();
    store
        .add_middleware("witness", move |_, next, action| {
            let _ = &flag;
            if action.kind() == "test/drop" {
                my_seen.middleware_witness.fetch_add(1, Ordering::SeqCst);
                my_seen.check_alive();
            }
            next.pass()
        })
        .unwrap();
    let flag = DropFlag(seen.witnesses_freed[1].clone());
    let my_seen = seen.clone();
    store
        .add_reducer("witness", move |slice, action| {
            let _ = &flag;
            if slice.is_none() {
                return Ok(Some("0".to_string()));
            }
            if action.kind() != "test/drop" {
                return Ok(None);
            }
            my_seen.reducer_witness.fetch_add(1, Ordering::SeqCst);
            my_seen.check_alive();
            Ok(Some("1".to_string()))
        })
        .unwrap();
    let flag = DropFlag(seen.witnesses_freed[2].clone());
    let my_seen = seen.clone();
    store
        .subscribe(None, move |store| {
            let _ = &flag;
            my_seen.listener_witness.fetch_add(1, Ordering::SeqCst);
            my_seen.check_alive();
            // The store is closed: a new call is refused, not run.
            *my_seen.dispatch_after_drop.lock().unwrap() = Some(store.dispatch(r#"{"type":"test/after"}"#));
        })
        .unwrap();
    store
}

/// What every scenario must have seen once the dispatch finished.
fn check_the_dispatch_finished(kind: Kind, seen: &Seen) {
    assert!(seen.dropped.load(Ordering::SeqCst), "{:?}: the store was dropped inside the callback", kind);
    assert!(!seen.freed_too_early.load(Ordering::SeqCst), "{:?}: a closure was freed while the dispatch ran", kind);
    // The dispatch under way finished: each witness ran once.
    assert_eq!(seen.middleware_witness.load(Ordering::SeqCst), 1, "{:?}: the middleware witness", kind);
    assert_eq!(seen.reducer_witness.load(Ordering::SeqCst), 1, "{:?}: the reducer witness", kind);
    assert_eq!(seen.listener_witness.load(Ordering::SeqCst), 1, "{:?}: the listener witness", kind);
    let after = seen.dispatch_after_drop.lock().unwrap().clone();
    match after {
        Some(Err(error)) => assert_eq!(error.status(), Status::StoreGone, "{:?}: {}", kind, error),
        other => panic!("{:?}: a dispatch after the drop returned {:?}, not TS_E_STORE_GONE", kind, other),
    }
}

/// The caller's thread: a thread dispatches through `sys` (the crate's
/// `as_ptr()`), the callback drops the Store. The closures outlive the
/// dispatch and are freed at the next call through the crate on that
/// thread (here Store::new); a second run checks thread exit frees them too.
fn on_the_callers_thread(kind: Kind) {
    for free_at_exit in [false, true] {
        let seen = Arc::new(Seen::default());
        let slot: Slot = Arc::new(Mutex::new(None));
        let (my_seen, my_slot) = (seen.clone(), slot.clone());
        let status = thread::spawn(move || {
            let store = scenario(kind, &my_seen, &my_slot);
            let raw = store.as_ptr();
            *my_slot.lock().unwrap() = Some(store);
            let action = CString::new(DROP_ACTION).unwrap();
            // The Store is alive when the call begins (it is in the slot).
            let status = unsafe { sys::ts_store_dispatch(raw, action.as_ptr()) };
            assert_eq!(*my_seen.dropped_on.lock().unwrap(), Some(thread::current().id()));
            check_the_dispatch_finished(kind, &my_seen);
            if !free_at_exit {
                // The outermost call into the store returned: the next call
                // through the crate on this thread frees the closures.
                drop(Store::new("{}").unwrap());
                assert!(my_seen.all_freed(), "{:?}: freed by the next call on the thread", kind);
            }
            status
        })
        .join()
        .expect("the dispatching thread panicked");
        assert_eq!(status, sys::TS_OK, "{:?}: the dispatch under way finished", kind);
        assert!(slot.lock().unwrap().is_none());
        assert!(seen.all_freed(), "{:?}: every closure freed once the thread ended", kind);
    }
}

fn plugins_dir() -> PathBuf {
    turnstate::plugins_dir().expect("built with TURNSTATE_PLUGINS_DIR or pkg-config's pluginsdir").to_path_buf()
}

/// Waits for `done` (a bound, not a timing check: it keeps a broken plugin
/// from hanging the suite).
fn wait_for(what: &str, done: impl Fn() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < Duration::from_secs(120), "waited two minutes for {}", what);
        thread::sleep(Duration::from_millis(2));
    }
}

/// A plugin's thread: the delay plugin dispatches "test/drop" from its
/// worker, where the callback drops the Store (the worker's dispatch is the
/// outermost call: the library finishes destroying the store, and the
/// plugin, on the worker; the closures are freed when the worker ends).
fn on_the_delay_workers_thread(kind: Kind) {
    let seen = Arc::new(Seen::default());
    let slot: Slot = Arc::new(Mutex::new(None));
    let store = scenario(kind, &seen, &slot);
    store.load_plugin(plugins_dir().join("delay.so"), None).unwrap();
    {
        let mut guard = slot.lock().unwrap();
        let store = guard.insert(store);
        // Swallowed by the plugin: the worker dispatches the inner action
        // (once this lock is released, the callback can take the Store).
        store.dispatch(&format!(r#"{{"type":"@@delay","payload":{{"ms":0,"action":{}}}}}"#, DROP_ACTION)).unwrap();
    }
    wait_for("the drop on the worker", || seen.listener_witness.load(Ordering::SeqCst) > 0);
    let worker = seen.dropped_on.lock().unwrap().expect("dropped");
    assert_ne!(worker, thread::current().id(), "{:?}: dropped on the plugin's thread", kind);
    wait_for("the closures to be freed", || seen.all_freed());
    check_the_dispatch_finished(kind, &seen);
}

#[test]
fn a_listener_drops_its_store_on_the_callers_thread() {
    on_the_callers_thread(Kind::Listener);
}

#[test]
fn a_middleware_drops_its_store_on_the_callers_thread() {
    on_the_callers_thread(Kind::Middleware);
}

#[test]
fn a_reducer_drops_its_store_on_the_callers_thread() {
    on_the_callers_thread(Kind::Reducer);
}

#[test]
fn a_patch_reducer_drops_its_store_on_the_callers_thread() {
    on_the_callers_thread(Kind::PatchReducer);
}

#[test]
fn a_patch_reducer_drops_its_store_on_the_delay_workers_thread() {
    on_the_delay_workers_thread(Kind::PatchReducer);
}

#[test]
fn a_listener_drops_its_store_on_the_delay_workers_thread() {
    on_the_delay_workers_thread(Kind::Listener);
}

#[test]
fn a_middleware_drops_its_store_on_the_delay_workers_thread() {
    on_the_delay_workers_thread(Kind::Middleware);
}

#[test]
fn a_reducer_drops_its_store_on_the_delay_workers_thread() {
    on_the_delay_workers_thread(Kind::Reducer);
}

/// A Store dropped inside a callback of another store (not busy itself) is
/// destroyed at once; its closures are freed with the outer call.
#[test]
fn a_store_dropped_inside_another_stores_listener() {
    let seen = Arc::new(Seen::default());
    let slot: Slot = Arc::new(Mutex::new(None));
    let inner = scenario(Kind::Listener, &seen, &slot);
    *slot.lock().unwrap() = Some(inner);
    let outer = Store::new("{}").unwrap();
    let (my_slot, my_seen) = (slot.clone(), seen.clone());
    outer
        .add_reducer("n", |slice, _| Ok(Some(slice.map_or(0, |n| n.parse::<i64>().unwrap() + 1).to_string())))
        .unwrap();
    outer.subscribe(None, move |_| drop_from_slot(&my_slot, &my_seen)).unwrap();
    outer.dispatch(r#"{"type":"any"}"#).unwrap();
    assert!(seen.dropped.load(Ordering::SeqCst));
    assert!(seen.all_freed(), "freed when the outer dispatch returned");
    assert_eq!(outer.get("/n").unwrap(), "1");
}
