//! Turnstate from Rust: a safe API over libturnstate's C API
//! (`turnstate-sys`).
//!
//! One [`Store`] holds one state, a JSON object. Reducers (each owning one
//! top-level key), listeners and middleware are Rust closures; the store
//! keeps them (boxed) and frees them when it is dropped (after the dispatch
//! under way, when it is dropped inside one of them: see [`Store`]). JSON
//! crosses the API as text (`&str` in, `String` out): use any JSON library
//! you like on either side; this crate depends on none.
//!
//! ```no_run
//! use turnstate::Store;
//!
//! # fn main() -> Result<(), turnstate::Error> {
//! let store = Store::new(r#"{"todos": []}"#)?;
//! store.add_reducer("count", |slice, action| match slice {
//!     None => Ok(Some("0".to_string())), // the first value
//!     Some(count) if action.kind() == "counter/add" => {
//!         let by: i64 = action.payload().unwrap_or("1").parse().map_err(|_| "payload: not an integer")?;
//!         Ok(Some((count.parse::<i64>().unwrap() + by).to_string()))
//!     }
//!     Some(_) => Ok(None), // unchanged
//! })?;
//! store.dispatch(r#"{"type": "counter/add", "payload": 2}"#)?;
//! assert_eq!(store.get("/count")?, "2");
//! # Ok(())
//! # }
//! ```
//!
//! A reducer that names the action types it handles, reads its slice and
//! payload with the getters (no parser, no copy) and answers with the change
//! alone (an RFC 6902 [`Patch`], applied by the store in place):
//!
//! ```
//! use turnstate::{Patch, Reduced, Store};
//!
//! # fn main() -> Result<(), turnstate::Error> {
//! let store = Store::new("{}")?;
//! store.add_reducer_for("todos", &["todos/add", "todos/toggle"], |slice, action| {
//!     let slice = match slice {
//!         None => return Ok(Reduced::Slice("[]".into())), // the first value
//!         Some(slice) => slice,
//!     };
//!     if action.kind() == "todos/add" {
//!         return Ok(Patch::new().add("/-", action.payload().unwrap_or("null")).into());
//!     }
//!     let done = format!("/{}/done", action.payload_at("/index")?.as_u64()?);
//!     let was = slice.at(&done)?.as_bool()?;
//!     Ok(Patch::new().replace(&done, if was { "false" } else { "true" }).into())
//! })?;
//! store.dispatch(r#"{"type": "todos/add", "payload": {"title": "milk", "done": false}}"#)?;
//! store.dispatch(r#"{"type": "todos/toggle", "payload": {"index": 0}}"#)?;
//! assert_eq!(store.get("/todos/0/done")?, "true");
//! # Ok(())
//! # }
//! ```
//!
//! Rules (those of `turnstate.h`, which this crate keeps):
//! - Every call returns `Result<T, turnstate::Error>`: the library's status
//!   ([`Status`]) and its message (`ts_last_error()`, read on the calling
//!   thread right after the call).
//! - A reducer added with [`Store::add_reducer`] returns `Ok(None)` for
//!   "unchanged", `Ok(Some(json))` for a new slice (copied into memory from
//!   `ts_alloc`, which the store takes over), or `Err(message)` to fail the
//!   dispatch through `ts_reducer_fail`: the dispatch then fails with
//!   [`Status::Reducer`] and the state is unchanged. One added with
//!   [`Store::add_reducer_for`] is called only for the types it names, gets
//!   its slice as a [`JsonText`] and answers with a [`Reduced`] (unchanged,
//!   a new slice, or a [`Patch`]), or `Err(message)`.
//! - The getters ([`JsonText::at`], [`JsonRef`]) read a callback's texts
//!   where they are; their values borrow those texts, so they cannot outlive
//!   the callback.
//! - A panic in a reducer, listener or middleware is caught where the library
//!   called the closure (it never unwinds into C) and turned into an error of
//!   the call that led to it, with [`Status::Panic`]: a reducer's through
//!   `ts_reducer_fail` (the dispatch fails, the state is unchanged), a
//!   middleware's by refusing the action, a listener's after the dispatch
//!   (which was applied: listeners run after the state changed).
//! - [`Store`] is `Send + Sync`: any thread may use it, and the library
//!   serializes the calls on one store. Closures must be `Send + Sync`
//!   because the library may call them on any thread that dispatches (a
//!   plugin's thread too).
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::fmt;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ops::Deref;
use std::os::raw::{c_char, c_void};
use std::os::unix::ffi::OsStrExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::ptr::{self, NonNull};
use std::sync::Mutex;

/// The raw declarations (`turnstate-sys`), for what this API does not cover.
pub use turnstate_sys as sys;

pub mod json;
pub use json::{pointer_token, Iter, JsonRef, JsonString, JsonText, Kind, Members, Patch, Reduced};

// The example of README.md (crates.io shows it) runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// `Result<T, turnstate::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

// ---- Statuses and errors ---------------------------------------------------

/// Why a call failed: one variant per `TS_E_*` status of `turnstate.h`, and
/// [`Status::Panic`] for a Rust callback that panicked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Status {
    /// `TS_E_ARGUMENT`: a NULL or malformed argument (also: text with a NUL byte).
    Argument,
    /// `TS_E_JSON`: invalid JSON (syntax, bad UTF-8, too deep, a key twice).
    Json,
    /// `TS_E_NOT_ACTION`: valid JSON that is not a tagged action.
    NotAction,
    /// `TS_E_REDUCER`: a reducer failed (returned `Err`) or returned invalid JSON.
    Reducer,
    /// `TS_E_REENTRANT`: a reducer called back into its store.
    Reentrant,
    /// `TS_E_PLUGIN`: a plugin could not be loaded or failed.
    Plugin,
    /// `TS_E_IO`: reading or writing a file failed.
    Io,
    /// `TS_E_NOMEM`: out of memory.
    NoMem,
    /// `TS_E_NOT_FOUND`: no value at a JSON Pointer, no such file.
    NotFound,
    /// `TS_E_REJECTED`: a middleware refused the action.
    Rejected,
    /// `TS_E_STORE_GONE`: the store is being destroyed.
    StoreGone,
    /// `TS_E_ABI`: a plugin built for an ABI this library does not speak.
    Abi,
    /// `TS_E_UNKNOWN_ACTION`: a Swift store met an action type it cannot decode.
    UnknownAction,
    /// `TS_E_MISUSE`: a function used against its rules.
    Misuse,
    /// A reducer, listener or middleware written in Rust panicked. Not a
    /// status of the C library: [`Error::code`] tells what the library
    /// returned (`TS_E_REDUCER` for a reducer, `TS_E_REJECTED` for a
    /// middleware, `TS_OK` for a listener, whose dispatch was applied).
    Panic,
    /// A status this crate does not know (a newer library).
    Other(i32),
}

impl Status {
    /// The status of a C status code; `None` for `TS_OK`.
    pub fn from_code(code: sys::ts_status) -> Option<Status> {
        Some(match code {
            sys::TS_OK => return None,
            sys::TS_E_ARGUMENT => Status::Argument,
            sys::TS_E_JSON => Status::Json,
            sys::TS_E_NOT_ACTION => Status::NotAction,
            sys::TS_E_REDUCER => Status::Reducer,
            sys::TS_E_REENTRANT => Status::Reentrant,
            sys::TS_E_PLUGIN => Status::Plugin,
            sys::TS_E_IO => Status::Io,
            sys::TS_E_NOMEM => Status::NoMem,
            sys::TS_E_NOT_FOUND => Status::NotFound,
            sys::TS_E_REJECTED => Status::Rejected,
            sys::TS_E_STORE_GONE => Status::StoreGone,
            sys::TS_E_ABI => Status::Abi,
            sys::TS_E_UNKNOWN_ACTION => Status::UnknownAction,
            sys::TS_E_MISUSE => Status::Misuse,
            other => Status::Other(other),
        })
    }

