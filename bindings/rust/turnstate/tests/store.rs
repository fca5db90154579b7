//! The rules of turnstate.h, through the safe API: ordering, atomic failure,
//! re-entrancy, panics, threads, plugins, Drop. Run by `make test-rust`
//! (`cargo test --offline`) against build/lib and build/plugins.
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread;
use std::time::{Duration, Instant};

use turnstate::{Status, Store, StoreRef};

const ADD: &str = r#"{"type":"counter/add","payload":1}"#;

/// The counter reducer of the benchmarks: "0" at first, +payload on
/// counter/add, unchanged otherwise.
fn counter(slice: Option<&str>, action: &turnstate::Action<'_>) -> Result<Option<String>, String> {
    match slice {
        None => Ok(Some("0".to_string())),
        Some(count) if action.kind() == "counter/add" => {
            let count: i64 = count.parse().map_err(|_| format!("count {} is not an integer", count))?;
            let by: i64 = action.payload().unwrap_or("1").parse().map_err(|_| "payload: not an integer")?;
            Ok(Some((count + by).to_string()))
        }
        Some(_) => Ok(None),
    }
}

fn counter_store() -> Store {
    let store = Store::new("{}").unwrap();
    store.add_reducer("count", counter).unwrap();
    store
}

fn log() -> Arc<Mutex<Vec<String>>> {
    Arc::new(Mutex::new(Vec::new()))
}

fn entries(log: &Arc<Mutex<Vec<String>>>) -> Vec<String> {
    log.lock().unwrap().clone()
}

#[test]
fn store_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Store>();
    assert_send_sync::<turnstate::Error>();
}

