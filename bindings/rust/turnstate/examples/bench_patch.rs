//! RP, RA and RU of `make bench`: the C rows CP, CA and CU of
//! Benchmarks/c/bench.c (issue 19) driven from Rust through the safe API.
//! Build it in release mode:
//!
//!     cargo run --release --offline --example bench_patch -- [--runs R] [--scale F] [--only RP|RA|RU]
//!
//! The stores are those of bench.c: the C1 counter (a reducer and a
//! listener, Rust closures) plus "todos", a list of 10 or 100,000 items
//! (about 8 MB) owned by a closure added with `add_patch_reducer(&["todos/*"])`
//! (its slice a `JsonRef`: the store keeps the big one as a tree, as bench.c's
//! `ts_store_add_patch_reducer`) that reads with the getters and answers with
//! a `Patch`:
//!   RP  toggles one item ("todos/toggle" {"id": N}: the payload's id and
//!       the item's "done" read with `payload_at` and `JsonRef::at`, one
//!       `replace`), 10 and 100,000 items, runs alternating (RP-ratio);
//!   RA  appends ("todos/add": `add` at "/items/-"), to fresh stores each run;
//!   RU  an action that no reducer's filter matches (the counter added for
//!       "counter/*" only), with the 100,000-item slice present.
//! One `RESULT <TAB> id <TAB> ns <TAB> ns` line per timed run
//! (Benchmarks/report.py). Each timed loop is the function `counted_loop`,
//! followed by "COUNTED <TAB> id <TAB> operations": Benchmarks/callgrind.py
//! counts its instructions with --toggle-collect. Nothing here asserts a
//! timing; a failed call or a wrong state exits non-zero.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use turnstate::{Patch, Reduced, Store};

fn die(what: &str, error: impl std::fmt::Display) -> ! {
    eprintln!("bench_patch: {} failed: {}", what, error);
    std::process::exit(1);
}

/// The todo list of bench.c's todo_slice().
fn todo_slice(items: u64) -> String {
    let mut text = String::with_capacity(items as usize * 96 + 64);
    text.push_str("{\"items\":[");
    for i in 0..items {
        if i > 0 {
            text.push(',');
        }
        text.push_str(&format!(
            "{{\"id\":{},\"title\":\"todo item number {}\",\"done\":false,\"tags\":[\"home\",\"later\"]}}",
            i, i
        ));
    }
    text.push_str("]}");
    text
}

/// The counter of C1 (Benchmarks/c/bench_callbacks.h), as R1 has it.
fn counter(slice: Option<&str>, action: &turnstate::Action<'_>) -> Result<Option<String>, String> {
    match slice {
        None => Ok(Some("0".to_string())),
        Some(count) if action.kind() == "counter/add" => {
            let count: i64 = count.parse().map_err(|_| "count: not an integer")?;
            let by: i64 = action.payload().map_or(Ok(1), |p| p.parse()).map_err(|_| "payload: not an integer")?;
            Ok(Some((count + by).to_string()))
        }
        Some(_) => Ok(None),
    }
}

/// A store of the C1 shape plus "todos" of `items` items (bench.c's
/// todo_store), and its listener's call count.
fn todo_store(items: u64, counter_types: Option<&[&str]>) -> (Store, Arc<AtomicU64>) {
    let store = Store::new("{}").unwrap_or_else(|e| die("Store::new", e));
    match counter_types {
        None => store.add_reducer("count", counter),
        Some(types) => store.add_reducer_for("count", types, |slice, action| {
            counter(slice.map(|slice| slice.as_str()), action).map(Reduced::from)
        }),
    }
    .unwrap_or_else(|e| die("the counter", e));
    let calls = Arc::new(AtomicU64::new(0));
    let counted = calls.clone();
    // Listeners run with the store held: a plain increment, as bench.c's.
    store
        .subscribe(None, move |_| counted.store(counted.load(Ordering::Relaxed) + 1, Ordering::Relaxed))
        .unwrap_or_else(|e| die("subscribe", e));
    store
        .add_patch_reducer("todos", &["todos/*"], move |slice, action| {
            let slice = match slice {
                None => return Ok(Reduced::Slice(todo_slice(items))),
                Some(slice) => slice,
            };
            match action.kind() {
                "todos/toggle" => {
                    let path = format!("/items/{}/done", action.payload_at("/id")?.as_i64()?);
                    let done = slice.at(&path)?.as_bool()?;
                    Ok(Patch::new().replace(&path, if done { "false" } else { "true" }).into())
                }
                "todos/add" => Ok(Patch::new().add("/items/-", action.payload().unwrap_or("null")).into()),
                _ => Ok(Reduced::Unchanged),
            }
        })
        .unwrap_or_else(|e| die("add_patch_reducer", e));
    (store, calls)
}