    /// The C status code (`TS_E_*`). [`Status::Panic`], which has none, gives
    /// `TS_E_REJECTED`: what a middleware that panicked returns to the library.
    pub fn code(self) -> sys::ts_status {
        match self {
            Status::Argument => sys::TS_E_ARGUMENT,
            Status::Json => sys::TS_E_JSON,
            Status::NotAction => sys::TS_E_NOT_ACTION,
            Status::Reducer => sys::TS_E_REDUCER,
            Status::Reentrant => sys::TS_E_REENTRANT,
            Status::Plugin => sys::TS_E_PLUGIN,
            Status::Io => sys::TS_E_IO,
            Status::NoMem => sys::TS_E_NOMEM,
            Status::NotFound => sys::TS_E_NOT_FOUND,
            Status::Rejected => sys::TS_E_REJECTED,
            Status::StoreGone => sys::TS_E_STORE_GONE,
            Status::Abi => sys::TS_E_ABI,
            Status::UnknownAction => sys::TS_E_UNKNOWN_ACTION,
            Status::Misuse => sys::TS_E_MISUSE,
            Status::Panic => sys::TS_E_REJECTED,
            Status::Other(code) => code,
        }
    }

    /// The C name ("TS_E_JSON"), or "panic" for [`Status::Panic`].
    pub fn name(self) -> &'static str {
        match self {
            Status::Panic => "panic",
            Status::Other(_) => "TS_E_UNKNOWN",
            other => unsafe { static_text(sys::ts_status_name(other.code())) },
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed call: the [`Status`], the C status code, and the library's
/// message (what `ts_last_error()` said), or a panic's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    status: Status,
    code: sys::ts_status,
    message: String,
    // The library already holds this error's message (ts_last_error): a
    // middleware that returns it needs no ts_store_api.fail.
    from_library: bool,
}

impl Error {
    /// An error of your own: what a middleware returns to refuse an action
    /// (the dispatcher then gets `status` and `message`).
    pub fn new(status: Status, message: impl Into<String>) -> Error {
        Error { status, code: status.code(), message: message.into(), from_library: false }
    }

    /// `Error::new(Status::Rejected, message)`: a middleware's refusal.
    pub fn rejected(message: impl Into<String>) -> Error {
        Error::new(Status::Rejected, message)
    }

    /// The status.
    pub fn status(&self) -> Status {
        self.status
    }

    /// The C status code that the library returned (`TS_E_*`; `TS_OK` for a
    /// listener's panic).
    pub fn code(&self) -> sys::ts_status {
        self.code
    }

    /// What went wrong, precise enough to act on.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether a Rust callback panicked ([`Status::Panic`]).
    pub fn is_panic(&self) -> bool {
        self.status == Status::Panic
    }

    fn from_code(code: sys::ts_status) -> Error {
        Error {
            status: Status::from_code(code).unwrap_or(Status::Other(code)),
            code,
            message: last_error(),
            from_library: true,
        }
    }

    fn argument(message: String) -> Error {
        Error { status: Status::Argument, code: sys::TS_E_ARGUMENT, message, from_library: false }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status, self.message)
    }
}

impl std::error::Error for Error {}

/// The error's text (`"TS_E_NOT_FOUND: ..."`, as `Display`): so that `?`
/// works on this crate's calls inside a reducer, which fails with a
/// `String`.
impl From<Error> for String {
    fn from(error: Error) -> String {
        error.to_string()
    }
}

/// `ts_last_error()` of the calling thread.
fn last_error() -> String {
    unsafe { CStr::from_ptr(sys::ts_last_error()) }.to_string_lossy().into_owned()
}

/// Static text of the library (a status name, the version).
unsafe fn static_text(text: *const c_char) -> &'static str {
    CStr::from_ptr(text).to_str().unwrap_or("?")
}

/// The version of the loaded library ("0.2.0").
pub fn version() -> &'static str {
    unsafe { static_text(sys::ts_version_string()) }
}

/// The plugins folder of the library this crate was built against
/// (pkg-config's `pluginsdir` of `turnstate`), if it was known then.
pub fn plugins_dir() -> Option<&'static Path> {
    if sys::PLUGINS_DIR.is_empty() {
        None
    } else {
        Some(Path::new(sys::PLUGINS_DIR))
    }
}

// ---- Panics and callbacks: thread-local bookkeeping ------------------------

thread_local! {
    // A panic caught in a callback on this thread, until the call into the
    // library that led to it returns (see `call`).
    static PANIC: Cell<Option<String>> = const { Cell::new(None) };
    // The innermost reducer, listener or middleware call (of any store)
    // under way on this thread; each links to the one it runs inside, so
    // the list says which stores are busy on this thread. Null outside them.
    static CALLBACK: Cell<*const Frame> = const { Cell::new(ptr::null()) };
    // The closures of stores dropped from inside one of their own callbacks
    // on this thread, and whether there are any: the library defers such a
    // destroy until the outermost call into the store returns, and the
    // dispatch under way still calls the store's remaining callbacks. Freed
    // by the first call through this crate that ends on this thread outside
    // every callback (see `call`), or when the thread ends.
    static DEFERRED: RefCell<Vec<Callbacks>> = const { RefCell::new(Vec::new()) };
    static HAS_DEFERRED: Cell<bool> = const { Cell::new(false) };
}

fn record_panic(message: String) {
    PANIC.with(|slot| {
        // The first panic of a call is the one reported.
        let first = slot.take();
        slot.set(Some(first.unwrap_or(message)));
    });
}

/// The text of a panic's payload; drops the payload without letting a panic
/// in its destructor escape.
fn panic_message(payload: Box<dyn Any + Send>) -> String {
    let text = if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "(a panic without a message)".to_string()
    };
    let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
    text
}

/// One callback call under way on this thread (on the trampoline's stack):
/// the store whose callback it is, and the callback it runs inside.
struct Frame {
    store: usize,
    outer: *const Frame,
}

/// Runs `f` as a callback of `store`: listed in CALLBACK while it runs (also
/// if it unwinds).
#[inline(always)]
fn in_callback<R>(store: usize, f: impl FnOnce() -> R) -> R {
    struct Restore(*const Frame);
    impl Drop for Restore {
        fn drop(&mut self) {
            CALLBACK.with(|top| top.set(self.0));
        }
    }
    let frame = Frame { store, outer: CALLBACK.with(|top| top.get()) };
    CALLBACK.with(|top| top.set(&frame));
    let _restore = Restore(frame.outer);
    f()
}

/// Whether any callback runs on this thread.
fn in_any_callback() -> bool {
    !CALLBACK.with(|top| top.get()).is_null()
}

/// Whether a callback of `store` runs on this thread (then the store is
/// busy on it, and a destroy from here is deferred by the library).
fn in_callback_of(store: usize) -> bool {
    let mut frame = CALLBACK.with(|top| top.get());
    while !frame.is_null() {
        // Each frame lives on the stack of a trampoline that has not
        // returned yet (it unlinks itself before it does).
        let current = unsafe { &*frame };
        if current.store == store {
            return true;
        }
        frame = current.outer;
    }
    false
}

