//! The reducers of the Rust flight-recorder program (src/main.rs) and
//! `ts_testgen_setup`, which adds the very same functions to a C store: the
//! setup function turnstate-testgen names (docs/testgen.md), so a test made of
//! the recorder's dump replays the program's own Rust reducers.
//!
//! - `count`: "counter/inc" adds 1;
//! - `session`: "secret/login" keeps its payload (a secret token);
//! - `items`: "items/add" appends its payload; "items/boom" fails ("boom is
//!   not handled"), unless built with the feature `bug_fixed`.
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

use turnstate::sys;

/// A reducer: the slice's JSON text (None: give the first value), the
/// action's type and payload; the new slice, None for "unchanged", or why it
/// failed.
pub type Reducer = fn(Option<&str>, &str, Option<&str>) -> Result<Option<String>, String>;

pub fn count(slice: Option<&str>, kind: &str, _payload: Option<&str>) -> Result<Option<String>, String> {
    match slice {
        None => Ok(Some("0".to_string())),
        Some(text) if kind == "counter/inc" => {
            let value: i64 = text.parse().map_err(|_| format!("count {} is not an integer", text))?;
            Ok(Some((value + 1).to_string()))
        }
        Some(_) => Ok(None),
    }
}

pub fn session(slice: Option<&str>, kind: &str, payload: Option<&str>) -> Result<Option<String>, String> {
    match slice {
        None => Ok(Some(r#"{"token":null}"#.to_string())),
        Some(_) if kind == "secret/login" => Ok(payload.map(str::to_string)),
        Some(_) => Ok(None),
    }
}

pub fn items(slice: Option<&str>, kind: &str, payload: Option<&str>) -> Result<Option<String>, String> {
    let slice = match slice {
        None => return Ok(Some("[]".to_string())),
        Some(slice) => slice,
    };
    if cfg!(not(feature = "bug_fixed")) && kind == "items/boom" {
        return Err("boom is not handled".to_string());
    }
    match payload {
        Some(item) if kind == "items/add" => {
            let body = slice.trim_end().strip_suffix(']').ok_or_else(|| format!("items {} is not an array", slice))?;
            let separator = if body.trim() == "[" { "" } else { "," };
            Ok(Some(format!("{}{}{}]", body, separator, item)))
        }
        _ => Ok(None),
    }
}

/// The program's reducers, by the key each owns, in the order they are added.
pub const REDUCERS: [(&str, Reducer); 3] = [("count", count), ("session", session), ("items", items)];

unsafe fn text<'a>(pointer: *const c_char) -> Option<&'a str> {
    if pointer.is_null() {
        None
    } else {
        CStr::from_ptr(pointer).to_str().ok()
    }
}

unsafe fn fail(message: &str) -> *mut c_char {
    let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
    sys::ts_reducer_fail(message.as_ptr());
    ptr::null_mut()
}

/// One of REDUCERS (ctx: its index) as a C reducer (ts_reducer_fn).
unsafe extern "C" fn c_reducer(slice: *const c_char, action: *const sys::ts_action, ctx: *mut c_void) -> *mut c_char {
    let reducer = REDUCERS[ctx as usize].1;
    let action = &*action;
    let answer =
        catch_unwind(AssertUnwindSafe(|| reducer(text(slice), text(action.type_).unwrap_or(""), text(action.payload))));
    match answer {
        Ok(Ok(Some(out))) => match CString::new(out) {
            Ok(out) => sys::ts_strdup(out.as_ptr()),
            Err(_) => fail("the reducer gave text with a NUL in it"),
        },
        Ok(Ok(None)) => ptr::null_mut(),
        Ok(Err(message)) => fail(&message),
        Err(_) => fail("the reducer panicked"),
    }
}

/// Adds REDUCERS to `store` (turnstate-testgen's setup function).
///
/// # Safety
/// `store` is a live store, as turnstate-testgen's tests give it.
#[no_mangle]
pub unsafe extern "C" fn ts_testgen_setup(store: *mut sys::ts_store) -> sys::ts_status {
    for (index, (key, _)) in REDUCERS.iter().enumerate() {
        let key = CString::new(*key).expect("the keys have no NUL");
        let status = sys::ts_store_add_reducer(store, key.as_ptr(), Some(c_reducer), index as *mut c_void);
        if status != sys::TS_OK {
            return status;
        }
    }
    sys::TS_OK
}
