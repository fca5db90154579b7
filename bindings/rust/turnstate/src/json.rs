//! Reading JSON without a parser of your own (the `ts_json_*` getters of
//! `turnstate.h`), and writing the changes a reducer answers with
//! ([`Patch`], [`Reduced`]).
//!
//! A reducer added with [`Store::add_reducer_for`](crate::Store::add_reducer_for)
//! gets its slice as a [`JsonText`], and every [`Action`](crate::Action) has
//! [`payload_json`](crate::Action::payload_json) and
//! [`payload_at`](crate::Action::payload_at). Look values up by RFC 6901
//! JSON Pointer and read them as Rust values:
//!
//! ```no_run
//! # fn reducer(slice: turnstate::JsonText<'_>, action: &turnstate::Action<'_>) -> turnstate::Result<()> {
//! let id = action.payload_at("/id")?.as_i64()?;
//! let items = slice.at("/items")?;
//! for item in items.iter()? {
//!     let title = item.at("/title")?.as_str()?; // Cow<str>: borrowed unless it has escapes
//!     println!("{}: {}", id, title);
//! }
//! # Ok(())
//! # }
//! ```
//!
//! The texts the library hands to a callback are read where they are: no
//! copy, no re-parse (a reducer's slice through the index the store keeps
//! of it, so a look-up in a large slice costs about the same as in a small
//! one). Values borrow the text they were found in: the lifetimes keep them
//! from outliving the callback.
//!
//! ```compile_fail,E0521
//! use std::cell::RefCell;
//! thread_local! { static KEPT: RefCell<Option<turnstate::JsonRef<'static>>> = RefCell::new(None); }
//! let store = turnstate::Store::new("{}").unwrap();
//! store.add_reducer_for("n", turnstate::EVERY_ACTION, |slice, _action| {
//!     if let Some(slice) = slice {
//!         let value = slice.root()?;
//!         KEPT.with(|kept| *kept.borrow_mut() = Some(value)); // the slice does not live that long
//!     }
//!     Ok(turnstate::Reduced::Unchanged)
//! }).unwrap();
//! ```
//!
//! ```compile_fail,E0521
//! use std::sync::Mutex;
//! static KEPT: Mutex<Option<turnstate::JsonText<'static>>> = Mutex::new(None);
//! let store = turnstate::Store::new("{}").unwrap();
//! store.add_reducer_for("n", turnstate::EVERY_ACTION, |slice, _action| {
//!     *KEPT.lock().unwrap() = slice; // nor does the text itself
//!     Ok(turnstate::Reduced::Unchanged)
//! }).unwrap();
//! ```
use std::borrow::Cow;
use std::ffi::{CStr, CString};
use std::fmt;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::os::raw::c_char;
use std::ptr::{self, NonNull};

use crate::{borrowed_text, sys, with_c_text, Error, Result, Status};

fn status(code: sys::ts_status) -> Result<()> {
    if code == sys::TS_OK {
        Ok(())
    } else {
        Err(Error::from_code(code))
    }
}

// ---- Texts ---------------------------------------------------------------------

/// A whole JSON text that ends in a NUL byte, borrowed: a reducer's slice,
/// an action's payload or the action itself (valid during the callback
/// that received it), or the text of a [`JsonString`].
///
/// It is a pointer, nothing more: getting one costs nothing, whatever the
/// size of the text. [`at`](JsonText::at) looks a value up without copying
/// the text; [`as_str`](JsonText::as_str) (and `Display`) first measure
/// the text, which costs its length.
#[derive(Clone, Copy)]
pub struct JsonText<'a> {
    text: NonNull<c_char>,
    _text: PhantomData<&'a str>,
}

// Immutable text, as &str: reading it from another thread is safe (there
// the library does not recognise it as a callback's text and validates it).
unsafe impl Send for JsonText<'_> {}
unsafe impl Sync for JsonText<'_> {}