/// Frees the closures of stores dropped from inside their own callbacks on
/// this thread: called where no callback runs on it (the library finished
/// those destroys when the outermost call returned).
fn free_deferred() {
    HAS_DEFERRED.with(|flag| flag.set(false));
    // Taken out first: dropping a closure may run code that uses this crate.
    let deferred = DEFERRED.try_with(|list| std::mem::take(&mut *list.borrow_mut())).unwrap_or_default();
    drop(deferred);
}

/// Makes one call into the library and turns its status into a Result. A
/// panic that a callback caught during the call makes it an
/// `Err(Status::Panic)`, even if the library returned TS_OK (a listener).
/// Ending outside every callback, it frees what stores dropped inside their
/// own callbacks left (`DEFERRED`).
fn call(f: impl FnOnce() -> sys::ts_status) -> Result<()> {
    let outer = PANIC.with(|slot| slot.take());
    let code = f();
    let panic = PANIC.with(|slot| slot.replace(outer));
    if HAS_DEFERRED.with(|flag| flag.get()) && !in_any_callback() {
        free_deferred();
    }
    match (code, panic) {
        (sys::TS_OK, None) => Ok(()),
        (code, None) => Err(Error::from_code(code)),
        (code, Some(panic)) => Err(Error {
            status: Status::Panic,
            code,
            message: if code == sys::TS_OK { panic } else { last_error() },
            from_library: true,
        }),
    }
}

// ---- Text across the boundary ----------------------------------------------

/// Calls `f` with `text` as a NUL-terminated C string: copied on the stack
/// when short (no allocation per dispatch), into a CString otherwise.
/// Text with a NUL byte is refused (Status::Argument).
fn with_c_text<R>(text: &str, what: &str, f: impl FnOnce(*const c_char) -> R) -> Result<R> {
    const SHORT: usize = 256;
    let bytes = text.as_bytes();
    if has_nul(bytes) {
        return Err(Error::argument(format!("{} contains a NUL byte", what)));
    }
    if bytes.len() < SHORT {
        let mut buffer = [MaybeUninit::<u8>::uninit(); SHORT];
        unsafe {
            ptr::copy_nonoverlapping(bytes.as_ptr(), buffer.as_mut_ptr() as *mut u8, bytes.len());
            buffer[bytes.len()] = MaybeUninit::new(0);
        }
        Ok(f(buffer.as_ptr() as *const c_char))
    } else {
        let owned = CString::new(bytes).expect("checked for NUL above");
        Ok(f(owned.as_ptr()))
    }
}

fn with_c_path<R>(path: &Path, f: impl FnOnce(*const c_char) -> R) -> Result<R> {
    let owned = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| Error::argument(format!("path {:?} contains a NUL byte", path)))?;
    Ok(f(owned.as_ptr()))
}

/// Text that the library hands to a callback: UTF-8 by the library's rules
/// (strict JSON). A broken promise panics (and is caught as any panic).
unsafe fn borrowed_text<'a>(text: *const c_char) -> &'a str {
    let bytes = CStr::from_ptr(text).to_bytes();
    // Most of what a dispatch hands over (types, numbers, keys) is ASCII:
    // that test is cheaper than the general UTF-8 check.
    if bytes.is_ascii() {
        return std::str::from_utf8_unchecked(bytes);
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => panic!("libturnstate passed text that is not UTF-8: {}", error),
    }
}

extern "C" {
    // The C library's memchr (libturnstate links it): vectorized, and
    // cheaper than a byte loop for the short texts of a dispatch.
    fn memchr(s: *const c_void, c: std::os::raw::c_int, n: usize) -> *mut c_void;
}

/// Whether `bytes` holds a NUL byte (which C text cannot carry).
fn has_nul(bytes: &[u8]) -> bool {
    !bytes.is_empty() && !unsafe { memchr(bytes.as_ptr() as *const c_void, 0, bytes.len()) }.is_null()
}

/// Text for the library to take over (a reducer's result): a copy in memory
/// from ts_alloc, which the store frees. Err: why not.
fn library_copy(text: &str) -> std::result::Result<*mut c_char, String> {
    const SHORT: usize = 32;
    let bytes = text.as_bytes();
    // Short results (numbers, flags, small objects) are checked for NUL
    // while they are copied; longer ones with memchr, then copied.
    if bytes.len() > SHORT && has_nul(bytes) {
        return Err("the reducer returned text with a NUL byte".to_string());
    }
    unsafe {
        let copy = sys::ts_alloc(bytes.len() + 1) as *mut u8;
        if copy.is_null() {
            return Err(format!("no memory for the reducer's {} bytes", bytes.len()));
        }
        if bytes.len() <= SHORT {
            for (at, &byte) in bytes.iter().enumerate() {
                if byte == 0 {
                    sys::ts_free(copy as *mut c_void);
                    return Err("the reducer returned text with a NUL byte".to_string());
                }
                *copy.add(at) = byte;
            }
        } else {
            ptr::copy_nonoverlapping(bytes.as_ptr(), copy, bytes.len());
        }
        *copy.add(bytes.len()) = 0;
        Ok(copy as *mut c_char)
    }
}

/// ts_reducer_fail(message), with NUL bytes (which C text cannot hold) shown
/// as "\0".
fn reducer_fail(message: &str) {
    let text = CString::new(message.replace('\0', "\\0")).expect("no NUL left");
    unsafe {
        sys::ts_reducer_fail(text.as_ptr());
    }
}

/// Takes over text the library returned (`char **`): copies it into a
/// String and frees the original with `free`.
unsafe fn take_text(text: *mut c_char, free: unsafe extern "C" fn(*mut c_void)) -> String {
    let owned = CStr::from_ptr(text).to_string_lossy().into_owned();
    free(text as *mut c_void);
    owned
}

// ---- Actions -----------------------------------------------------------------

/// The action a reducer or middleware receives (valid during the call).
#[derive(Clone, Copy)]
pub struct Action<'a> {
    raw: &'a sys::ts_action,
}

impl<'a> Action<'a> {
    /// The action's "type", unescaped ("todos/add").
    pub fn kind(&self) -> &'a str {
        unsafe { borrowed_text(self.raw.type_) }
    }

    /// The JSON text of "payload" (minified), or None if there is none
    /// (`"payload": null` gives `Some("null")`).
    pub fn payload(&self) -> Option<&'a str> {
        if self.raw.payload.is_null() {
            None
        } else {
            Some(unsafe { borrowed_text(self.raw.payload) })
        }
    }

    /// The whole action as it was dispatched.
    pub fn json(&self) -> &'a str {
        unsafe { borrowed_text(self.raw.json) }
    }

    /// The payload as a [`JsonText`] for the getters (None without one), at
    /// no cost; [`payload_at`](Action::payload_at) is the shortcut.
    pub fn payload_json(&self) -> Option<JsonText<'a>> {
        unsafe { JsonText::from_library(self.raw.payload) }
    }

    /// The value at `pointer` in the payload ("" is the payload itself):
    /// `action.payload_at("/id")?.as_i64()?`. Errors: as [`JsonText::at`];
    /// an action without a payload is [`Status::NotFound`].
    pub fn payload_at(&self, pointer: &str) -> Result<JsonRef<'a>> {
        match self.payload_json() {
            Some(payload) => payload.at(pointer),
            None => Err(Error {
                status: Status::NotFound,
                code: sys::TS_E_NOT_FOUND,
                message: format!("the action \"{}\" has no payload", self.kind()),
                from_library: false,
            }),
        }
    }

    /// The whole action as a [`JsonText`] for the getters.
    pub fn json_text(&self) -> JsonText<'a> {
        unsafe { JsonText::from_library(self.raw.json) }.expect("an action has its JSON text")
    }

    /// The raw C view.
    pub fn as_raw(&self) -> &'a sys::ts_action {
        self.raw
    }
}

