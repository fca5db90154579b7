//! R1 of `make bench`: the C1 loop of Benchmarks/c/bench.c (a counter slice,
//! one listener called after every dispatch, `dispatch` in a loop) driven
//! from Rust. Build it in release mode:
//!
//!     cargo run --release --offline --example bench_r1 -- [--runs R] [--scale F]
//!
//! Two variants, one `RESULT <TAB> id <TAB> ns <TAB> ns` line per timed run
//! (Benchmarks/report.py reads them):
//!   R1      the safe API: the reducer and the listener are Rust closures
//!           (`Store::add_reducer`, `Store::subscribe`), the action a `&str`:
//!           what the binding adds per dispatch, next to C1.
//!   R1-c    R1 with `dispatch_c` (the action a `&CStr`, as C1's is a C
//!           string literal: no copy to NUL-terminate it).
//!   R1-sys  the same through `turnstate-sys` with `extern "C"` callbacks, as
//!           a C program would: the floor that R1 is measured against.
//! `--only ID` runs one of them.
//! Nothing here asserts a timing; a failed call or a lost update exits non-zero.
use std::ffi::CStr;
use std::os::raw::{c_char, c_void};
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use turnstate::{sys, Store};

const ADD: &str = r#"{"type":"counter/add","payload":1}"#;
const ADD_C: &[u8] = b"{\"type\":\"counter/add\",\"payload\":1}\0";

fn die(what: &str, error: impl std::fmt::Display) -> ! {
    eprintln!("bench_r1: {} failed: {}", what, error);
    std::process::exit(1);
}

/// Writes `value` in decimal into `out` (the digit loop of the C benchmark's
/// reducer, Benchmarks/c/bench_callbacks.h: R1, R1-sys and C1 do the
/// same work in their callbacks, so that the difference is the binding's);
/// returns the length.
fn decimal(value: i64, out: &mut [u8; 24]) -> usize {
    let mut digits = [0u8; 20];
    let mut n = 0;
    let mut magnitude = value.unsigned_abs();
    loop {
        digits[n] = b'0' + (magnitude % 10) as u8;
        n += 1;
        magnitude /= 10;
        if magnitude == 0 {
            break;
        }
    }
    let mut at = 0;
    if value < 0 {
        out[at] = b'-';
        at += 1;
    }
    while n > 0 {
        n -= 1;
        out[at] = digits[n];
        at += 1;
    }
    at
}

/// Parses a small decimal integer: the C benchmark's bench_parse_ll (no
/// overflow or syntax checks: the store's own text and the fixed payload).
fn parse_ll(text: &[u8]) -> i64 {
    let (sign, digits) = match text.first() {
        Some(b'-') => (-1, &text[1..]),
        _ => (1, text),
    };
    let mut value = 0i64;
    for &byte in digits {
        if !byte.is_ascii_digit() {
            break;
        }
        value = value * 10 + (byte - b'0') as i64;
    }
    sign * value
}

fn count_of(text: &str) -> i64 {
    text.parse().unwrap_or_else(|_| die("reading /count", text))
}

/// Times n dispatches after a warm-up of n/10, checks that each counted;
/// ns per dispatch.
fn time_dispatches(dispatch: &dyn Fn(), count: &dyn Fn() -> i64, calls: &AtomicU64, n: u64) -> f64 {
    for _ in 0..n / 10 {
        dispatch();
    }
    let (before, calls_before) = (count(), calls.load(Ordering::Relaxed));
    let start = Instant::now();
    for _ in 0..n {
        dispatch();
    }
    let elapsed = start.elapsed().as_nanos() as f64;
    let (after, calls_after) = (count(), calls.load(Ordering::Relaxed));
    if after - before != n as i64 || calls_after - calls_before != n {
        die(
            "the loop",
            format!(
                "{} dispatches moved the count by {} and called the listener {} times",
                n,
                after - before,
                calls_after - calls_before
            ),
        );
    }
    elapsed / n as f64
}

fn safe_api(runs: u32, n: u64, c_text: bool) {
    let store = Store::new("{}").unwrap_or_else(|e| die("Store::new", e));
    let id = if c_text { "R1-c" } else { "R1" };
    store
        .add_reducer("count", |slice, action| match slice {
            None => Ok(Some("0".to_string())),
            Some(count) if action.kind() == "counter/add" => {
                let count = parse_ll(count.as_bytes());
                let by = action.payload().map_or(1, |payload| parse_ll(payload.as_bytes()));
                let mut digits = [0u8; 24];
                let length = decimal(count + by, &mut digits);
                Ok(Some(std::str::from_utf8(&digits[..length]).map_err(|_| "digits")?.to_owned()))
            }
            Some(_) => Ok(None),
        })
        .unwrap_or_else(|e| die("add_reducer", e));
    let calls = Arc::new(AtomicU64::new(0));
    let counter = calls.clone();
    // Listeners run with the store held: a load and a store (no atomic
    // read-modify-write) is the C benchmark's plain increment.
    store
        .subscribe(None, move |_| counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed))
        .unwrap_or_else(|e| die("subscribe", e));
    let add = CStr::from_bytes_with_nul(ADD_C).unwrap();
    let dispatch = || {
        let dispatched = if c_text { store.dispatch_c(add) } else { store.dispatch(ADD) };
        dispatched.unwrap_or_else(|e| die("dispatch", e))
    };
    let count = || count_of(&store.get("/count").unwrap_or_else(|e| die("get", e)));
    for _ in 0..runs {
        println!("RESULT\t{}\t{:.3}\tns", id, time_dispatches(&dispatch, &count, &calls, n));
    }
}