impl<'a> JsonText<'a> {
    /// A text the library handed over (NUL-terminated, valid JSON, UTF-8),
    /// valid for 'a. None for a null pointer.
    pub(crate) unsafe fn from_library(text: *const c_char) -> Option<JsonText<'a>> {
        NonNull::new(text as *mut c_char).map(|text| JsonText { text, _text: PhantomData })
    }

    /// The value at the RFC 6901 JSON Pointer `pointer` ("" is the whole
    /// text; "/items/0/title"), as `ts_json_at`. Errors: [`Status::NotFound`]
    /// (no value there; the message names the missing token and the path up
    /// to it), [`Status::Argument`] (a malformed pointer, or one with a NUL
    /// byte), [`Status::NoMem`]. (Never [`Status::Json`]: the library's texts
    /// and a [`JsonString`]'s are valid JSON.)
    pub fn at(&self, pointer: &str) -> Result<JsonRef<'a>> {
        let mut out = MaybeUninit::<sys::ts_json>::uninit();
        let text = self.text.as_ptr();
        with_c_text(pointer, "the JSON pointer", |pointer| {
            status(unsafe { sys::ts_json_at(text, pointer, out.as_mut_ptr()) })
        })??;
        Ok(JsonRef { raw: unsafe { out.assume_init() }, _text: PhantomData })
    }

    /// The whole text as a value (`at("")`).
    pub fn root(&self) -> Result<JsonRef<'a>> {
        let mut out = MaybeUninit::<sys::ts_json>::uninit();
        status(unsafe { sys::ts_json_at(self.text.as_ptr(), ptr::null(), out.as_mut_ptr()) })?;
        Ok(JsonRef { raw: unsafe { out.assume_init() }, _text: PhantomData })
    }

    /// The text as a `&str`. Costs its length (it is measured, and checked
    /// as UTF-8, each call): keep the result rather than call this again.
    pub fn as_str(&self) -> &'a str {
        unsafe { borrowed_text(self.text.as_ptr()) }
    }

    /// The text as a C string (measured: costs its length).
    pub fn as_c_str(&self) -> &'a CStr {
        unsafe { CStr::from_ptr(self.text.as_ptr()) }
    }

    /// The NUL-terminated text, for the functions of [`sys`].
    pub fn as_ptr(&self) -> *const c_char {
        self.text.as_ptr()
    }
}

impl fmt::Display for JsonText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for JsonText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JsonText({:?})", self.as_str())
    }
}

/// JSON text of your own, checked and kept with the NUL that the getters
/// need: read it with the same getters as a callback's texts (a state read
/// with [`get`](crate::StoreRef::get), a reply from elsewhere).
///
/// ```
/// let doc = turnstate::JsonString::new(r#"{"items": [{"id": 7}]}"#)?;
/// assert_eq!(doc.at("/items/0/id")?.as_i64()?, 7);
/// # Ok::<(), turnstate::Error>(())
/// ```
///
/// Each look-up from the top ([`at`](JsonString::at), [`root`](JsonString::root))
/// validates the whole text again (the library keeps no index of it): look
/// up a container once and go on from there with [`JsonRef::at`], which
/// does not.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct JsonString {
    text: CString,
}

impl JsonString {
    /// Checks `text` as the library checks every JSON text (strictly: RFC
    /// 8259, UTF-8, no key twice in an object, nesting at most
    /// `TS_MAX_DEPTH`) and keeps it. Errors: [`Status::Json`] (with the
    /// library's message: which byte), [`Status::Argument`] (a NUL byte).
    pub fn new(text: impl Into<String>) -> Result<JsonString> {
        let text = CString::new(text.into())
            .map_err(|error| Error::argument(format!("JSON text with a NUL byte at {}", error.nul_position())))?;
        let mut out = MaybeUninit::<sys::ts_json>::uninit();
        status(unsafe { sys::ts_json_at(text.as_ptr(), ptr::null(), out.as_mut_ptr()) })?;
        Ok(JsonString { text })
    }