impl fmt::Debug for Action<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Action").field("kind", &self.kind()).field("payload", &self.payload()).finish()
    }
}

// ---- The store ---------------------------------------------------------------

/// A borrowed store: what a listener receives, and what [`Store`]
/// dereferences to. It reads and dispatches; adding reducers, listeners and
/// middleware is [`Store`]'s.
#[repr(transparent)]
pub struct StoreRef {
    raw: NonNull<sys::ts_store>,
}

impl StoreRef {
    /// Dispatches `action_json`, a tagged action `{"type": "...",
    /// "payload": ...}`, through the middleware to the reducers, then calls
    /// the listeners. Atomic: on `Err` the state is as it was (except after a
    /// listener's panic: see [`Status::Panic`]).
    pub fn dispatch(&self, action_json: &str) -> Result<()> {
        let raw = self.raw.as_ptr();
        with_c_text(action_json, "the action", |text| call(|| unsafe { sys::ts_store_dispatch(raw, text) }))?
    }

    /// [`dispatch`](StoreRef::dispatch) of text that is already a C string
    /// (a `c"..."` literal, a `CString` kept for repeated dispatches): no copy.
    pub fn dispatch_c(&self, action_json: &CStr) -> Result<()> {
        let raw = self.raw.as_ptr();
        call(|| unsafe { sys::ts_store_dispatch(raw, action_json.as_ptr()) })
    }

    /// The value at an RFC 6901 JSON Pointer ("/todos/0/title"; "" is the
    /// whole state), as minified JSON text.
    pub fn get(&self, json_pointer: &str) -> Result<String> {
        let raw = self.raw.as_ptr();
        let mut out: *mut c_char = ptr::null_mut();
        with_c_text(json_pointer, "the JSON pointer", |pointer| {
            call(|| unsafe { sys::ts_store_get_state(raw, pointer, &mut out) })
        })??;
        Ok(unsafe { take_text(out, sys::ts_free) })
    }

    /// The whole state, as minified JSON text.
    pub fn state(&self) -> Result<String> {
        self.get("")
    }

    /// The C store, for calls through [`sys`]. Valid while the [`Store`] is
    /// (a call made while it is may drop it from a callback: see [`Store`]).
    pub fn as_ptr(&self) -> *mut sys::ts_store {
        self.raw.as_ptr()
    }
}

impl fmt::Debug for StoreRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StoreRef({:p})", self.raw)
    }
}

/// A subscription, for [`Store::unsubscribe`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Subscription(u64);

impl Subscription {
    /// The library's token (never reused).
    pub fn token(self) -> u64 {
        self.0
    }
}

/// The type patterns of a reducer called for every action
/// ([`Store::add_reducer_for`]): an empty list.
pub const EVERY_ACTION: &[&str] = &[];

type Kept = Box<dyn Any + Send + Sync>;

#[derive(Default)]
struct Callbacks {
    // Reducers and middleware: freed with the store.
    kept: Vec<Kept>,
    // Listeners by token: freed by unsubscribe (outside a callback) or with
    // the store.
    listeners: HashMap<u64, Kept>,
}

/// A store: one state (a JSON object), its reducers, listeners and
/// middleware. `Send + Sync`; dropping it destroys the C store (waiting for
/// dispatches under way on other threads, stopping the plugins) and then
/// frees the closures.
///
/// It may be dropped from inside one of its own callbacks (a listener,
/// middleware or reducer taking it out of an `Arc<Mutex<Option<Store>>>`,
/// on the caller's thread or on a plugin's thread such as the delay
/// plugin's worker). The C store then closes at once (every new call,
/// through a `StoreRef` too, fails with [`Status::StoreGone`]), while the
/// dispatch under way finishes: its remaining middleware, reducers and
/// listeners still run (a reducer's result is applied). The library
/// finishes the destroy (the plugins' `destroy()`, its memory) when the
/// outermost call into the store returns, so the closures are kept until
/// then: they are freed by the first call through this crate that returns
/// on that thread outside every callback, or when the thread ends (a
/// plugin's thread, whose dispatch came from C, ends once the store that
/// owned it is gone). This crate sees only the callbacks it registered:
/// code run by a callback registered through [`sys`] must not drop a store
/// that is busy on its thread, nor, after such a drop, call this crate
/// before that store's outermost call returned.
pub struct Store {
    handle: StoreRef,
    callbacks: Mutex<Callbacks>,
}

// The C store may be used from any thread (calls are serialized by the
// library), and every closure it holds is Send + Sync.
unsafe impl Send for Store {}
unsafe impl Sync for Store {}

impl Deref for Store {
    type Target = StoreRef;
    fn deref(&self) -> &StoreRef {
        &self.handle
    }
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Store({:p})", self.handle.raw)
    }
}

// Each box names its store (the address of the C store, as usize: the
// boxes are Send + Sync), for the trampolines' CALLBACK frames.
struct ReducerBox<F> {
    store: usize,
    f: F,
}

struct ListenerBox<F> {
    f: F,
}

struct MiddlewareBox<F> {
    store: usize,
    name: String,
    f: F,
}

struct MigrationBox<F> {
    store: usize,
    f: F,
}

impl Store {
    /// A store whose state is `initial_json`, a JSON object ("{}" for an
    /// empty state).
    pub fn new(initial_json: &str) -> Result<Store> {
        let mut raw: *mut sys::ts_store = ptr::null_mut();
        with_c_text(initial_json, "the initial state", |text| {
            call(|| unsafe { sys::ts_store_create(text, &mut raw) })
        })??;
        Ok(Store {
            handle: StoreRef { raw: NonNull::new(raw).expect("ts_store_create returned TS_OK and no store") },
            callbacks: Mutex::new(Callbacks::default()),
        })
    }