const TOGGLE_ACTIONS: u64 = 16;

fn toggle_id(i: u64, items: u64) -> u64 {
    (i * items / TOGGLE_ACTIONS + i) % items
}

fn toggle_actions(items: u64) -> Vec<String> {
    (0..TOGGLE_ACTIONS)
        .map(|i| format!(r#"{{"type":"todos/toggle","payload":{{"id":{}}}}}"#, toggle_id(i, items)))
        .collect()
}

/// The timed loop: n dispatches of actions[i % len] (what callgrind counts).
#[inline(never)]
fn counted_loop(store: &Store, actions: &[String], n: u64) {
    for i in 0..n {
        if let Err(error) = store.dispatch(&actions[(i % actions.len() as u64) as usize]) {
            die("dispatch", error);
        }
    }
}

/// Times the loop and checks that every dispatch called the listener; ns
/// per dispatch.
fn time_actions(id: &str, store: &Store, calls: &AtomicU64, actions: &[String], n: u64) -> f64 {
    let before = calls.load(Ordering::Relaxed);
    let start = Instant::now();
    counted_loop(store, actions, n);
    let elapsed = start.elapsed().as_nanos() as f64;
    println!("COUNTED\t{}\t{}", id, n);
    let called = calls.load(Ordering::Relaxed) - before;
    if called != n {
        die("the loop", format!("{} dispatches called the listener {} times", n, called));
    }
    elapsed / n as f64
}

fn check_toggled(store: &Store, items: u64, n: u64, runs: u32) {
    let id = toggle_id(0, items);
    let mut times = 0;
    for i in 0..TOGGLE_ACTIONS {
        if toggle_id(i, items) == id {
            times += n / TOGGLE_ACTIONS + u64::from(i < n % TOGGLE_ACTIONS);
        }
    }
    times *= u64::from(runs);
    let pointer = format!("/todos/items/{}/done", id);
    let got = store.get(&pointer).unwrap_or_else(|e| die("get", e));
    let want = if times % 2 == 1 { "true" } else { "false" };
    if got != want {
        die("the toggles", format!("{} is {} after {} toggles, expected {}", pointer, got, times, want));
    }
}

struct Options {
    runs: u32,
    scale: f64,
    only: Option<String>,
}

impl Options {
    fn scaled(&self, n: u64) -> u64 {
        ((n as f64 * self.scale) as u64).max(1)
    }
    /// Whether --only names this workload ("RP"), one of its rows ("RP-10"), or nothing.
    fn wants(&self, workload: &str) -> bool {
        self.only.as_deref().map_or(true, |only| only.starts_with(workload) || workload.starts_with(only))
    }
}

fn rp(options: &Options) {
    let (small_items, big_items) = (10, 100_000);
    let only_small = options.only.as_deref() == Some("RP-10");
    let only_big = options.only.as_deref() == Some("RP-100k");
    let (small, small_calls) = todo_store(small_items, None);
    let big = if only_small { None } else { Some(todo_store(big_items, None)) };
    let (small_actions, big_actions) = (toggle_actions(small_items), toggle_actions(big_items));
    let (n_small, n_big) = (options.scaled(100_000), options.scaled(2_000).max(16));
    for _ in 0..options.runs {
        let a =
            if only_big { None } else { Some(time_actions("RP-10", &small, &small_calls, &small_actions, n_small)) };
        let b = big.as_ref().map(|(big, calls)| time_actions("RP-100k", big, calls, &big_actions, n_big));
        if let Some(a) = a {
            println!("RESULT\tRP-10\t{:.3}\tns", a);
        }
        if let Some(b) = b {
            println!("RESULT\tRP-100k\t{:.3}\tns", b);
        }
        if let (Some(a), Some(b)) = (a, b) {
            println!("RESULT\tRP-ratio\t{:.3}\tx", b / a);
        }
    }
    if !only_big {
        check_toggled(&small, small_items, n_small, options.runs);
    }
    if let Some((big, _)) = &big {
        check_toggled(big, big_items, n_big, options.runs);
    }
}

fn ra(options: &Options) {
    let action =
        vec![r#"{"type":"todos/add","payload":{"id":-1,"title":"a new todo","done":false,"tags":[]}}"#.to_string()];
    let n = options.scaled(20_000).min(options.scaled(2_000).max(16));
    for _ in 0..options.runs {
        let only = options.only.as_deref();
        // Both stores made before either loop and dropped after both, as
        // bench.c's CA does (the heap each loop runs in is then the same).
        let small = if only == Some("RA-100k") { None } else { Some(todo_store(10, None)) };
        let big = if only == Some("RA-10") { None } else { Some(todo_store(100_000, None)) };
        let a = small.as_ref().map(|(small, calls)| time_actions("RA-10", small, calls, &action, n));
        let b = if let Some((big, calls)) = &big {
            let b = time_actions("RA-100k", big, calls, &action, n);
            let title = big.get("/todos/items/100000/title").unwrap_or_else(|e| die("get", e));
            if title != "\"a new todo\"" {
                die("the appends", format!("the appended item reads {}", title));
            }
            Some(b)
        } else {
            None
        };
        if let Some(a) = a {
            println!("RESULT\tRA-10\t{:.3}\tns", a);
        }
        if let Some(b) = b {
            println!("RESULT\tRA-100k\t{:.3}\tns", b);
        }
        if let (Some(a), Some(b)) = (a, b) {
            println!("RESULT\tRA-ratio\t{:.3}\tx", b / a);
        }
    }
    println!("INFO\tRA: {} appends per run to each list", n);
}

fn ru(options: &Options) {
    let (store, calls) = todo_store(100_000, Some(&["counter/*"]));
    let action = vec![r#"{"type":"session/ping","payload":1}"#.to_string()];
    let n = options.scaled(200_000);
    for _ in 0..options.runs {
        println!("RESULT\tRU\t{:.3}\tns", time_actions("RU", &store, &calls, &action, n));
    }
    if store.get("/count").unwrap_or_else(|e| die("get", e)) != "0" {
        die("RU", "an unhandled action changed the count");
    }
}

fn main() {
    let mut options = Options { runs: 7, scale: 1.0, only: None };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        match (args[i].as_str(), args.get(i + 1)) {
            ("--runs", Some(value)) => options.runs = value.parse().unwrap_or_else(|e| die("--runs", e)),
            ("--scale", Some(value)) => options.scale = value.parse().unwrap_or_else(|e| die("--scale", e)),
            ("--only", Some(value)) => options.only = Some(value.clone()),
            (other, _) => die(
                "arguments",
                format!(
                    "unknown argument {:?} (--runs R, --scale F, --only RP|RA|RU|RP-10|RP-100k|RA-10|RA-100k)",
                    other
                ),
            ),
        }
        i += 2;
    }
    options.runs = options.runs.max(1);
    println!("INFO\tlibturnstate {}", turnstate::version());
    if options.wants("RP") {
        rp(&options);
    }
    if options.wants("RA") {
        ra(&options);
    }
    if options.wants("RU") {
        ru(&options);
    }
    println!("INFO\tRP, RA, RU: bench.c's CP, CA, CU from Rust (safe API, closures), release build");
}