    /// The text, as the getters read it.
    pub fn text(&self) -> JsonText<'_> {
        JsonText { text: NonNull::new(self.text.as_ptr() as *mut c_char).expect("a CString"), _text: PhantomData }
    }

    /// [`JsonText::at`] of the text.
    pub fn at(&self, pointer: &str) -> Result<JsonRef<'_>> {
        self.text().at(pointer)
    }

    /// [`JsonText::root`] of the text.
    pub fn root(&self) -> Result<JsonRef<'_>> {
        self.text().root()
    }

    /// The text as it was given.
    pub fn as_str(&self) -> &str {
        self.text.to_str().expect("made from a String")
    }
}

impl fmt::Display for JsonString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for JsonString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JsonString({:?})", self.as_str())
    }
}

// ---- Values --------------------------------------------------------------------

/// The kind of a JSON value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `null`
    Null,
    /// `true` or `false`
    Bool,
    /// a number
    Number,
    /// a string
    String,
    /// an array
    Array,
    /// an object
    Object,
}

/// A value inside a JSON text (`ts_json`): where it is, and its kind. No
/// copy is made; it borrows the text for 'a, so that it cannot outlive it
/// (a callback's texts live as long as the callback). `Copy`. Not `Send`:
/// read it on the thread that found it.
///
/// Every reader checks the kind: [`as_i64`](JsonRef::as_i64) of a string
/// is an error ([`Status::Argument`], "ts_json_int: expected an integer,
/// found string"), never a guess; so is a number out of the type's range.
#[derive(Clone, Copy)]
pub struct JsonRef<'a> {
    raw: sys::ts_json,
    _text: PhantomData<&'a str>,
}