#[test]
fn create_dispatch_and_read() {
    let store = Store::new(r#"{"todos": [], "title": "x"}"#).unwrap();
    store.add_reducer("count", counter).unwrap();
    assert_eq!(store.state().unwrap(), r#"{"todos":[],"title":"x","count":0}"#);
    store.dispatch(r#"{"type": "counter/add", "payload": 41}"#).unwrap();
    store.dispatch(ADD).unwrap();
    assert_eq!(store.get("/count").unwrap(), "42");
    assert_eq!(store.get("/title").unwrap(), "\"x\"");
    assert_eq!(turnstate::version(), turnstate::sys::TS_VERSION);
}

#[test]
fn bad_input_is_an_error_with_status_and_message() {
    let error = Store::new("[1, 2]").unwrap_err();
    assert_eq!(error.status(), Status::Json);
    assert_eq!(error.code(), turnstate::sys::TS_E_JSON);
    assert!(!error.message().is_empty());

    let store = counter_store();
    let error = store.dispatch(r#"{"payload": 2}"#).unwrap_err();
    assert_eq!(error.status(), Status::NotAction);
    assert!(error.message().contains("\"type\""), "{}", error);
    assert!(error.to_string().starts_with("TS_E_NOT_ACTION: "), "{}", error);

    let error = store.dispatch("{\"type\": \"a\0b\"}").unwrap_err();
    assert_eq!(error.status(), Status::Argument);
    assert!(error.message().contains("NUL"), "{}", error);

    let error = store.dispatch(r#"{"type": "x", "a": 1, "a": 2}"#).unwrap_err();
    assert_eq!(error.status(), Status::Json);

    let error = store.get("/nothing/here").unwrap_err();
    assert_eq!(error.status(), Status::NotFound);
    assert!(error.message().contains("nothing"), "{}", error);

    let error = store.add_reducer("count", counter).unwrap_err();
    assert_eq!(error.status(), Status::Argument, "a key has one reducer: {}", error);

    // A C string goes as it is.
    store
        .dispatch_c(std::ffi::CStr::from_bytes_with_nul(b"{\"type\":\"counter/add\",\"payload\":2}\0").unwrap())
        .unwrap();
    assert_eq!(store.get("/count").unwrap(), "2");
    let error = store.dispatch_c(std::ffi::CStr::from_bytes_with_nul(b"{\0").unwrap()).unwrap_err();
    assert_eq!(error.status(), Status::Json);
    store.dispatch(r#"{"type":"counter/add","payload":-2}"#).unwrap();

    // A long action (past the stack copy) works the same.
    let long = format!(r#"{{"type":"counter/add","payload":1,"pad":"{}"}}"#, "x".repeat(1000));
    store.dispatch(&long).unwrap();
    assert_eq!(store.get("/count").unwrap(), "1");
}

#[test]
fn middleware_then_reducers_then_listeners_each_in_order() {
    let store = Store::new("{}").unwrap();
    let seen = log();
    for key in ["a", "b"] {
        let seen = seen.clone();
        store
            .add_reducer(key, move |slice, action| {
                if slice.is_some() {
                    seen.lock().unwrap().push(format!("reducer {} {}", key, action.kind()));
                }
                Ok(slice.is_none().then(|| "0".to_string()))
            })
            .unwrap();
    }
    for name in ["m1", "m2"] {
        let seen = seen.clone();
        store
            .add_middleware(name, move |_store, next, action| {
                seen.lock().unwrap().push(format!("{} before {}", name, action.kind()));
                let result = next.pass();
                seen.lock().unwrap().push(format!("{} after", name));
                result
            })
            .unwrap();
    }
    for name in ["l1", "l2"] {
        let seen = seen.clone();
        store.subscribe(None, move |_store| seen.lock().unwrap().push(name.to_string())).unwrap();
    }
    store.dispatch(r#"{"type": "go"}"#).unwrap();
    let got = entries(&seen);
    assert_eq!(&got[..4], ["m1 before go", "m2 before go", "reducer a go", "reducer b go"]);
    // Listeners after the reducers, in subscription order; the middleware
    // returns around the rest of the dispatch.
    let l1 = got.iter().position(|e| e == "l1").unwrap();
    let l2 = got.iter().position(|e| e == "l2").unwrap();
    assert!(l1 < l2 && l1 > 3, "{:?}", got);
    assert_eq!(got.len(), 8, "{:?}", got);
}

#[test]
fn a_failing_reducer_changes_nothing() {
    let store = Store::new("{}").unwrap();
    store.add_reducer("count", counter).unwrap();
    store
        .add_reducer("check", |slice, action| match slice {
            None => Ok(Some("true".to_string())),
            Some(_) if action.payload() == Some("13") => Err("13 is unlucky".to_string()),
            Some(_) => Ok(None),
        })
        .unwrap();
    let called = Arc::new(AtomicUsize::new(0));
    let calls = called.clone();
    store
        .subscribe(None, move |_| {
            calls.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    store.dispatch(r#"{"type":"counter/add","payload":2}"#).unwrap();
    let before = store.state().unwrap();
    let error = store.dispatch(r#"{"type":"counter/add","payload":13}"#).unwrap_err();
    assert_eq!(error.status(), Status::Reducer);
    assert!(!error.is_panic());
    assert!(error.message().contains("13 is unlucky"), "{}", error);
    assert!(error.message().contains("\"check\""), "{}", error);
    assert_eq!(store.state().unwrap(), before, "the count reducer's result is not applied");
    assert_eq!(called.load(Ordering::SeqCst), 1, "no listener for a failed dispatch");

    // Invalid JSON from a reducer is a reducer failure too.
    store.add_reducer("bad", |slice, _| Ok(Some(if slice.is_none() { "1" } else { "{nope" }.to_string()))).unwrap();
    let before = store.state().unwrap();
    assert_eq!(store.dispatch(ADD).unwrap_err().status(), Status::Reducer);
    assert_eq!(store.state().unwrap(), before);

    // A reducer whose first value fails is not added.
    let error = store.add_reducer("never", |_, _| Err("no first value".to_string())).unwrap_err();
    assert_eq!(error.status(), Status::Reducer);
    assert!(error.message().contains("no first value"), "{}", error);
    assert_eq!(store.get("/never").unwrap_err().status(), Status::NotFound);
}

#[test]
fn a_reducer_that_calls_back_into_its_store_fails_the_dispatch() {
    let store = Arc::new(Store::new("{}").unwrap());
    store.add_reducer("count", counter).unwrap();
    let weak: Arc<Mutex<Weak<Store>>> = Arc::new(Mutex::new(Weak::new()));
    let inner_status = Arc::new(Mutex::new(None));
    {
        let weak = weak.clone();
        let inner_status = inner_status.clone();
        store
            .add_reducer("sneaky", move |slice, action| {
                if slice.is_none() || action.kind() != "sneak" {
                    return Ok(slice.is_none().then(|| "0".to_string()));
                }
                let store = weak.lock().unwrap().upgrade().expect("the store is alive");
                *inner_status.lock().unwrap() = Some(store.dispatch(ADD).map_err(|e| e.status()));
                Ok(Some("1".to_string()))
            })
            .unwrap();
    }
    *weak.lock().unwrap() = Arc::downgrade(&store);
    let before = store.state().unwrap();
    let error = store.dispatch(r#"{"type":"sneak"}"#).unwrap_err();
    assert_eq!(error.status(), Status::Reentrant, "{}", error);
    assert_eq!(*inner_status.lock().unwrap(), Some(Err(Status::Reentrant)));
    assert_eq!(store.state().unwrap(), before);
    store.dispatch(ADD).unwrap();
    assert_eq!(store.get("/count").unwrap(), "1");
}

#[test]
fn a_reducer_panic_is_an_error_and_changes_nothing() {
    let store = counter_store();
    store
        .add_reducer("fragile", |slice, action| {
            if action.kind() == "explode" {
                panic!("boom {}", 42);
            }
            Ok(slice.is_none().then(|| "0".to_string()))
        })
        .unwrap();
    store.dispatch(ADD).unwrap();
    let before = store.state().unwrap();
    let error = store.dispatch(r#"{"type":"explode"}"#).unwrap_err();
    assert_eq!(error.status(), Status::Panic);
    assert!(error.is_panic());
    assert_eq!(error.code(), turnstate::sys::TS_E_REDUCER, "through ts_reducer_fail");
    assert!(error.message().contains("panicked: boom 42"), "{}", error);
    assert!(error.message().contains("\"fragile\""), "{}", error);
    assert_eq!(store.state().unwrap(), before);
    // The store goes on, and the panic is not reported again.
    store.dispatch(ADD).unwrap();
    assert_eq!(store.get("/count").unwrap(), "2");

    // A panic in the first call (add_reducer) too.
    let error = store.add_reducer("dud", |_, _| panic!("at init")).unwrap_err();
    assert!(error.is_panic() && error.message().contains("at init"), "{}", error);
}

#[test]
fn a_listener_panic_is_reported_after_the_dispatch_applied() {
    let store = counter_store();
    let later = Arc::new(AtomicUsize::new(0));
    store.subscribe(None, |_| panic!("listener trouble")).unwrap();
    let counter = later.clone();
    store
        .subscribe(None, move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let error = store.dispatch(ADD).unwrap_err();
    assert_eq!(error.status(), Status::Panic);
    assert_eq!(error.code(), turnstate::sys::TS_OK);
    assert!(error.message().contains("listener trouble"), "{}", error);
    assert_eq!(store.get("/count").unwrap(), "1", "listeners run after the state changed");
    assert_eq!(later.load(Ordering::SeqCst), 1, "the next listener still ran");
}

#[test]
fn a_middleware_panic_refuses_the_action() {
    let store = counter_store();
    store
        .add_middleware("shaky", |_, next, action| {
            if action.kind() == "counter/add" && action.payload() == Some("7") {
                panic!("seven");
            }
            next.pass()
        })
        .unwrap();
    store.dispatch(ADD).unwrap();
    let error = store.dispatch(r#"{"type":"counter/add","payload":7}"#).unwrap_err();
    assert_eq!(error.status(), Status::Panic);
    assert_eq!(error.code(), turnstate::sys::TS_E_REJECTED);
    assert!(error.message().contains("middleware \"shaky\" panicked: seven"), "{}", error);
    assert_eq!(store.get("/count").unwrap(), "1");
}

#[test]
fn middleware_refuses_changes_and_swallows() {
    let store = counter_store();
    store
        .add_middleware("rules", |store, next, action| match action.kind() {
            "forbidden" => Err(turnstate::Error::rejected("\"forbidden\" is not allowed")),
            "double" => {
                let count: i64 = store.get("/count")?.parse().unwrap();
                next.send(&format!(r#"{{"type":"counter/add","payload":{}}}"#, count))
            }
            "swallow" => Ok(()),
            _ => next.pass(),
        })
        .unwrap();
    let error = store.dispatch(r#"{"type":"forbidden"}"#).unwrap_err();
    assert_eq!(error.status(), Status::Rejected);
    assert!(error.message().contains("\"forbidden\" is not allowed"), "{}", error);
    store.dispatch(r#"{"type":"counter/add","payload":3}"#).unwrap();
    store.dispatch(r#"{"type":"double"}"#).unwrap();
    assert_eq!(store.get("/count").unwrap(), "6");
    store.dispatch(r#"{"type":"swallow"}"#).unwrap();
    assert_eq!(store.get("/count").unwrap(), "6");
    // next's failure comes back through the middleware with the library's message.
    let error = store.dispatch(r#"{"type":"counter/add","payload":"x"}"#).unwrap_err();
    assert_eq!(error.status(), Status::Reducer);
    assert!(error.message().contains("payload: not an integer"), "{}", error);
    // A middleware may dispatch a new action through its table.
    store
        .add_middleware("echo", |store, next, action| {
            if action.kind() == "twice" {
                store.dispatch(ADD)?;
                store.dispatch(ADD)?;
                return Ok(());
            }
            next.pass()
        })
        .unwrap();
    store.dispatch(r#"{"type":"twice"}"#).unwrap();
    assert_eq!(store.get("/count").unwrap(), "8");
}

#[test]
fn listeners_with_a_pointer_run_on_change_and_unsubscribe_stops_them() {
    let store = Store::new(r#"{"other": 0}"#).unwrap();
    store.add_reducer("count", counter).unwrap();
    store
        .add_reducer("other", |slice, action| {
            let value: i64 = slice.unwrap_or("0").parse().unwrap();
            Ok(if action.kind() == "other" { Some((value + 1).to_string()) } else { None })
        })
        .unwrap();
    let seen = log();
    let s = seen.clone();
    let sub = store
        .subscribe(Some("/count"), move |store: &StoreRef| s.lock().unwrap().push(store.get("/count").unwrap()))
        .unwrap();
    store.dispatch(ADD).unwrap();
    store.dispatch(r#"{"type":"other"}"#).unwrap();
    store.dispatch(ADD).unwrap();
    assert_eq!(entries(&seen), ["1", "2"]);
    store.unsubscribe(sub).unwrap();
    store.unsubscribe(sub).unwrap(); // idempotent
    store.dispatch(ADD).unwrap();
    assert_eq!(entries(&seen), ["1", "2"]);
    assert_eq!(store.subscribe(Some("no-slash"), |_| {}).unwrap_err().status(), Status::Argument);
}

#[test]
fn a_listener_may_dispatch() {
    let store = counter_store();
    store
        .subscribe(Some("/count"), |store| {
            if store.get("/count").unwrap() == "1" {
                store.dispatch(r#"{"type":"counter/add","payload":10}"#).unwrap();
            }
        })
        .unwrap();
    store.dispatch(ADD).unwrap();
    assert_eq!(store.get("/count").unwrap(), "11");
}

#[test]
fn one_store_from_many_threads() {
    let store = Arc::new(counter_store());
    let calls = Arc::new(AtomicUsize::new(0));
    let threads_seen = Arc::new(Mutex::new(std::collections::HashSet::new()));
    {
        let calls = calls.clone();
        let threads_seen = threads_seen.clone();
        store
            .subscribe(None, move |_| {
                calls.fetch_add(1, Ordering::SeqCst);
                threads_seen.lock().unwrap().insert(thread::current().id());
            })
            .unwrap();
    }
    const THREADS: usize = 4;
    const EACH: usize = 2000;
    let workers: Vec<_> = (0..THREADS)
        .map(|_| {
            let store = store.clone();
            thread::spawn(move || {
                for _ in 0..EACH {
                    store.dispatch(ADD).unwrap();
                }
                store.get("/count").unwrap()
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    assert_eq!(store.get("/count").unwrap(), (THREADS * EACH).to_string(), "no lost update");
    assert_eq!(calls.load(Ordering::SeqCst), THREADS * EACH);
    assert_eq!(threads_seen.lock().unwrap().len(), THREADS, "the listener ran on every dispatching thread");
    // The store may be dropped on another thread than the one that made it.
    let store = Arc::try_unwrap(store).unwrap();
    thread::spawn(move || drop(store)).join().unwrap();
}

/// Sets its flag when dropped: tells when the store freed a closure.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn drop_destroys_the_store_and_frees_the_closures() {
    let reducer_freed = Arc::new(AtomicBool::new(false));
    let listener_freed = Arc::new(AtomicBool::new(false));
    let middleware_freed = Arc::new(AtomicBool::new(false));
    let unsubscribed_freed = Arc::new(AtomicBool::new(false));
    let store = counter_store();
    let flag = DropFlag(reducer_freed.clone());
    store
        .add_reducer("kept", move |slice, _| {
            let _ = &flag;
            Ok(slice.is_none().then(|| "0".to_string()))
        })
        .unwrap();
    let flag = DropFlag(listener_freed.clone());
    store
        .subscribe(None, move |_| {
            let _ = &flag;
        })
        .unwrap();
    let flag = DropFlag(middleware_freed.clone());
    store
        .add_middleware("kept", move |_, next, _| {
            let _ = &flag;
            next.pass()
        })
        .unwrap();
    let flag = DropFlag(unsubscribed_freed.clone());
    let sub = store
        .subscribe(None, move |_| {
            let _ = &flag;
        })
        .unwrap();
    store.dispatch(ADD).unwrap();
    assert!(!unsubscribed_freed.load(Ordering::SeqCst));
    store.unsubscribe(sub).unwrap();
    assert!(unsubscribed_freed.load(Ordering::SeqCst), "unsubscribe outside a callback frees the listener");
    assert!(!reducer_freed.load(Ordering::SeqCst) && !listener_freed.load(Ordering::SeqCst));
    drop(store);
    assert!(reducer_freed.load(Ordering::SeqCst), "reducer freed with the store");
    assert!(listener_freed.load(Ordering::SeqCst), "listener freed with the store");
    assert!(middleware_freed.load(Ordering::SeqCst), "middleware freed with the store");

    // A failed add frees its closure at once.
    let store = counter_store();
    let failed = Arc::new(AtomicBool::new(false));
    let flag = DropFlag(failed.clone());
    assert!(store
        .add_reducer("count", move |_, _| {
            let _ = &flag;
            Ok(None)
        })
        .is_err());
    assert!(failed.load(Ordering::SeqCst));
}

#[test]
fn unsubscribing_from_inside_a_listener_keeps_it_until_the_store_goes() {
    let store = Arc::new(counter_store());
    let freed = Arc::new(AtomicBool::new(false));
    let slot: Arc<Mutex<Option<turnstate::Subscription>>> = Arc::new(Mutex::new(None));
    let weak = Arc::downgrade(&store);
    let flag = DropFlag(freed.clone());
    let my_slot = slot.clone();
    let calls = Arc::new(AtomicUsize::new(0));
    let my_calls = calls.clone();
    let sub = store
        .subscribe(None, move |_| {
            let _ = &flag;
            my_calls.fetch_add(1, Ordering::SeqCst);
            if let (Some(store), Some(sub)) = (weak.upgrade(), *my_slot.lock().unwrap()) {
                store.unsubscribe(sub).unwrap();
            }
        })
        .unwrap();
    *slot.lock().unwrap() = Some(sub);
    store.dispatch(ADD).unwrap();
    store.dispatch(ADD).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(!freed.load(Ordering::SeqCst), "still alive: the dispatch under way could call it");
    drop(Arc::try_unwrap(store).unwrap());
    assert!(freed.load(Ordering::SeqCst));
}

// ---- Plugins ------------------------------------------------------------------

fn plugins_dir() -> PathBuf {
    turnstate::plugins_dir().expect("built with TURNSTATE_PLUGINS_DIR or pkg-config's pluginsdir").to_path_buf()
}

#[test]
fn the_guard_plugin_refuses_what_its_config_denies() {
    let store = counter_store();
    store.load_plugin(plugins_dir().join("guard.so"), Some(r#"{"deny": ["admin/*"]}"#)).unwrap();
    let error = store.dispatch(r#"{"type":"admin/reset"}"#).unwrap_err();
    assert_eq!(error.status(), Status::Rejected);
    assert!(error.message().contains("admin/reset"), "{}", error);
    store.dispatch(ADD).unwrap();
    assert_eq!(store.get("/count").unwrap(), "1");
}

#[test]
fn plugin_errors_are_errors() {
    let store = counter_store();
    let error = store.load_plugin(plugins_dir().join("no-such-plugin.so"), None).unwrap_err();
    assert_eq!(error.status(), Status::NotFound);
    assert!(error.message().contains("no-such-plugin.so"), "{}", error);
    let error = store.load_plugin(plugins_dir().join("guard.so"), Some("{not json")).unwrap_err();
    assert_eq!(error.status(), Status::Json);
    let error = store.load_plugin(plugins_dir().join("guard.so"), Some(r#"{"nonsense": 1}"#)).unwrap_err();
    assert_eq!(error.status(), Status::Plugin);
    assert!(error.message().contains("nonsense"), "{}", error);
    store.dispatch(ADD).unwrap();
}

#[test]
fn the_delay_plugin_calls_rust_closures_from_its_own_thread() {
    let store = counter_store();
    let main = thread::current().id();
    let other_thread = Arc::new(AtomicBool::new(false));
    let flag = other_thread.clone();
    store
        .subscribe(Some("/count"), move |_| {
            if thread::current().id() != main {
                flag.store(true, Ordering::SeqCst);
            }
        })
        .unwrap();
    store.load_plugin(plugins_dir().join("delay.so"), None).unwrap();
    store.dispatch(r#"{"type":"@@delay","payload":{"ms":1,"action":{"type":"counter/add","payload":5}}}"#).unwrap();
    // Waits for the worker (no timing is asserted: a generous bound only
    // keeps a broken plugin from hanging the suite).
    let started = Instant::now();
    while store.get("/count").unwrap() != "5" {
        assert!(started.elapsed() < Duration::from_secs(60), "the delayed action never arrived");
        thread::sleep(Duration::from_millis(2));
    }
    assert!(other_thread.load(Ordering::SeqCst), "the listener ran on the plugin's thread");
    // Dropping the store stops the worker (a pending action is dropped).
    store.dispatch(r#"{"type":"@@delay","payload":{"ms":60000,"action":{"type":"counter/add"}}}"#).unwrap();
    drop(store);
}

#[test]
fn a_plugin_folder_loads_in_name_order() {
    // A private folder with the built guard plugin and its config.
    let dir = std::env::temp_dir().join(format!("turnstate-rust-plugins-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::copy(plugins_dir().join("guard.so"), dir.join("10-guard.so")).unwrap();
    std::fs::set_permissions(dir.join("10-guard.so"), std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::write(dir.join("10-guard.json"), r#"{"allow": ["counter/*"]}"#).unwrap();
    std::fs::set_permissions(dir.join("10-guard.json"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let store = counter_store();
    let loaded = store.load_plugins(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    loaded.unwrap();
    store.dispatch(ADD).unwrap();
    assert_eq!(store.dispatch(r#"{"type":"other"}"#).unwrap_err().status(), Status::Rejected);
    let error = store.load_plugins("/nonexistent/turnstate/plugins").unwrap_err();
    assert_eq!(error.status(), Status::NotFound);
}

#[test]
fn replace_and_remove_reducers_and_middleware() {
    let store = counter_store();
    let seen = log();
    let spy = seen.clone();
    store
        .add_middleware("spy", move |_store, next, action| {
            spy.lock().unwrap().push(action.kind().to_string());
            if action.kind() == "@@turnstate/replace" && spy.lock().unwrap().len() == 2 {
                return Err(turnstate::Error::rejected("not now"));
            }
            next.pass()
        })
        .unwrap();
    store.dispatch(r#"{"type":"counter/add","payload":5}"#).unwrap();
    // Refused by the middleware: the old reducer stays.
    let refused = store.replace_reducer("count", |_, _| Ok(Some("100".to_string()))).unwrap_err();
    assert_eq!(refused.status(), Status::Rejected);
    store.dispatch(ADD).unwrap();
    assert_eq!(store.get("/count").unwrap(), "6");
    // Doubling: the state is kept, the replace action went through the middleware.
    store
        .replace_reducer("count", |slice, action| match slice {
            Some(count) if action.kind() == "counter/add" => Ok(Some((count.parse::<i64>().unwrap() + 2).to_string())),
            _ => Ok(None),
        })
        .unwrap();
    assert_eq!(entries(&seen).last().unwrap(), "@@turnstate/replace");
    assert_eq!(store.get("/count").unwrap(), "6");
    store.dispatch(ADD).unwrap();
    assert_eq!(store.get("/count").unwrap(), "8");
    assert_eq!(store.replace_reducer("nope", counter).unwrap_err().status(), Status::NotFound);
    assert_eq!(store.remove_reducer("nope").unwrap_err().status(), Status::NotFound);
    store.remove_middleware("spy").unwrap();
    assert_eq!(store.remove_middleware("spy").unwrap_err().status(), Status::NotFound);
    let before = entries(&seen).len();
    store.remove_reducer("count").unwrap();
    store.dispatch(ADD).unwrap();
    assert_eq!(entries(&seen).len(), before); // the middleware is gone
    assert_eq!(store.get("/count").unwrap(), "8"); // the slice stays, unchanged
}