    fn keep(&self, kept: Kept) {
        self.callbacks.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).kept.push(kept);
    }

    /// Adds the reducer that owns the top-level key `key`; reducers run in
    /// the order they were added. `reducer(slice, action)` gets the slice's
    /// JSON text (None for the first call, made at once if the state has no
    /// `key`, with the action "@@turnstate/init") and returns `Ok(None)`
    /// (unchanged), `Ok(Some(json))` (the new slice) or `Err(message)` (the
    /// dispatch fails with [`Status::Reducer`] and that message). It must be
    /// pure: calling back into its store fails the dispatch with
    /// [`Status::Reentrant`].
    pub fn add_reducer<F>(&self, key: &str, reducer: F) -> Result<()>
    where
        F: Fn(Option<&str>, &Action<'_>) -> std::result::Result<Option<String>, String> + Send + Sync + 'static,
    {
        let boxed = Box::new(ReducerBox { store: self.as_ptr() as usize, f: reducer });
        let ctx = &*boxed as *const ReducerBox<F> as *mut c_void;
        let raw = self.as_ptr();
        with_c_text(key, "the key", |key| {
            call(|| unsafe { sys::ts_store_add_reducer(raw, key, Some(reducer_trampoline::<F>), ctx) })
        })??;
        self.keep(boxed);
        Ok(())
    }

    /// Replaces the reducer that owns `key` with `reducer`, keeping the state
    /// (`ts_store_replace_reducer`: hot reload), then dispatches
    /// `{"type": "@@turnstate/replace"}` through the middleware to every
    /// reducer and the listeners. Atomic: if that action fails, the old
    /// reducer is put back and the error returned (`Status::NotFound` when
    /// `key` has no reducer). Both closures are kept until the store is
    /// dropped (a dispatch under way on another thread may still be in the
    /// old one).
    pub fn replace_reducer<F>(&self, key: &str, reducer: F) -> Result<()>
    where
        F: Fn(Option<&str>, &Action<'_>) -> std::result::Result<Option<String>, String> + Send + Sync + 'static,
    {
        let boxed = Box::new(ReducerBox { store: self.as_ptr() as usize, f: reducer });
        let ctx = &*boxed as *const ReducerBox<F> as *mut c_void;
        let raw = self.as_ptr();
        with_c_text(key, "the key", |key| {
            call(|| unsafe { sys::ts_store_replace_reducer(raw, key, Some(reducer_trampoline::<F>), ctx) })
        })??;
        self.keep(boxed);
        Ok(())
    }

    /// Adds the reducer that owns `key`, called only for the action types
    /// that `types` names (`ts_store_add_reducer_for`; Redux Toolkit's case
    /// reducers), and answering with a [`Reduced`]: the slice unchanged, the
    /// whole new slice, or a [`Patch`].
    ///
    /// ```
    /// use turnstate::{Patch, Reduced, Store};
    /// # fn main() -> turnstate::Result<()> {
    /// let store = Store::new("{}")?;
    /// store.add_reducer_for("todos", &["todos/add", "todos/edit/*"], |slice, action| {
    ///     let slice = match slice {
    ///         None => return Ok(Reduced::Slice(r#"{"items":[]}"#.to_string())), // the first value
    ///         Some(slice) => slice,
    ///     };
    ///     match action.kind() {
    ///         "todos/add" => Ok(Patch::new().add("/items/-", action.payload().unwrap_or("null")).into()),
    ///         _ => {
    ///             let id = action.payload_at("/id")?.as_i64()?;
    ///             let done = format!("/items/{}/done", id);
    ///             let was = slice.at(&done)?.as_bool()?;
    ///             Ok(Patch::new().replace(&done, if was { "false" } else { "true" }).into())
    ///         }
    ///     }
    /// })?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// Each pattern of `types` is an action type, matched byte for byte
    /// (`"todos/add"`), or a prefix ending in `"/"` then `"*"`
    /// (`"todos/edit/*"`: every type that starts with `"todos/edit/"` and
    /// has at least one byte more). [`EVERY_ACTION`] (an empty list) means
    /// every action, as [`add_reducer`](Store::add_reducer). The store's own
    /// actions (`"@@turnstate/init"`, `"@@turnstate/replace"`) reach the
    /// reducer whatever it names; for another action that no pattern
    /// matches it is not called and its slice stays as it is. The type
    /// matched is that of the action that reaches the reducers (a
    /// middleware may have changed it).
    ///
    /// `reducer(slice, action)` gets its slice as a [`JsonText`] (None for
    /// the first call, with `"@@turnstate/init"`: return the first value as
    /// [`Reduced::Slice`]), which costs nothing to hand over however large
    /// it is and reads through the store's index ([`JsonText::at`]), and
    /// returns
    /// - `Ok(Reduced::Unchanged)`;
    /// - `Ok(Reduced::Slice(json))`: the new slice;
    /// - `Ok(Reduced::Patch(patch))` (or `Ok(patch.into())`): the change
    ///   (`ts_reducer_patch`); a patch that does not apply fails the dispatch
    ///   with [`Status::Reducer`] and the library's message ("the reducer for
    ///   "todos" returned a patch that failed for "todos/edit/done": op 0
    ///   ("replace" at "/items/7/done"): ..."), the state unchanged;
    /// - `Err(message)`: fails the dispatch, as for `add_reducer` (`?` on
    ///   this crate's errors gives their text).
    ///
    /// Errors: as [`add_reducer`](Store::add_reducer), and
    /// [`Status::Argument`] for a pattern that is empty, has a NUL byte, or
    /// has a `"*"` anywhere but at its end right after a `"/"` (the message
    /// names its index); nothing is added then.
    pub fn add_reducer_for<F>(&self, key: &str, types: &[&str], reducer: F) -> Result<()>
    where
        F: Fn(Option<JsonText<'_>>, &Action<'_>) -> std::result::Result<Reduced, String> + Send + Sync + 'static,
    {
        self.install_reducer_for(sys::ts_store_add_reducer_for, key, types, reducer)
    }

    /// Replaces the reducer that owns `key`, as
    /// [`replace_reducer`](Store::replace_reducer), with one called only for
    /// `types` and answering as in [`add_reducer_for`](Store::add_reducer_for)
    /// (`ts_store_replace_reducer_for`). The filter is the new reducer's,
    /// whatever the old one had ([`EVERY_ACTION`]: every action). The
    /// `"@@turnstate/replace"` action that follows reaches it either way; if
    /// that action fails, the old reducer comes back with its old filter.
    pub fn replace_reducer_for<F>(&self, key: &str, types: &[&str], reducer: F) -> Result<()>
    where
        F: Fn(Option<JsonText<'_>>, &Action<'_>) -> std::result::Result<Reduced, String> + Send + Sync + 'static,
    {
        self.install_reducer_for(sys::ts_store_replace_reducer_for, key, types, reducer)
    }

    fn install_reducer_for<F>(
        &self,
        install: unsafe extern "C" fn(
            *mut sys::ts_store,
            *const c_char,
            *const *const c_char,
            sys::ts_reducer_fn,
            *mut c_void,
        ) -> sys::ts_status,
        key: &str,
        types: &[&str],
        reducer: F,
    ) -> Result<()>
    where
        F: Fn(Option<JsonText<'_>>, &Action<'_>) -> std::result::Result<Reduced, String> + Send + Sync + 'static,
    {
        self.install_filtered(key, types, reducer, |raw, key, types, ctx| unsafe {
            install(raw, key, types, Some(reducer_for_trampoline::<F>), ctx)
        })
    }

    // What add_reducer_for, replace_reducer_for and add_patch_reducer share:
    // boxes the reducer, hands `install` the store, the key, the
    // NULL-terminated patterns of `types` and the box (as its ctx), and
    // keeps the box once that succeeds (dropped on any error).
    fn install_filtered<F: Send + Sync + 'static>(
        &self,
        key: &str,
        types: &[&str],
        reducer: F,
        install: impl FnOnce(*mut sys::ts_store, *const c_char, *const *const c_char, *mut c_void) -> sys::ts_status,
    ) -> Result<()> {
        let boxed = Box::new(ReducerBox { store: self.as_ptr() as usize, f: reducer });
        let ctx = &*boxed as *const ReducerBox<F> as *mut c_void;
        let raw = self.as_ptr();
        let patterns = type_patterns(types)?;
        let mut pointers: Vec<*const c_char> = patterns.iter().map(|pattern| pattern.as_ptr()).collect();
        pointers.push(ptr::null());
        with_c_text(key, "the key", |key| call(|| install(raw, key, pointers.as_ptr(), ctx)))??;
        self.keep(boxed);
        Ok(())
    }

    /// Adds the patch reducer that owns `key` (`ts_store_add_patch_reducer`),
    /// called only for the action types `types` names, as
    /// [`add_reducer_for`](Store::add_reducer_for)'s ([`EVERY_ACTION`]: every
    /// action), answering with a [`Reduced`] as that one does. It gets its
    /// slice as a [`JsonRef`] instead of text (None for the first call, with
    /// `"@@turnstate/init"`: return the first value as [`Reduced::Slice`]),
    /// so that the store never makes the text of a big slice for it: with
    /// [`Patch`] answers, toggling one item of a 100,000-item slice costs
    /// about what it costs in a 10-item one, and so does appending.
    ///
    /// ```
    /// use turnstate::{Patch, Reduced, Store};
    /// # fn main() -> turnstate::Result<()> {
    /// let store = Store::new("{}")?;
    /// store.add_patch_reducer("todos", &["todos/toggle"], |slice, action| {
    ///     let slice = match slice {
    ///         None => return Ok(Reduced::Slice(r#"{"items":[{"done":false}]}"#.to_string())),
    ///         Some(slice) => slice,
    ///     };
    ///     let done = format!("/items/{}/done", action.payload_at("/index")?.as_u64()?);
    ///     let was = slice.at(&done)?.as_bool()?;
    ///     Ok(Patch::new().replace(&done, if was { "false" } else { "true" }).into())
    /// })?;
    /// store.dispatch(r#"{"type": "todos/toggle", "payload": {"index": 0}}"#)?;
    /// assert_eq!(store.get("/todos/items/0/done")?, "true");
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// A slice of 64 KiB or more, and its arrays and objects of 4 KiB or
    /// more, are split ([`JsonRef::is_split`]: kept by the store as a tree
    /// of texts): [`JsonRef::at`], [`get`](JsonRef::get),
    /// [`len`](JsonRef::len), [`iter`](JsonRef::iter),
    /// [`members`](JsonRef::members) and the typed getters read them as any
    /// value, but they have no text of their own: [`JsonRef::text`] is
    /// `None`, [`JsonRef::json`] panics (the dispatch then fails with
    /// [`Status::Panic`]), and [`JsonRef::to_json`] (or `Display`) joins
    /// them, at the cost of their size.
    ///
    /// Errors: as [`add_reducer_for`](Store::add_reducer_for). The C API has
    /// no replace for patch reducers: [`replace_reducer`](Store::replace_reducer)
    /// and [`replace_reducer_for`](Store::replace_reducer_for) replace one
    /// with a reducer of their kind.
    pub fn add_patch_reducer<F>(&self, key: &str, types: &[&str], reducer: F) -> Result<()>
    where
        F: Fn(Option<JsonRef<'_>>, &Action<'_>) -> std::result::Result<Reduced, String> + Send + Sync + 'static,
    {
        self.install_filtered(key, types, reducer, |raw, key, types, ctx| unsafe {
            sys::ts_store_add_patch_reducer(raw, key, types, Some(patch_reducer_trampoline::<F>), ctx)
        })
    }

    /// Removes the reducer that owns `key` (`ts_store_remove_reducer`): its
    /// slice stays in the state, and `{"type": "@@turnstate/replace"}` goes
    /// to the remaining reducers (atomic). `Status::NotFound` when `key` has
    /// no reducer.
    pub fn remove_reducer(&self, key: &str) -> Result<()> {
        let raw = self.as_ptr();
        with_c_text(key, "the key", |key| call(|| unsafe { sys::ts_store_remove_reducer(raw, key) }))?
    }

    /// Removes the middleware added last under `name`
    /// (`ts_store_remove_middleware`); dispatches under way finish with it.
    /// Its closure is kept until the store is dropped. `Status::NotFound`
    /// when no middleware has that name (plugins are not removed this way).
    pub fn remove_middleware(&self, name: &str) -> Result<()> {
        let raw = self.as_ptr();
        with_c_text(name, "the name", |name| call(|| unsafe { sys::ts_store_remove_middleware(raw, name) }))?
    }

    /// Subscribes `listener`. With `json_pointer` None it runs after every
    /// dispatch that reached the reducers; with a pointer ("" is the whole
    /// state), only when the value there changed. It may dispatch and read
    /// the state through the [`StoreRef`] it gets.
    ///
    /// There is no empty listener to refuse here (what the C API answers
    /// with `TS_E_ARGUMENT` for a NULL `fn`, and the C++ header for an empty
    /// `std::function`): a closure or a `fn` pointer is never null, and an
    /// `Option` of one is not a listener. The same holds for reducers and
    /// middleware.
    ///
    /// ```no_run
    /// # let store = turnstate::Store::new("{}").unwrap();
    /// let listener: fn(&turnstate::StoreRef) = |_| {};
    /// store.subscribe(None, listener).unwrap();
    /// ```
    ///
    /// ```compile_fail,E0277
    /// # let store = turnstate::Store::new("{}").unwrap();
    /// let listener: Option<fn(&turnstate::StoreRef)> = None;
    /// store.subscribe(None, listener).unwrap(); // Option<fn> is not Fn(&StoreRef)
    /// ```
    pub fn subscribe<F>(&self, json_pointer: Option<&str>, listener: F) -> Result<Subscription>
    where
        F: Fn(&StoreRef) + Send + Sync + 'static,
    {
        let boxed = Box::new(ListenerBox { f: listener });
        let ctx = &*boxed as *const ListenerBox<F> as *mut c_void;
        let raw = self.as_ptr();
        let mut token = 0u64;
        // The box is not kept yet while the library subscribes (another
        // thread's dispatch may call the listener at once: the box is alive,
        // it is this function's until the end), and no lock is held across
        // the call (a listener of that dispatch may subscribe too).
        let mut subscribe = |pointer: *const c_char| {
            call(|| unsafe { sys::ts_store_subscribe(raw, pointer, Some(listener_trampoline::<F>), ctx, &mut token) })
        };
        match json_pointer {
            None => subscribe(ptr::null())?,
            Some(pointer) => with_c_text(pointer, "the JSON pointer", subscribe)??,
        }
        self.callbacks.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).listeners.insert(token, boxed);
        Ok(Subscription(token))
    }

    /// Ends a subscription (idempotent). The listener is freed now when
    /// this is called outside any listener or middleware, and with the store
    /// otherwise (a dispatch under way on this thread may still call it).
    pub fn unsubscribe(&self, subscription: Subscription) -> Result<()> {
        let raw = self.as_ptr();
        call(|| unsafe { sys::ts_store_unsubscribe(raw, subscription.0) })?;
        // Calls on one store are serialized, so once ts_store_unsubscribe
        // returned no other thread's dispatch can be calling the listener.
        if !in_any_callback() {
            let freed = self
                .callbacks
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .listeners
                .remove(&subscription.0);
            drop(freed);
        }
        Ok(())
    }

    /// Appends a middleware to the chain (the first added runs first).
    /// `middleware(store, next, action)` passes the action on with
    /// `next.pass()` (or a changed one with `next.send(json)`), or refuses it
    /// by returning `Err` (`Error::rejected("why")`) without calling next;
    /// return next's result to report the rest of the dispatch.
    pub fn add_middleware<F>(&self, name: &str, middleware: F) -> Result<()>
    where
        F: Fn(&StoreApi, Next<'_>, &Action<'_>) -> Result<()> + Send + Sync + 'static,
    {
        let boxed = Box::new(MiddlewareBox { store: self.as_ptr() as usize, name: name.to_string(), f: middleware });
        let ctx = &*boxed as *const MiddlewareBox<F> as *mut c_void;
        let raw = self.as_ptr();
        with_c_text(name, "the name", |name| {
            call(|| unsafe { sys::ts_store_add_middleware(raw, name, Some(middleware_trampoline::<F>), ctx) })
        })??;
        self.keep(boxed);
        Ok(())
    }

    /// Loads the middleware plugin at `path` (a shared object written
    /// against turnstate_plugin.h) with its configuration (None means {}),
    /// at the end of the chain. See `ts_store_load_plugin` for the checks.
    pub fn load_plugin(&self, path: impl AsRef<Path>, config_json: Option<&str>) -> Result<()> {
        let raw = self.as_ptr();
        with_c_path(path.as_ref(), |path| match config_json {
            None => call(|| unsafe { sys::ts_store_load_plugin(raw, path, ptr::null()) }),
            Some(config) => with_c_text(config, "the config", |config| {
                call(|| unsafe { sys::ts_store_load_plugin(raw, path, config) })
            })?,
        })?
    }

    /// Loads every "*.so" of the folder `dir` in name order, each with its
    /// NAME.json; all or nothing.
    pub fn load_plugins(&self, dir: impl AsRef<Path>) -> Result<()> {
        let raw = self.as_ptr();
        with_c_path(dir.as_ref(), |dir| call(|| unsafe { sys::ts_store_load_plugins(raw, dir) }))?
    }

    /// Declares the version of the state this store's reducers make
    /// (`ts_store_set_version`; docs/migrations.md). Set it, and add the
    /// migrations, before loading the journal.
    pub fn set_version(&self, version: u32) -> Result<()> {
        let raw = self.as_ptr();
        call(|| unsafe { sys::ts_store_set_version(raw, version) })
    }

    /// The declared version (0 when none was).
    pub fn version(&self) -> Result<u32> {
        let raw = self.as_ptr();
        let mut version = 0u32;
        call(|| unsafe { sys::ts_store_get_version(raw, &mut version) })?;
        Ok(version)
    }

    /// Adds the migration from `from_version` to `from_version + 1`
    /// (`ts_store_add_migration`): `migration(state_json)` gets the whole
    /// state of `from_version` and returns the next version's
    /// (`Ok(json)`), or `Err(message)`: the step fails, and the call that
    /// brought the state in (`replace_state_from`, `load_plugin` of the
    /// journal) fails with [`Status::Reducer`] and
    /// "migration A->B failed: message", nothing loaded. A panic fails it
    /// the same way ([`Error::is_panic`]). It must not call into the store.
    pub fn add_migration<F>(&self, from_version: u32, migration: F) -> Result<()>
    where
        F: Fn(&str) -> std::result::Result<String, String> + Send + Sync + 'static,
    {
        let boxed = Box::new(MigrationBox { store: self.as_ptr() as usize, f: migration });
        let ctx = &*boxed as *const MigrationBox<F> as *mut c_void;
        let raw = self.as_ptr();
        call(|| unsafe { sys::ts_store_add_migration(raw, from_version, Some(migration_trampoline::<F>), ctx) })?;
        self.keep(boxed);
        Ok(())
    }

    /// Replaces the whole state with `state_json`, saved at `version`,
    /// migrated to this store's version first
    /// (`ts_store_replace_state_from`): all or nothing. A downgrade is
    /// [`Status::Argument`], a missing step [`Status::NotFound`], a failed
    /// migration [`Status::Reducer`].
    pub fn replace_state_from(&self, state_json: &str, version: u32) -> Result<()> {
        let raw = self.as_ptr();
        with_c_text(state_json, "the state", |text| {
            call(|| unsafe { sys::ts_store_replace_state_from(raw, text, version) })
        })?
    }
}