impl<'a> JsonRef<'a> {
    /// A value the library handed over (a patch reducer's slice), valid for 'a.
    pub(crate) unsafe fn from_library(raw: &sys::ts_json) -> JsonRef<'a> {
        JsonRef { raw: *raw, _text: PhantomData }
    }

    /// The kind of the value.
    pub fn kind(&self) -> Kind {
        match self.raw.kind {
            sys::TS_JSON_NULL => Kind::Null,
            sys::TS_JSON_FALSE | sys::TS_JSON_TRUE => Kind::Bool,
            sys::TS_JSON_NUMBER => Kind::Number,
            sys::TS_JSON_STRING => Kind::String,
            sys::TS_JSON_ARRAY => Kind::Array,
            _ => Kind::Object,
        }
    }

    /// The value at `pointer` below this one ("" is this value), as
    /// `ts_json_find`: the text is not checked again. Errors: as
    /// [`JsonText::at`], the message naming the path from this value.
    pub fn at(&self, pointer: &str) -> Result<JsonRef<'a>> {
        let mut out = MaybeUninit::<sys::ts_json>::uninit();
        with_c_text(pointer, "the JSON pointer", |pointer| {
            status(unsafe { sys::ts_json_find(&self.raw, pointer, out.as_mut_ptr()) })
        })??;
        Ok(JsonRef { raw: unsafe { out.assume_init() }, _text: PhantomData })
    }

    /// As [`at`](JsonRef::at), with `Ok(None)` where there is no value.
    pub fn get(&self, pointer: &str) -> Result<Option<JsonRef<'a>>> {
        match self.at(pointer) {
            Ok(value) => Ok(Some(value)),
            Err(error) if error.status() == Status::NotFound => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// The integer the value holds: a number whose exact value is an
    /// integer (42, -0, 1.0, 1e2), within `i64`.
    pub fn as_i64(&self) -> Result<i64> {
        let mut out = 0i64;
        status(unsafe { sys::ts_json_int(&self.raw, &mut out) })?;
        Ok(out)
    }

    /// As [`as_i64`](JsonRef::as_i64), within `u64`.
    pub fn as_u64(&self) -> Result<u64> {
        let mut out = 0u64;
        status(unsafe { sys::ts_json_uint(&self.raw, &mut out) })?;
        Ok(out)
    }

    /// The `f64` nearest to the number (correctly rounded); a number too
    /// large for an `f64` is an error, never an infinity.
    pub fn as_f64(&self) -> Result<f64> {
        let mut out = 0f64;
        status(unsafe { sys::ts_json_double(&self.raw, &mut out) })?;
        Ok(out)
    }

    /// `true` or `false`.
    pub fn as_bool(&self) -> Result<bool> {
        let mut out = 0;
        status(unsafe { sys::ts_json_bool(&self.raw, &mut out) })?;
        Ok(out != 0)
    }

    /// Whether the value is `null`.
    pub fn is_null(&self) -> bool {
        unsafe { sys::ts_json_is_null(&self.raw) != 0 }
    }

    /// The content of the string, unescaped: borrowed from the text when
    /// the string has no escapes, else an owned copy. It may hold NUL
    /// characters (from `\u0000`).
    pub fn as_str(&self) -> Result<Cow<'a, str>> {
        let mut out: *const c_char = ptr::null();
        let mut length = 0usize;
        status(unsafe { sys::ts_json_string(&self.raw, &mut out, &mut length) })?;
        let bytes = unsafe { std::slice::from_raw_parts(out as *const u8, length) };
        let start = self.raw.text as usize;
        let in_text = (out as usize) >= start && (out as usize) + length <= start + self.raw.length;
        if in_text {
            // Points into the text, which lives for 'a.
            let bytes: &'a [u8] = unsafe { std::slice::from_raw_parts(out as *const u8, length) };
            std::str::from_utf8(bytes).map(Cow::Borrowed).map_err(not_utf8)
        } else {
            // The library's per-thread copy (until its next ts_json_string): ours now.
            String::from_utf8(bytes.to_vec()).map(Cow::Owned).map_err(|error| not_utf8(error.utf8_error()))
        }
    }

    /// The number of elements of an array, or members of an object.
    pub fn len(&self) -> Result<usize> {
        let mut out = 0usize;
        status(unsafe { sys::ts_json_count(&self.raw, &mut out) })?;
        Ok(out)
    }

    /// Whether an array or object has no element or member.
    pub fn is_empty(&self) -> Result<bool> {
        self.len().map(|count| count == 0)
    }

    /// The elements of an array, or the values of an object's members, in
    /// order. Another kind is an error ([`Status::Argument`]).
    pub fn iter(&self) -> Result<Iter<'a>> {
        self.expect_container(false)?;
        Ok(Iter { container: self.raw, cursor: 0, _text: PhantomData })
    }

    /// The members of an object, as (key, value) in order; the key is
    /// unescaped as by [`as_str`](JsonRef::as_str). Another kind is an error
    /// ([`Status::Argument`]).
    pub fn members(&self) -> Result<Members<'a>> {
        self.expect_container(true)?;
        Ok(Members { container: self.raw, cursor: 0, _text: PhantomData })
    }

    /// The value's JSON text, as it is in the text it was found in (minified
    /// in the texts the library hands over).
    ///
    /// # Panics
    ///
    /// For a split value ([`is_split`](JsonRef::is_split): a big slice of a
    /// [`Store::add_patch_reducer`](crate::Store::add_patch_reducer)
    /// reducer, or one of its big arrays and objects), which has no text of
    /// its own; in a reducer the panic fails the dispatch with
    /// [`Status::Panic`]. [`text`](JsonRef::text) answers `None` instead,
    /// [`to_json`](JsonRef::to_json) joins it.
    pub fn json(&self) -> &'a str {
        match self.text() {
            Some(text) => text,
            None => panic!(
                "JsonRef::json: {} that is split (a big slice of a patch reducer) has no text; use text() or to_json()",
                kind_name(self.kind())
            ),
        }
    }

    /// As [`json`](JsonRef::json), with `None` for a split value.
    pub fn text(&self) -> Option<&'a str> {
        if self.raw.text.is_null() {
            return None;
        }
        let bytes: &'a [u8] = unsafe { std::slice::from_raw_parts(self.raw.text as *const u8, self.raw.length) };
        // A value of valid UTF-8 JSON text starts and ends at a character.
        Some(std::str::from_utf8(bytes).expect("the library's JSON text is UTF-8"))
    }

    /// Whether the value is split: kept by the store as a tree of texts (the
    /// slice of a [`Store::add_patch_reducer`](crate::Store::add_patch_reducer)
    /// reducer of 64 KiB or more, and its arrays and objects of 4 KiB or
    /// more; `turnstate.h`, "Patch reducers"). Every getter reads it
    /// ([`at`](JsonRef::at), [`len`](JsonRef::len), [`iter`](JsonRef::iter),
    /// [`members`](JsonRef::members)); it has no text
    /// ([`text`](JsonRef::text) is `None`).
    pub fn is_split(&self) -> bool {
        self.raw.text.is_null()
    }

    /// A copy of the value's JSON text: [`text`](JsonRef::text) when it has
    /// one, else joined from its children (costs its size). `Display` writes
    /// the same.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(self.raw.length);
        self.write_json(&mut out).expect("a String takes any text");
        out
    }

    fn write_json<W: fmt::Write>(&self, out: &mut W) -> fmt::Result {
        if let Some(text) = self.text() {
            return out.write_str(text);
        }
        // Split: an array or an object whose children each have text or are
        // split in turn; the keys of a split object have their text.
        let object = self.raw.kind == sys::TS_JSON_OBJECT;
        out.write_char(if object { '{' } else { '[' })?;
        let mut cursor = 0usize;
        let mut first = true;
        loop {
            let mut key = MaybeUninit::<sys::ts_json>::uninit();
            let value = match next_child(&self.raw, &mut cursor, key.as_mut_ptr()) {
                Some(value) => value,
                None => break,
            };
            if !first {
                out.write_char(',')?;
            }
            first = false;
            if object {
                let key = JsonRef { raw: unsafe { key.assume_init() }, _text: PhantomData };
                out.write_str(key.json())?;
                out.write_char(':')?;
            }
            JsonRef { raw: value, _text: PhantomData }.write_json(out)?;
        }
        out.write_char(if object { '}' } else { ']' })
    }

    /// The C view, for the functions of [`sys`].
    pub fn as_raw(&self) -> &sys::ts_json {
        &self.raw
    }

    fn expect_container(&self, object_only: bool) -> Result<()> {
        match self.kind() {
            Kind::Object => Ok(()),
            Kind::Array if !object_only => Ok(()),
            kind => Err(Error::argument(format!(
                "expected {}, found {}",
                if object_only { "an object" } else { "an array or an object" },
                kind_name(kind)
            ))),
        }
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Null => "null",
        Kind::Bool => "a boolean",
        Kind::Number => "a number",
        Kind::String => "a string",
        Kind::Array => "an array",
        Kind::Object => "an object",
    }
}