unsafe fn parse_c(text: *const c_char) -> i64 {
    parse_ll(CStr::from_ptr(text).to_bytes())
}

unsafe extern "C" fn sys_reducer(slice: *const c_char, action: *const sys::ts_action, _: *mut c_void) -> *mut c_char {
    if slice.is_null() {
        return sys::ts_strdup(b"0\0".as_ptr() as *const c_char);
    }
    let action = &*action;
    if CStr::from_ptr(action.type_).to_bytes() != b"counter/add" {
        return ptr::null_mut();
    }
    let by = if action.payload.is_null() { 1 } else { parse_c(action.payload) };
    let mut digits = [0u8; 24];
    let length = decimal(parse_c(slice) + by, &mut digits);
    let out = sys::ts_alloc(length + 1) as *mut u8;
    if !out.is_null() {
        ptr::copy_nonoverlapping(digits.as_ptr(), out, length);
        *out.add(length) = 0;
    }
    out as *mut c_char
}

unsafe extern "C" fn sys_listener(_: *mut sys::ts_store, ctx: *mut c_void) {
    let calls = &*(ctx as *const AtomicU64);
    calls.store(calls.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

fn raw_api(runs: u32, n: u64) {
    unsafe {
        let check = |what: &str, status: sys::ts_status| {
            if status != sys::TS_OK {
                die(what, CStr::from_ptr(sys::ts_last_error()).to_string_lossy());
            }
        };
        let mut store = ptr::null_mut();
        check("ts_store_create", sys::ts_store_create(ptr::null(), &mut store));
        check(
            "ts_store_add_reducer",
            sys::ts_store_add_reducer(store, b"count\0".as_ptr() as *const c_char, Some(sys_reducer), ptr::null_mut()),
        );
        let calls = AtomicU64::new(0);
        let mut token = 0;
        check(
            "ts_store_subscribe",
            sys::ts_store_subscribe(
                store,
                ptr::null(),
                Some(sys_listener),
                &calls as *const AtomicU64 as *mut c_void,
                &mut token,
            ),
        );
        let dispatch = || check("ts_store_dispatch", sys::ts_store_dispatch(store, ADD_C.as_ptr() as *const c_char));
        let count = || {
            let mut out = ptr::null_mut();
            check(
                "ts_store_get_state",
                sys::ts_store_get_state(store, b"/count\0".as_ptr() as *const c_char, &mut out),
            );
            let value = parse_c(out);
            sys::ts_free(out as *mut c_void);
            value
        };
        for _ in 0..runs {
            println!("RESULT\tR1-sys\t{:.3}\tns", time_dispatches(&dispatch, &count, &calls, n));
        }
        sys::ts_store_destroy(store);
    }
}

fn main() {
    let mut runs = 7u32;
    let mut scale = 1.0f64;
    let mut only: Option<String> = None;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        match (args[i].as_str(), args.get(i + 1)) {
            ("--runs", Some(value)) => runs = value.parse().unwrap_or_else(|e| die("--runs", e)),
            ("--scale", Some(value)) => scale = value.parse().unwrap_or_else(|e| die("--scale", e)),
            ("--only", Some(value)) => only = Some(value.clone()),
            (other, _) => {
                die("arguments", format!("unknown argument {:?} (--runs R, --scale F, --only R1|R1-c|R1-sys)", other))
            }
        }
        i += 2;
    }
    // The same loop count as C1 (200,000 dispatches per timed run).
    let n = ((200_000.0 * scale) as u64).max(10);
    // Alternating runs of the two variants would interleave their warm-ups;
    // each runs whole, R1 first, in one process.
    if only.as_deref().map_or(true, |only| only == "R1") {
        safe_api(runs, n, false);
    }
    if only.as_deref().map_or(true, |only| only == "R1-c") {
        safe_api(runs, n, true);
    }
    if only.as_deref().map_or(true, |only| only == "R1-sys") {
        raw_api(runs, n);
    }
    println!("INFO\tR1: the C1 loop from Rust, release build (cargo --release); R1-sys through turnstate-sys");
}