unsafe extern "C" fn migration_trampoline<F>(
    state_json: *const c_char,
    ctx: *mut c_void,
    error_message: *mut *mut c_char,
) -> *mut c_char
where
    F: Fn(&str) -> std::result::Result<String, String> + Send + Sync + 'static,
{
    let boxed = &*(ctx as *const MigrationBox<F>);
    let outcome = in_callback(boxed.store, || catch_unwind(AssertUnwindSafe(|| (boxed.f)(borrowed_text(state_json)))));
    let failure = match outcome {
        Ok(Ok(json)) => match library_copy(&json) {
            Ok(copy) => return copy,
            Err(why) => why,
        },
        Ok(Err(message)) => message,
        Err(payload) => panicked(payload),
    };
    if let Ok(text) = CString::new(failure) {
        *error_message = sys::ts_strdup(text.as_ptr());
    }
    ptr::null_mut()
}

impl Drop for Store {
    fn drop(&mut self) {
        let raw = self.handle.raw.as_ptr();
        let callbacks = std::mem::take(self.callbacks.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner()));
        // Dropped inside one of its own callbacks, the store is busy on this
        // thread: ts_store_destroy closes it at once, but the library
        // finishes the destroy only when the outermost call into the store
        // returns, and until then the dispatch under way still calls its
        // remaining middleware, reducers and listeners: their closures wait
        // in DEFERRED (freed where this thread runs no callback, or when it
        // ends).
        let deferred = in_callback_of(raw as usize);
        unsafe { sys::ts_store_destroy(raw) }
        if !deferred {
            // Destroyed: no callback of it runs any more, on any thread.
            drop(callbacks);
            return;
        }
        let mut kept = Some(callbacks);
        let _ = DEFERRED.try_with(|list| {
            if let Ok(mut list) = list.try_borrow_mut() {
                list.push(kept.take().expect("taken once"));
                HAS_DEFERRED.with(|flag| flag.set(true));
            }
        });
        if let Some(callbacks) = kept {
            // No list to keep them in (cannot happen inside a callback):
            // kept for ever rather than freed too early.
            std::mem::forget(callbacks);
        }
    }
}