fn not_utf8(error: std::str::Utf8Error) -> Error {
    Error::new(Status::Json, format!("the string is not UTF-8 once unescaped: {}", error))
}

impl fmt::Debug for JsonRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.text() {
            Some(text) => write!(f, "JsonRef({:?}, {})", self.kind(), text),
            None => write!(f, "JsonRef({:?}, split, {} bytes)", self.kind(), self.raw.length),
        }
    }
}

/// The value's JSON text (joined for a split value: costs its size).
impl fmt::Display for JsonRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_json(f)
    }
}

/// One step of `ts_json_next` over a container this crate checked to be
/// one, with its own cursor: the only failure is the end.
fn next_child(container: &sys::ts_json, cursor: &mut usize, key: *mut sys::ts_json) -> Option<sys::ts_json> {
    let mut value = MaybeUninit::<sys::ts_json>::uninit();
    match unsafe { sys::ts_json_next(container, cursor, key, value.as_mut_ptr()) } {
        sys::TS_OK => Some(unsafe { value.assume_init() }),
        sys::TS_E_NOT_FOUND => None,
        // Not for a container of a known kind and a cursor kept here.
        code => panic!("ts_json_next: {}", Error::from_code(code)),
    }
}

/// The elements of an array or the values of an object
/// ([`JsonRef::iter`]). Each step costs the size of the child it steps over.
pub struct Iter<'a> {
    container: sys::ts_json,
    cursor: usize,
    _text: PhantomData<&'a str>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = JsonRef<'a>;

    fn next(&mut self) -> Option<JsonRef<'a>> {
        next_child(&self.container, &mut self.cursor, ptr::null_mut()).map(|raw| JsonRef { raw, _text: PhantomData })
    }
}

