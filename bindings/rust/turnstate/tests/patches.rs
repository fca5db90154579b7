//! Issue 19 through the safe API: reducers that answer with a patch
//! (`Reduced::Patch`), reducers that name their action types
//! (`add_reducer_for`, `replace_reducer_for`), and the getters
//! (`JsonText`, `JsonRef`, `JsonString`, `Action::payload_at`). Run by
//! `make test-rust` against build/lib.
use std::borrow::Cow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use turnstate::{Action, JsonString, JsonText, Kind, Patch, Reduced, Status, Store, EVERY_ACTION};

type Answer = Result<Reduced, String>;

/// A reducer for "todos" ({"items": [...]}) that answers every "todos/*"
/// action with the patch in its payload ("todos/patch") or with the patch
/// that toggles item /id ("todos/toggle"), reading with the getters.
fn todos(slice: Option<JsonText<'_>>, action: &Action<'_>) -> Answer {
    let slice = match slice {
        None => return Ok(Reduced::Slice(r#"{"items":[{"id":0,"done":false},{"id":1,"done":true}]}"#.into())),
        Some(slice) => slice,
    };
    match action.kind() {
        "todos/patch" => Ok(Patch::from_json(action.payload().unwrap_or("[]")).into()),
        "todos/toggle" => {
            let path = format!("/items/{}/done", action.payload_at("/id")?.as_u64()?);
            let done = slice.at(&path)?.as_bool()?;
            Ok(Patch::new().replace(&path, if done { "false" } else { "true" }).into())
        }
        "todos/whole" => Ok(Reduced::Slice(r#"{"items":[]}"#.to_string())),
        "todos/fail" => Err("refused by the test".to_string()),
        _ => Ok(Reduced::Unchanged),
    }
}

fn todo_store() -> Store {
    let store = Store::new("{}").unwrap();
    store.add_reducer_for("todos", &["todos/*"], todos).unwrap();
    store
}

fn patch_action(patch: &str) -> String {
    format!(r#"{{"type":"todos/patch","payload":{}}}"#, patch)
}

// ---- Patches ---------------------------------------------------------------------

#[test]
fn a_patch_answer_changes_only_what_it_names() {
    let store = todo_store();
    store.dispatch(r#"{"type":"todos/toggle","payload":{"id":0}}"#).unwrap();
    assert_eq!(store.get("/todos").unwrap(), r#"{"items":[{"id":0,"done":true},{"id":1,"done":true}]}"#);
    store.dispatch(r#"{"type":"todos/toggle","payload":{"id":1}}"#).unwrap();
    assert_eq!(store.get("/todos/items/1/done").unwrap(), "false");
    // Every operation of the builder, applied by the store.
    let patch = Patch::new()
        .add("/items/-", r#"{"id":2,"done":false}"#)
        .test("/items/2/id", "2.0")
        .copy_to("/items/0", "/first")
        .move_to("/first", "/kept")
        .replace("/kept/id", "10")
        .remove("/items/1")
        .add("/note", r#""a \"quoted\" note""#);
    store.dispatch(&patch_action(patch.as_json())).unwrap();
    assert_eq!(
        store.get("/todos").unwrap(),
        r#"{"items":[{"id":0,"done":true},{"id":2,"done":false}],"kept":{"id":10,"done":true},"note":"a \"quoted\" note"}"#
    );
    // The whole slice and "unchanged" are answers too.
    store.dispatch(r#"{"type":"todos/other"}"#).unwrap();
    assert_eq!(store.get("/todos/items/1/id").unwrap(), "2");
    store.dispatch(r#"{"type":"todos/whole"}"#).unwrap();
    assert_eq!(store.get("/todos").unwrap(), r#"{"items":[]}"#);
}

#[test]
fn the_builder_writes_rfc_6902_text() {
    assert_eq!(Patch::new().as_json(), "[]");
    assert_eq!(Patch::default(), Patch::new());
    let patch = Patch::new().remove("/a~1b/\"q\"\n").move_to("/x", "/y");
    assert_eq!(
        patch.as_json(),
        r#"[{"op":"remove","path":"/a~1b/\"q\"\u000a"},{"op":"move","from":"/x","path":"/y"}]"#
    );
    assert_eq!(patch.to_string(), patch.clone().into_json());
    // Operations added to a patch given as text go into its array.
    let patch = Patch::from_json(r#"[{"op":"remove","path":"/a"}]"#).copy_to("/b", "/c");
    assert_eq!(patch.as_json(), r#"[{"op":"remove","path":"/a"},{"op":"copy","from":"/b","path":"/c"}]"#);
    assert_eq!(Patch::from_json("[ ]").remove("").as_json(), r#"[ {"op":"remove","path":""}]"#);
    assert_eq!(turnstate::pointer_token("a/b~c"), "a~1b~0c");
    assert!(matches!(turnstate::pointer_token("plain"), Cow::Borrowed("plain")));
    let reduced: Reduced = None.into();
    assert_eq!(reduced, Reduced::Unchanged);
    assert_eq!(Reduced::from(Some("1".to_string())), Reduced::Slice("1".into()));
    assert_eq!(Reduced::from("2".to_string()), Reduced::Slice("2".into()));
}

/// Every failure of a patch: the dispatch fails with Status::Reducer and the
/// library's message, no later reducer runs, no listener runs, the state is
/// as it was.
#[test]
fn a_patch_that_fails_changes_nothing() {
    let store = todo_store();
    let later = Arc::new(AtomicUsize::new(0));
    let counted = later.clone();
    store
        .add_reducer_for("later", EVERY_ACTION, move |slice, _| {
            if slice.is_some() {
                counted.fetch_add(1, Ordering::SeqCst);
            }
            Ok(Reduced::Slice("0".into()))
        })
        .unwrap();
    let notified = Arc::new(AtomicUsize::new(0));
    let listener = notified.clone();
    store
        .subscribe(None, move |_| {
            listener.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let before = store.state().unwrap();
    let cases: &[(String, &str)] = &[
        (
            patch_action(r#"[{"op":"test","path":"/items/0/done","value":true}]"#),
            r#"returned a patch that failed for "todos/patch": op 0 ("test" at "/items/0/done"): the value differs (found false)"#,
        ),
        (
            patch_action(r#"[{"op":"replace","path":"/items/0/done","value":true},{"op":"remove","path":"/nope"}]"#),
            r#"op 1 ("remove" at "/nope"): no member "nope""#,
        ),
        (patch_action(r#"[{"op":"frob","path":""}]"#), r#"op 0: unknown op "frob""#),
        (patch_action(r#"[{"op":"add","path":"/items/9","value":1}]"#), r#"op 0 ("add" at "/items/9")"#),
        (
            r#"{"type":"todos/patch","payload":{"op":"remove"}}"#.to_string(),
            r#"failed for "todos/patch": ts_reducer_patch: a JSON Patch must be an array of operations, found object"#,
        ),
        (
            r#"{"type":"todos/patch","payload":"[{"}"#.to_string(),
            "ts_reducer_patch: a JSON Patch must be an array of operations, found string",
        ),
        (
            r#"{"type":"todos/toggle","payload":{"id":"zero"}}"#.to_string(),
            r#"the reducer for "todos" failed for "todos/toggle": TS_E_ARGUMENT: ts_json_uint: expected an integer, found string"#,
        ),
        (
            r#"{"type":"todos/toggle","payload":{"id":7}}"#.to_string(),
            "TS_E_NOT_FOUND: ts_json_at: JSON Pointer \"/items/7/done\": index \"7\" is out of range",
        ),
        (r#"{"type":"todos/fail"}"#.to_string(), r#"failed for "todos/fail": refused by the test"#),
    ];
    for (action, expected) in cases {
        let error = store.dispatch(action).unwrap_err();
        assert_eq!(error.status(), Status::Reducer, "{}: {}", action, error);
        assert_eq!(error.code(), turnstate::sys::TS_E_REDUCER);
        assert!(error.message().contains(expected), "{}:\n  got      {}\n  expected {}", action, error, expected);
        assert_eq!(store.state().unwrap(), before, "{}", action);
    }
    assert_eq!(later.load(Ordering::SeqCst), 0, "the reducer after the failing one ran");
    assert_eq!(notified.load(Ordering::SeqCst), 0, "a listener ran after a failed dispatch");
    // Text that is not JSON, and a patch with a NUL byte (which cannot be
    // C text): refused, state unchanged.
    store
        .replace_reducer_for("todos", &["todos/*"], |_, action| match action.kind() {
            "todos/nul" => Ok(Patch::new().add("/x", "\"a\0b\"").into()),
            "todos/text" => Ok(Patch::from_json("[{").into()),
            _ => Ok(Reduced::Unchanged), // @@turnstate/replace reaches it too
        })
        .unwrap();
    let before = store.state().unwrap();
    for (action, expected) in [
        (r#"{"type":"todos/nul"}"#, "the reducer's patch contains a NUL byte"),
        (r#"{"type":"todos/text"}"#, "ts_reducer_patch: the patch is not valid JSON"),
    ] {
        let error = store.dispatch(action).unwrap_err();
        assert_eq!(error.status(), Status::Reducer);
        assert!(error.message().contains(expected), "{}", error);
        assert_eq!(store.state().unwrap(), before);
    }
}

#[test]
fn a_patch_cannot_be_the_first_value() {
    let store = Store::new("{}").unwrap();
    let error = store.add_reducer_for("k", EVERY_ACTION, |_, _| Ok(Patch::new().add("", "1").into())).unwrap_err();
    assert_eq!(error.status(), Status::Reducer);
    assert!(error.message().contains("ts_reducer_patch"), "{}", error);
    assert_eq!(store.state().unwrap(), "{}");
    // Nothing was added: the key takes a reducer.
    store.add_reducer_for("k", EVERY_ACTION, |_, _| Ok(Reduced::Slice("1".into()))).unwrap();
    assert_eq!(store.get("/k").unwrap(), "1");
}

#[test]
fn a_panicking_reducer_for_changes_nothing() {
    let store = todo_store();
    store
        .replace_reducer_for("todos", &["todos/*"], |slice, action| {
            if action.kind() == "todos/panic" {
                panic!("boom");
            }
            Ok(Reduced::from(slice.map(|slice| slice.as_str().to_string())))
        })
        .unwrap();
    let before = store.state().unwrap();
    let error = store.dispatch(r#"{"type":"todos/panic"}"#).unwrap_err();
    assert!(error.is_panic());
    assert_eq!(error.code(), turnstate::sys::TS_E_REDUCER);
    assert!(error.message().ends_with("panicked: boom"), "{}", error);
    assert_eq!(store.state().unwrap(), before);
}

#[test]
fn pointer_listeners_see_what_a_patch_changed() {
    let store = todo_store();
    let calls = Arc::new(Mutex::new(Vec::new()));
    for pointer in ["/todos/items/0/done", "/todos/items/1", "/todos"] {
        let calls = calls.clone();
        store
            .subscribe(Some(pointer), move |store| {
                calls.lock().unwrap().push(format!("{}={}", pointer, store.get(pointer).unwrap()));
            })
            .unwrap();
    }
    store.dispatch(r#"{"type":"todos/toggle","payload":{"id":0}}"#).unwrap();
    assert_eq!(
        *calls.lock().unwrap(),
        ["/todos/items/0/done=true", r#"/todos={"items":[{"id":0,"done":true},{"id":1,"done":true}]}"#,]
    );
}

// ---- Type filters ----------------------------------------------------------------

/// A reducer that records the types it was called for.
fn recorder(log: &Arc<Mutex<Vec<String>>>) -> impl Fn(Option<JsonText<'_>>, &Action<'_>) -> Answer {
    let log = log.clone();
    move |slice, action| {
        log.lock().unwrap().push(action.kind().to_string());
        Ok(if slice.is_none() { Reduced::Slice("0".into()) } else { Reduced::Unchanged })
    }
}

fn take(log: &Arc<Mutex<Vec<String>>>) -> Vec<String> {
    std::mem::take(&mut *log.lock().unwrap())
}

#[test]
fn reducers_are_called_for_the_types_they_name() {
    let store = Store::new("{}").unwrap();
    let (exact, prefix, every) =
        (Arc::new(Mutex::new(vec![])), Arc::new(Mutex::new(vec![])), Arc::new(Mutex::new(vec![])));
    store.add_reducer_for("exact", &["todos/add", "user/login"], recorder(&exact)).unwrap();
    store.add_reducer_for("prefix", &["todos/edit/*"], recorder(&prefix)).unwrap();
    store.add_reducer_for("every", EVERY_ACTION, recorder(&every)).unwrap();
    // The init calls reach each of them.
    assert_eq!(take(&exact), ["@@turnstate/init"]);
    assert_eq!(take(&prefix), ["@@turnstate/init"]);
    assert_eq!(take(&every), ["@@turnstate/init"]);
    for kind in
        ["todos/add", "todos/edit/title", "todos/edit/x/y", "todos/edit", "todos/edit/", "todos/addx", "user/login"]
    {
        store.dispatch(&format!(r#"{{"type":"{}"}}"#, kind)).unwrap();
    }
    assert_eq!(take(&exact), ["todos/add", "user/login"]);
    assert_eq!(take(&prefix), ["todos/edit/title", "todos/edit/x/y"]);
    assert_eq!(take(&every).len(), 7);
    // The store's own actions reach a filtered reducer: @@turnstate/replace,
    // dispatched by remove_reducer, goes to those that remain.
    store.remove_reducer("every").unwrap();
    assert_eq!(take(&exact), ["@@turnstate/replace"]);
    assert_eq!(take(&prefix), ["@@turnstate/replace"]);
    assert!(take(&every).is_empty());
}

#[test]
fn the_type_matched_is_the_one_a_middleware_passes_on() {
    let store = Store::new("{}").unwrap();
    let log = Arc::new(Mutex::new(vec![]));
    store.add_reducer_for("k", &["new/*"], recorder(&log)).unwrap();
    take(&log);
    store
        .add_middleware("rename", |_, next, action| {
            if action.kind() == "old/thing" {
                next.send(r#"{"type":"new/thing"}"#)
            } else {
                next.pass()
            }
        })
        .unwrap();
    store.dispatch(r#"{"type":"old/thing"}"#).unwrap();
    store.dispatch(r#"{"type":"old/other"}"#).unwrap();
    assert_eq!(take(&log), ["new/thing"]);
}

#[test]
fn replace_reducer_for_sets_the_new_filter() {
    let store = Store::new("{}").unwrap();
    let (old, new) = (Arc::new(Mutex::new(vec![])), Arc::new(Mutex::new(vec![])));
    store.add_reducer_for("k", &["a/*"], recorder(&old)).unwrap();
    store.replace_reducer_for("k", &["b/x"], recorder(&new)).unwrap();
    store.dispatch(r#"{"type":"a/x"}"#).unwrap();
    store.dispatch(r#"{"type":"b/x"}"#).unwrap();
    assert_eq!(take(&old), ["@@turnstate/init"]);
    assert_eq!(take(&new), ["@@turnstate/replace", "b/x"]);
    // EVERY_ACTION: called for every action again.
    store.replace_reducer_for("k", EVERY_ACTION, recorder(&new)).unwrap();
    store.dispatch(r#"{"type":"a/x"}"#).unwrap();
    assert_eq!(take(&new), ["@@turnstate/replace", "a/x"]);
    // And replace_reducer, with the old signature, gives every action too.
    store.replace_reducer("k", |_, _| Ok(None)).unwrap();
    let error = store.replace_reducer_for("nope", &["a/x"], recorder(&new)).unwrap_err();
    assert_eq!(error.status(), Status::NotFound);
}

#[test]
fn bad_patterns_are_refused_and_nothing_changes() {
    let store = Store::new("{}").unwrap();
    let log = Arc::new(Mutex::new(vec![]));
    for (patterns, expected) in [
        (&[""][..], "types[0] is empty"),
        (&["a/b", "a*"][..], r#"types[1] "a*" is neither an action type nor a prefix pattern"#),
        (&["a/*/b"][..], r#"types[0] "a/*/b""#),
        (&["*"][..], r#"types[0] "*""#),
    ] {
        let error = store.add_reducer_for("k", patterns, recorder(&log)).unwrap_err();
        assert_eq!(error.status(), Status::Argument, "{:?}", patterns);
        assert!(error.message().contains(expected), "{:?}: {}", patterns, error);
    }
    let error = store.add_reducer_for("k", &["ok/*", "a\0b"], recorder(&log)).unwrap_err();
    assert_eq!(error.status(), Status::Argument);
    assert!(error.message().contains("type pattern 1") && error.message().contains("NUL"), "{}", error);
    assert!(take(&log).is_empty(), "a refused reducer was called");
    assert_eq!(store.state().unwrap(), "{}");
    // The key is still free; a refused replacement keeps the old reducer.
    store.add_reducer_for("k", &["a/x"], recorder(&log)).unwrap();
    let error = store.replace_reducer_for("k", &["b*"], |_, _| Err("never".to_string())).unwrap_err();
    assert_eq!(error.status(), Status::Argument);
    store.dispatch(r#"{"type":"a/x"}"#).unwrap();
    assert_eq!(take(&log), ["@@turnstate/init", "a/x"]);
}

// ---- Getters ---------------------------------------------------------------------

const DOC: &str = r#"{"null":null,"f":false,"t":true,"i":42,"neg":-7,"big":18446744073709551615,"min":-9223372036854775808,"dbl":1.5,"exp":2.50E1,"huge":1e400,"s":"plain","esc":"a\"b\u00e9\n","nul":"x\u0000y","arr":[1,"two",[3],{"four":4}],"obj":{"a":{"b":[10,20]},"c/d":1,"e~f":2},"empty":{}}"#;

#[test]
fn getters_read_every_kind() {
    let doc = JsonString::new(DOC).unwrap();
    assert_eq!(doc.as_str(), DOC);
    let root = doc.root().unwrap();
    assert_eq!(root.kind(), Kind::Object);
    assert_eq!(root.json(), DOC);
    assert_eq!(root.len().unwrap(), 16);
    let kinds = [
        ("/null", Kind::Null, "null"),
        ("/f", Kind::Bool, "false"),
        ("/t", Kind::Bool, "true"),
        ("/exp", Kind::Number, "2.50E1"),
        ("/s", Kind::String, r#""plain""#),
        ("/arr/2", Kind::Array, "[3]"),
        ("/arr/3", Kind::Object, r#"{"four":4}"#),
        ("/obj/c~1d", Kind::Number, "1"),
        ("/obj/e~0f", Kind::Number, "2"),
    ];
    for (pointer, kind, json) in kinds {
        let value = doc.at(pointer).unwrap();
        assert_eq!((value.kind(), value.json()), (kind, json), "{}", pointer);
        assert_eq!(value.to_string(), json);
    }
    assert!(doc.at("/null").unwrap().is_null());
    assert!(!doc.at("/f").unwrap().is_null());
    assert!(!doc.at("/f").unwrap().as_bool().unwrap());
    assert!(doc.at("/t").unwrap().as_bool().unwrap());
    assert_eq!(doc.at("/i").unwrap().as_i64().unwrap(), 42);
    assert_eq!(doc.at("/neg").unwrap().as_i64().unwrap(), -7);
    assert_eq!(doc.at("/min").unwrap().as_i64().unwrap(), i64::MIN);
    assert_eq!(doc.at("/exp").unwrap().as_i64().unwrap(), 25);
    assert_eq!(doc.at("/big").unwrap().as_u64().unwrap(), u64::MAX);
    assert_eq!(doc.at("/i").unwrap().as_u64().unwrap(), 42);
    assert_eq!(doc.at("/dbl").unwrap().as_f64().unwrap(), 1.5);
    assert_eq!(doc.at("/neg").unwrap().as_f64().unwrap(), -7.0);
    // Strings: borrowed from the text without escapes, owned with them.
    let plain = doc.at("/s").unwrap().as_str().unwrap();
    assert!(matches!(plain, Cow::Borrowed("plain")));
    let escaped = doc.at("/esc").unwrap().as_str().unwrap();
    assert!(matches!(&escaped, Cow::Owned(text) if text == "a\"b\u{e9}\n"), "{:?}", escaped);
    assert_eq!(doc.at("/nul").unwrap().as_str().unwrap(), "x\0y");
    // Containers: relative look-ups, counts, iteration.
    let obj = doc.at("/obj").unwrap();
    assert_eq!(obj.at("/a/b/1").unwrap().as_i64().unwrap(), 20);
    assert_eq!(obj.at("").unwrap().json(), obj.json());
    assert_eq!(obj.get("/a/b/1").unwrap().unwrap().as_i64().unwrap(), 20);
    assert!(obj.get("/zz").unwrap().is_none());
    let arr = doc.at("/arr").unwrap();
    assert_eq!(arr.len().unwrap(), 4);
    assert!(!arr.is_empty().unwrap());
    assert!(doc.at("/empty").unwrap().is_empty().unwrap());
    let items: Vec<&str> = arr.iter().unwrap().map(|item| item.json()).collect();
    assert_eq!(items, ["1", r#""two""#, "[3]", r#"{"four":4}"#]);
    let members: Vec<(String, String)> =
        obj.members().unwrap().map(|(key, value)| (key.into_owned(), value.json().to_string())).collect();
    assert_eq!(
        members,
        [("a".to_string(), r#"{"b":[10,20]}"#.to_string()), ("c/d".into(), "1".into()), ("e~f".into(), "2".into())]
    );
    let values: Vec<&str> = obj.iter().unwrap().map(|value| value.json()).collect();
    assert_eq!(values, [r#"{"b":[10,20]}"#, "1", "2"]);
    assert_eq!(doc.at("/empty").unwrap().iter().unwrap().count(), 0);
    let escaped_key = JsonString::new(r#"{"a\u00e9":1}"#).unwrap();
    let (key, _) = escaped_key.root().unwrap().members().unwrap().next().unwrap();
    assert_eq!(key, "a\u{e9}");
}

#[test]
fn getters_refuse_with_a_status_and_the_library_message() {
    let doc = JsonString::new(DOC).unwrap();
    let wrong_kind = |pointer: &str| doc.at(pointer).unwrap();
    let cases: Vec<(turnstate::Result<()>, Status, &str)> = vec![
        (wrong_kind("/s").as_i64().map(drop), Status::Argument, "ts_json_int: expected an integer, found string"),
        (wrong_kind("/dbl").as_i64().map(drop), Status::Argument, "ts_json_int"),
        (wrong_kind("/big").as_i64().map(drop), Status::Argument, "ts_json_int"),
        (wrong_kind("/neg").as_u64().map(drop), Status::Argument, "ts_json_uint"),
        (wrong_kind("/huge").as_f64().map(drop), Status::Argument, "ts_json_double"),
        (wrong_kind("/i").as_bool().map(drop), Status::Argument, "ts_json_bool"),
        (wrong_kind("/i").as_str().map(drop), Status::Argument, "ts_json_string"),
        (wrong_kind("/i").len().map(drop), Status::Argument, "ts_json_count"),
        (wrong_kind("/s").iter().map(drop), Status::Argument, "expected an array or an object, found a string"),
        (wrong_kind("/arr").members().map(drop), Status::Argument, "expected an object, found an array"),
        (doc.at("/missing").map(drop), Status::NotFound, r#"ts_json_at: JSON Pointer "/missing": no member "missing""#),
        (doc.at("/arr/9").map(drop), Status::NotFound, r#"index "9" is out of range"#),
        (wrong_kind("/arr").at("/-").map(drop), Status::NotFound, "ts_json_find"),
        (doc.at("missing").map(drop), Status::Argument, "must be empty or start with '/'"),
        (doc.at("/a\0b").map(drop), Status::Argument, "NUL"),
        (JsonString::new(r#"{"a":1,"a":2}"#).map(drop), Status::Json, r#"duplicate key "a""#),
        (JsonString::new("[1,").map(drop), Status::Json, "ts_json_at: invalid JSON"),
        (JsonString::new("1\u{0}").map(drop), Status::Argument, "NUL byte at 1"),
    ];
    for (index, (result, status, expected)) in cases.into_iter().enumerate() {
        let error = result.unwrap_err();
        assert_eq!(error.status(), status, "case {}: {}", index, error);
        assert!(error.message().contains(expected), "case {}: {} lacks {:?}", index, error, expected);
    }
}

/// The slice and the payload a reducer gets are read where they are, and
/// give the answers that a copy of the same text gives.
#[test]
fn a_reducers_texts_read_like_any_copy_of_them() {
    let store = Store::new(&format!(r#"{{"doc":{}}}"#, DOC)).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = seen.clone();
    store
        .add_reducer_for("doc", &["read"], move |slice, action| {
            let slice = slice.ok_or("the slice exists")?;
            let mut seen = kept.lock().unwrap();
            for pointer in ["/i", "/esc", "/arr/3/four", "/missing", "/obj/a/b"] {
                seen.push(match slice.at(pointer) {
                    Ok(value) => format!("{}={}", pointer, value.json()),
                    Err(error) => format!("{}:{}", pointer, error),
                });
            }
            seen.push(format!("esc={}", slice.at("/esc")?.as_str()?));
            seen.push(format!("sum={}", slice.at("/obj/a/b")?.iter()?.map(|v| v.as_i64().unwrap()).sum::<i64>()));
            seen.push(format!("id={}", action.payload_at("/id")?.as_i64()?));
            seen.push(format!("payload={}", action.payload_json().map(|p| p.to_string()).unwrap_or_default()));
            seen.push(format!("type={}", action.json_text().at("/type")?.as_str()?));
            seen.push(format!("slice starts {}", &slice.as_str()[..8]));
            seen.push(format!("as C {}", slice.as_c_str().to_bytes().len()));
            Ok(Reduced::Unchanged)
        })
        .unwrap();
    store.dispatch(r#"{"type":"read","payload":{"id":5}}"#).unwrap();
    let copy = JsonString::new(DOC).unwrap();
    let mut expected = Vec::new();
    for pointer in ["/i", "/esc", "/arr/3/four", "/missing", "/obj/a/b"] {
        expected.push(match copy.at(pointer) {
            Ok(value) => format!("{}={}", pointer, value.json()),
            Err(error) => format!("{}:{}", pointer, error),
        });
    }
    expected.extend([
        "esc=a\"b\u{e9}\n".to_string(),
        "sum=30".to_string(),
        "id=5".to_string(),
        r#"payload={"id":5}"#.to_string(),
        "type=read".to_string(),
        r#"slice starts {"null":"#.to_string(),
        format!("as C {}", DOC.len()),
    ]);
    assert_eq!(*seen.lock().unwrap(), expected);
}

#[test]
fn an_action_without_a_payload_has_nothing_at_any_pointer() {
    let store = Store::new("{}").unwrap();
    let answer = Arc::new(Mutex::new(String::new()));
    let kept = answer.clone();
    store
        .add_reducer_for("k", &["bare"], move |slice, action| {
            if slice.is_none() {
                return Ok(Reduced::Slice("0".into()));
            }
            assert!(action.payload_json().is_none());
            let error = action.payload_at("").unwrap_err();
            *kept.lock().unwrap() = format!("{:?} {}", error.status(), error.message());
            Ok(Reduced::Unchanged)
        })
        .unwrap();
    store.dispatch(r#"{"type":"bare"}"#).unwrap();
    assert_eq!(*answer.lock().unwrap(), r#"NotFound the action "bare" has no payload"#);
}

#[test]
fn json_text_can_go_to_scoped_threads_during_the_callback() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<JsonText<'static>>();
    assert_send_sync::<JsonString>();
    assert_send_sync::<Patch>();
    assert_send_sync::<Reduced>();
}

// ---- Patch reducers (add_patch_reducer: the slice as a JsonRef) -------------------

/// The first value of a slice bigger than 64 KiB (so that the store keeps a
/// patch reducer's copy of it as a tree): 1,500 items of about 100 bytes,
/// an owner whose string has escapes, and a small object.
fn big_slice() -> String {
    let items: Vec<String> = (0..1500)
        .map(|i| {
            format!(
                r#"{{"id":{},"title":"item number {} of the big list","done":{},"weight":{}.5,"tags":["a","b"]}}"#,
                i,
                i,
                i % 3 == 0,
                i
            )
        })
        .collect();
    format!(
        r#"{{"items":[{}],"owner":"ada \"the first\"","meta":{{"version":3,"ratio":0.25,"big":-9007199254740993}},"summary":null}}"#,
        items.join(",")
    )
}

/// What both reducers answer, read through the getters from `slice` (the
/// whole slice as a value): a toggle, an append, a removal, and a summary
/// written from reads of every kind (count, iteration, members, typed
/// getters, a string with escapes).
fn big_answer(slice: turnstate::JsonRef<'_>, action: &Action<'_>) -> Answer {
    match action.kind() {
        "big/toggle" => {
            let path = format!("/items/{}/done", action.payload_at("/id")?.as_u64()?);
            let done = slice.at(&path)?.as_bool()?;
            Ok(Patch::new().replace(&path, if done { "false" } else { "true" }).into())
        }
        "big/add" => Ok(Patch::new().add("/items/-", action.payload().unwrap_or("null")).into()),
        "big/remove" => Ok(Patch::new().remove(&format!("/items/{}", action.payload_at("")?.as_u64()?)).into()),
        "big/summary" => {
            let items = slice.at("/items")?;
            let mut done = 0u64;
            let mut weight = 0f64;
            let mut ids = 0i64;
            for item in items.iter()? {
                done += u64::from(item.at("/done")?.as_bool()?);
                weight += item.at("/weight")?.as_f64()?;
                ids += item.at("/id")?.as_i64()?;
            }
            let keys: Vec<String> = slice.at("/meta")?.members()?.map(|(key, _)| format!("{:?}", key)).collect();
            let top: Vec<String> = slice.members()?.map(|(key, _)| format!("{:?}", key)).collect();
            let last = items.at(&format!("/{}/title", items.len()? - 1))?.as_str()?.into_owned();
            let summary = format!(
                r#"{{"count":{},"done":{},"weight":{},"ids":{},"owner":{:?},"version":{},"ratio":{},"meta":[{}],"top":[{}],"top_count":{},"last":{:?},"tags":{}}}"#,
                items.len()?,
                done,
                weight,
                ids,
                slice.at("/owner")?.as_str()?,
                slice.at("/meta/version")?.as_u64()?,
                slice.at("/meta/ratio")?.as_f64()?,
                keys.join(","),
                top.join(","),
                slice.len()?,
                last,
                slice.at("/items/0/tags")?.json(),
            );
            Ok(Patch::new().replace("/summary", &summary).into())
        }
        _ => Ok(Reduced::Unchanged),
    }
}

#[test]
fn a_patch_reducer_reads_a_big_slice_and_answers_as_a_text_reducer() {
    let store = Store::new("{}").unwrap();
    // The same reads and answers, once over the slice's text (add_reducer_for)
    // and once over the slice the store keeps as a tree (add_patch_reducer).
    store
        .add_reducer_for("flat", &["big/*"], |slice, action| match slice {
            None => Ok(Reduced::Slice(big_slice())),
            Some(slice) => big_answer(slice.root()?, action),
        })
        .unwrap();
    let split_seen = Arc::new(Mutex::new(Vec::new()));
    let seen = split_seen.clone();
    store
        .add_patch_reducer("tree", &["big/*"], move |slice, action| match slice {
            None => Ok(Reduced::Slice(big_slice())),
            Some(slice) => {
                seen.lock().unwrap().push((
                    slice.is_split(),
                    slice.text().is_none(),
                    slice.at("/items")?.is_split(),
                    slice.at("/items/0")?.is_split(),
                    slice.at("/meta")?.text().map(str::to_string),
                ));
                big_answer(slice, action)
            }
        })
        .unwrap();
    assert!(big_slice().len() > 64 * 1024 + 64 * 1024, "the slice is well over 64 KiB");
    let same = |after: &str| {
        assert_eq!(store.get("/tree").unwrap(), store.get("/flat").unwrap(), "after {}", after);
    };
    same("the init calls");
    for action in [
        r#"{"type":"big/summary"}"#,
        r#"{"type":"big/toggle","payload":{"id":0}}"#,
        r#"{"type":"big/toggle","payload":{"id":1499}}"#,
        r#"{"type":"big/toggle","payload":{"id":700}}"#,
        r#"{"type":"big/add","payload":{"id":1500,"title":"a new one","done":true,"weight":1,"tags":[]}}"#,
        r#"{"type":"big/remove","payload":3}"#,
        r#"{"type":"big/summary"}"#,
        r#"{"type":"other"}"#,
    ] {
        store.dispatch(action).unwrap();
        same(action);
    }
    // The summary holds what was read (not only the same in both).
    assert_eq!(store.get("/tree/summary/count").unwrap(), "1500");
    assert_eq!(store.get("/tree/summary/owner").unwrap(), r#""ada \"the first\"""#);
    assert_eq!(store.get("/tree/summary/meta").unwrap(), r#"["version","ratio","big"]"#);
    assert_eq!(store.get("/tree/summary/top_count").unwrap(), "4");
    assert_eq!(store.get("/tree/summary/last").unwrap(), r#""a new one""#);
    assert_eq!(store.get("/tree/summary/tags").unwrap(), r#"["a","b"]"#);
    assert_eq!(store.get("/tree/items/0/done").unwrap(), "false");
    // The patch reducer was called for each "big/*" action, and read split
    // values: the slice and its list have no text, an item and a small
    // object have theirs.
    let seen = split_seen.lock().unwrap();
    assert_eq!(seen.len(), 7);
    for calls in seen.iter() {
        assert_eq!(
            calls,
            &(true, true, true, false, Some(r#"{"version":3,"ratio":0.25,"big":-9007199254740993}"#.to_string()))
        );
    }
}

#[test]
fn a_split_value_has_no_text_and_joins_to_the_slices_text() {
    let store = Store::new("{}").unwrap();
    let joined = Arc::new(Mutex::new(Vec::new()));
    let kept = joined.clone();
    store
        .add_patch_reducer("tree", EVERY_ACTION, move |slice, action| {
            let slice = match slice {
                None => return Ok(Reduced::Slice(big_slice())),
                Some(slice) => slice,
            };
            match action.kind() {
                "join" => {
                    let items = slice.at("/items")?;
                    kept.lock().unwrap().extend([
                        slice.to_json(),
                        slice.to_string(),
                        items.to_json(),
                        format!("{:?}", items),
                        // Scalars of a split value read as for any array or object.
                        slice.as_i64().unwrap_err().to_string(),
                        items.as_str().unwrap_err().to_string(),
                    ]);
                    Ok(Reduced::Unchanged)
                }
                "text" => Ok(Reduced::Slice(slice.json().to_string())), // panics: split
                "toggle" => Ok(Patch::new().replace("/items/5/done", "true").into()),
                _ => Ok(Reduced::Unchanged),
            }
        })
        .unwrap();
    store.dispatch(r#"{"type":"toggle"}"#).unwrap();
    store.dispatch(r#"{"type":"join"}"#).unwrap();
    let whole = store.get("/tree").unwrap();
    let joined = joined.lock().unwrap();
    assert_eq!(joined[0], whole);
    assert_eq!(joined[1], whole);
    assert_eq!(joined[2], store.get("/tree/items").unwrap());
    assert!(joined[3].starts_with("JsonRef(Array, split, "), "{}", joined[3]);
    assert!(joined[4].contains("expected an integer"), "{}", joined[4]);
    assert!(joined[5].contains("expected a string"), "{}", joined[5]);
    // json() of a split value panics in the reducer: the dispatch fails
    // with Status::Panic and the state is unchanged.
    let error = store.dispatch(r#"{"type":"text"}"#).unwrap_err();
    assert_eq!(error.status(), Status::Panic);
    assert!(error.message().contains("JsonRef::json: an object that is split"), "{}", error.message());
    assert_eq!(store.get("/tree").unwrap(), whole);
}