unsafe extern "C" fn reducer_trampoline<F>(
    slice: *const c_char,
    action: *const sys::ts_action,
    ctx: *mut c_void,
) -> *mut c_char
where
    F: Fn(Option<&str>, &Action<'_>) -> std::result::Result<Option<String>, String> + Send + Sync + 'static,
{
    let boxed = &*(ctx as *const ReducerBox<F>);
    let outcome = in_callback(boxed.store, || {
        catch_unwind(AssertUnwindSafe(|| {
            let slice = if slice.is_null() { None } else { Some(borrowed_text(slice)) };
            (boxed.f)(slice, &Action { raw: &*action })
        }))
    });
    hand_over(outcome.map(|answer| answer.map(|slice| slice.map_or(Reduced::Unchanged, Reduced::Slice))))
}

/// The type patterns as C strings (the library copies them; the caller
/// ends the list of their pointers with NULL).
fn type_patterns(types: &[&str]) -> Result<Vec<CString>> {
    let mut patterns = Vec::with_capacity(types.len());
    for (index, pattern) in types.iter().enumerate() {
        patterns.push(
            CString::new(*pattern)
                .map_err(|_| Error::argument(format!("type pattern {} ({:?}) contains a NUL byte", index, pattern)))?,
        );
    }
    Ok(patterns)
}

unsafe extern "C" fn patch_reducer_trampoline<F>(
    slice: *const sys::ts_json,
    action: *const sys::ts_action,
    ctx: *mut c_void,
) -> *mut c_char
where
    F: Fn(Option<JsonRef<'_>>, &Action<'_>) -> std::result::Result<Reduced, String> + Send + Sync + 'static,
{
    let boxed = &*(ctx as *const ReducerBox<F>);
    let outcome = in_callback(boxed.store, || {
        catch_unwind(AssertUnwindSafe(|| {
            let slice = if slice.is_null() { None } else { Some(JsonRef::from_library(&*slice)) };
            (boxed.f)(slice, &Action { raw: &*action })
        }))
    });
    hand_over(outcome)
}

unsafe extern "C" fn reducer_for_trampoline<F>(
    slice: *const c_char,
    action: *const sys::ts_action,
    ctx: *mut c_void,
) -> *mut c_char
where
    F: Fn(Option<JsonText<'_>>, &Action<'_>) -> std::result::Result<Reduced, String> + Send + Sync + 'static,
{
    let boxed = &*(ctx as *const ReducerBox<F>);
    let outcome = in_callback(boxed.store, || {
        catch_unwind(AssertUnwindSafe(|| (boxed.f)(JsonText::from_library(slice), &Action { raw: &*action })))
    });
    hand_over(outcome)
}

/// A reducer's answer (or its panic), handed to the store: NULL (unchanged,
/// after `ts_reducer_patch`, or after `ts_reducer_fail`) or the new slice in
/// `ts_alloc` memory.
unsafe fn hand_over(
    outcome: std::result::Result<std::result::Result<Reduced, String>, Box<dyn Any + Send>>,
) -> *mut c_char {
    let failure = match outcome {
        Ok(Ok(Reduced::Unchanged)) => return ptr::null_mut(),
        Ok(Ok(Reduced::Slice(json))) => match library_copy(&json) {
            Ok(copy) => return copy,
            Err(why) => why,
        },
        Ok(Ok(Reduced::Patch(patch))) => {
            let mut text = patch.into_json();
            if has_nul(text.as_bytes()) {
                "the reducer's patch contains a NUL byte".to_string()
            } else {
                text.push('\0');
                // A patch that the library refuses (not JSON, not an array,
                // the init call) fails this reducer call there and then, with
                // its message: nothing more to do here.
                sys::ts_reducer_patch(text.as_ptr() as *const c_char);
                return ptr::null_mut();
            }
        }
        Ok(Err(message)) => message,
        Err(payload) => panicked(payload),
    };
    reducer_fail(&failure);
    ptr::null_mut()
}

/// A callback's panic as the failure it becomes: its message, also recorded
/// as the call's panic (`record_panic`, the first one of a call is reported).
fn panicked(payload: Box<dyn Any + Send>) -> String {
    let message = format!("panicked: {}", panic_message(payload));
    record_panic(message.clone());
    message
}

unsafe extern "C" fn listener_trampoline<F>(store: *mut sys::ts_store, ctx: *mut c_void)
where
    F: Fn(&StoreRef) + Send + Sync + 'static,
{
    let boxed = &*(ctx as *const ListenerBox<F>);
    let raw = match NonNull::new(store) {
        Some(raw) => raw,
        None => return,
    };
    let handle = StoreRef { raw };
    in_callback(store as usize, || {
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| (boxed.f)(&handle))) {
            record_panic(format!("a listener panicked: {} (the action was applied)", panic_message(payload)));
        }
    })
}