/// The members of an object ([`JsonRef::members`]).
pub struct Members<'a> {
    container: sys::ts_json,
    cursor: usize,
    _text: PhantomData<&'a str>,
}

impl<'a> Iterator for Members<'a> {
    type Item = (Cow<'a, str>, JsonRef<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        let mut key = MaybeUninit::<sys::ts_json>::uninit();
        let value = next_child(&self.container, &mut self.cursor, key.as_mut_ptr())?;
        let key = JsonRef { raw: unsafe { key.assume_init() }, _text: PhantomData };
        let name = key.as_str().unwrap_or_else(|error| panic!("an object's key: {}", error));
        Some((name, JsonRef { raw: value, _text: PhantomData }))
    }
}

// ---- Answers -------------------------------------------------------------------

/// What a reducer added with [`Store::add_reducer_for`](crate::Store::add_reducer_for)
/// answers: nothing changed, the whole new slice, or the change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reduced {
    /// The slice is unchanged (the C reducer's NULL).
    Unchanged,
    /// The new slice, as JSON text (copied into memory from `ts_alloc`,
    /// which the store takes over).
    Slice(String),
    /// The change, as an RFC 6902 JSON Patch relative to the slice
    /// (`ts_reducer_patch`): applied by the store in place, all or nothing.
    Patch(Patch),
}

impl From<Patch> for Reduced {
    fn from(patch: Patch) -> Reduced {
        Reduced::Patch(patch)
    }
}

impl From<String> for Reduced {
    fn from(slice: String) -> Reduced {
        Reduced::Slice(slice)
    }
}

/// `None` is [`Reduced::Unchanged`], `Some(json)` a new slice: what
/// [`Store::add_reducer`](crate::Store::add_reducer)'s reducers return.
impl From<Option<String>> for Reduced {
    fn from(slice: Option<String>) -> Reduced {
        slice.map_or(Reduced::Unchanged, Reduced::Slice)
    }
}

/// An RFC 6902 JSON Patch: a list of operations whose paths are JSON
/// Pointers relative to the reducer's slice ("" is the slice itself, "/-"
/// the end of an array). Values are JSON text, given as it is (the store
/// checks it, with the rest of the patch, when it applies it).
///
/// ```
/// use turnstate::Patch;
/// let patch = Patch::new()
///     .replace("/items/3/done", "true")
///     .add("/items/-", r#"{"id": 9, "title": "new"}"#)
///     .test("/owner", r#""ada""#);
/// assert_eq!(
///     patch.as_json(),
///     r#"[{"op":"replace","path":"/items/3/done","value":true},{"op":"add","path":"/items/-","value":{"id": 9, "title": "new"}},{"op":"test","path":"/owner","value":"ada"}]"#
/// );
/// ```
///
/// A patch that fails when the store applies it (a path that names
/// nothing, a `test` that does not hold, text that is not JSON) fails the
/// dispatch with [`Status::Reducer`] and a message naming the operation
/// and its path; the state is unchanged.
#[derive(Clone, PartialEq, Eq)]
pub struct Patch {
    // Always a whole JSON array: "[" operations "]".
    json: String,
}

impl Default for Patch {
    fn default() -> Patch {
        Patch::new()
    }
}

impl Patch {
    /// A patch with no operation (applied, it changes nothing).
    pub fn new() -> Patch {
        Patch { json: String::from("[]") }
    }

    /// A patch given as JSON text (an array of RFC 6902 operations), used
    /// as it is.
    pub fn from_json(json: impl Into<String>) -> Patch {
        Patch { json: json.into() }
    }