unsafe extern "C" fn middleware_trampoline<F>(
    api: *const sys::ts_store_api,
    next: sys::ts_next_fn,
    action: *const sys::ts_action,
    ctx: *mut c_void,
) -> sys::ts_status
where
    F: Fn(&StoreApi, Next<'_>, &Action<'_>) -> Result<()> + Send + Sync + 'static,
{
    let boxed = &*(ctx as *const MiddlewareBox<F>);
    let table = StoreApi { raw: &*api };
    let action = Action { raw: &*action };
    let next = Next { next, json: action.raw.json, _call_once_here: PhantomData };
    match in_callback(boxed.store, || catch_unwind(AssertUnwindSafe(|| (boxed.f)(&table, next, &action)))) {
        Ok(Ok(())) => sys::TS_OK,
        Ok(Err(error)) if error.from_library && error.code < 0 => error.code,
        Ok(Err(error)) => {
            let code = if error.code < 0 { error.code } else { sys::TS_E_REJECTED };
            table.fail(code, &error.message)
        }
        Err(payload) => {
            let message = format!("middleware \"{}\" panicked: {}", boxed.name, panic_message(payload));
            record_panic(message.clone());
            table.fail(sys::TS_E_REJECTED, &message)
        }
    }
}

// ---- Middleware's view -------------------------------------------------------

/// The store as a middleware sees it (the C `ts_store_api` table), during
/// its call.
pub struct StoreApi {
    raw: *const sys::ts_store_api,
}

impl StoreApi {
    fn table(&self) -> &sys::ts_store_api {
        unsafe { &*self.raw }
    }

    /// Dispatches from the top of the chain (a new action), as
    /// [`StoreRef::dispatch`].
    pub fn dispatch(&self, action_json: &str) -> Result<()> {
        let dispatch = self.table().dispatch.ok_or_else(missing_function)?;
        with_c_text(action_json, "the action", |text| code_result(unsafe { dispatch(text) }))?
    }

    /// Reads the state, as [`StoreRef::get`].
    pub fn get(&self, json_pointer: &str) -> Result<String> {
        let table = self.table();
        let get_state = table.get_state.ok_or_else(missing_function)?;
        let free = table.free.ok_or_else(missing_function)?;
        let mut out: *mut c_char = ptr::null_mut();
        with_c_text(json_pointer, "the JSON pointer", |pointer| code_result(unsafe { get_state(pointer, &mut out) }))??;
        Ok(unsafe { take_text(out, free) })
    }

    /// The whole state.
    pub fn state(&self) -> Result<String> {
        self.get("")
    }

    /// Replaces the whole state (a JSON object) without middleware or
    /// reducers, then calls the listeners.
    pub fn replace_state(&self, state_json: &str) -> Result<()> {
        let replace = self.table().replace_state.ok_or_else(missing_function)?;
        with_c_text(state_json, "the state", |text| code_result(unsafe { replace(text) }))?
    }

    fn fail(&self, code: sys::ts_status, message: &str) -> sys::ts_status {
        let text = CString::new(message.replace('\0', "\\0")).expect("no NUL left");
        match self.table().fail {
            Some(fail) => unsafe { fail(code, text.as_ptr()) },
            None => code,
        }
    }
}

fn missing_function() -> Error {
    Error::new(Status::Misuse, "the library's ts_store_api table has no such function")
}

fn code_result(code: sys::ts_status) -> Result<()> {
    if code == sys::TS_OK {
        Ok(())
    } else {
        Err(Error::from_code(code))
    }
}

/// The rest of the middleware chain, for one action: call it at most once
/// (it is consumed), during the middleware's call, on its thread.
pub struct Next<'a> {
    next: sys::ts_next_fn,
    json: *const c_char,
    // Not Send, not kept: valid only during this middleware call.
    _call_once_here: PhantomData<&'a *const ()>,
}

impl Next<'_> {
    /// Passes the action received on, unchanged (no new parse).
    pub fn pass(self) -> Result<()> {
        match self.next {
            Some(next) => code_result(unsafe { next(self.json) }),
            None => Err(missing_function()),
        }
    }

    /// Passes `action_json`, another tagged action, on instead.
    pub fn send(self, action_json: &str) -> Result<()> {
        match self.next {
            Some(next) => with_c_text(action_json, "the action", |text| code_result(unsafe { next(text) }))?,
            None => Err(missing_function()),
        }
    }
}