    /// `{"op": "add", "path": path, "value": value_json}`: inserts into an
    /// array (before the element at that index; "-" appends) or sets an
    /// object's member.
    pub fn add(self, path: &str, value_json: &str) -> Patch {
        self.op("add", "path", path, None, Some(value_json))
    }

    /// `{"op": "remove", "path": path}`.
    pub fn remove(self, path: &str) -> Patch {
        self.op("remove", "path", path, None, None)
    }

    /// `{"op": "replace", "path": path, "value": value_json}`: the value
    /// there must exist.
    pub fn replace(self, path: &str, value_json: &str) -> Patch {
        self.op("replace", "path", path, None, Some(value_json))
    }

    /// `{"op": "move", "from": from, "path": path}`.
    pub fn move_to(self, from: &str, path: &str) -> Patch {
        self.op("move", "from", from, Some(path), None)
    }

    /// `{"op": "copy", "from": from, "path": path}`.
    pub fn copy_to(self, from: &str, path: &str) -> Patch {
        self.op("copy", "from", from, Some(path), None)
    }

    /// `{"op": "test", "path": path, "value": value_json}`: the whole patch
    /// fails unless the value there equals `value_json` (as JSON values: 1
    /// equals 1.0, members in any order).
    pub fn test(self, path: &str, value_json: &str) -> Patch {
        self.op("test", "path", path, None, Some(value_json))
    }

    /// The patch as JSON text.
    pub fn as_json(&self) -> &str {
        &self.json
    }

    /// The patch as JSON text, taken out.
    pub fn into_json(self) -> String {
        self.json
    }

    fn op(mut self, op: &str, first: &str, first_value: &str, path: Option<&str>, value: Option<&str>) -> Patch {
        // The text ends with "]": open it again, add one operation, close it.
        if self.json.ends_with(']') {
            self.json.pop();
        }
        let trimmed = self.json.trim_end();
        if !trimmed.ends_with('[') && !trimmed.is_empty() {
            self.json.push(',');
        } else if trimmed.is_empty() {
            self.json.push('[');
        }
        self.json.push_str("{\"op\":\"");
        self.json.push_str(op);
        self.json.push_str("\",\"");
        self.json.push_str(first);
        self.json.push_str("\":");
        push_json_string(&mut self.json, first_value);
        if let Some(path) = path {
            self.json.push_str(",\"path\":");
            push_json_string(&mut self.json, path);
        }
        if let Some(value) = value {
            self.json.push_str(",\"value\":");
            self.json.push_str(value);
        }
        self.json.push_str("}]");
        self
    }
}

impl fmt::Debug for Patch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Patch({})", self.json)
    }
}

impl fmt::Display for Patch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.json)
    }
}

/// Appends `text` as a JSON string literal, quotes included.
fn push_json_string(out: &mut String, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    let bytes = text.as_bytes();
    let mut start = 0;
    for (at, &byte) in bytes.iter().enumerate() {
        if byte == b'"' || byte == b'\\' || byte < 0x20 {
            out.push_str(&text[start..at]);
            match byte {
                b'"' => out.push_str("\\\""),
                b'\\' => out.push_str("\\\\"),
                _ => {
                    out.push_str("\\u00");
                    out.push(HEX[(byte >> 4) as usize] as char);
                    out.push(HEX[(byte & 15) as usize] as char);
                }
            }
            start = at + 1;
        }
    }
    out.push_str(&text[start..]);
    out.push('"');
}

/// A JSON Pointer token for `key` (an object's member name): "~" becomes
/// "~0" and "/" becomes "~1" (RFC 6901), so that
/// `format!("/users/{}/name", pointer_token(key))` names that member.
pub fn pointer_token(key: &str) -> Cow<'_, str> {
    if key.contains(['~', '/']) {
        Cow::Owned(key.replace('~', "~0").replace('/', "~1"))
    } else {
        Cow::Borrowed(key)
    }
}
