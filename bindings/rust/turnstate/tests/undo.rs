//! The undo plugin (Plugins/undo) from Rust: undo, redo, limit, a filter, a
//! jump refused with its message, clearing, and a bad config. Run by `make
//! test-rust` and `make test-undo` against build/lib and build/plugins.
use std::path::PathBuf;

use turnstate::{Status, Store};

fn count(slice: Option<&str>, action: &turnstate::Action<'_>) -> Result<Option<String>, String> {
    let Some(slice) = slice else { return Ok(Some("0".to_string())) };
    let value: i64 = slice.parse().map_err(|_| format!("count {} is not an integer", slice))?;
    Ok(match action.kind() {
        "INCREMENT" => Some((value + 1).to_string()),
        "DECREMENT" => Some((value - 1).to_string()),
        _ => None,
    })
}

fn status(slice: Option<&str>, action: &turnstate::Action<'_>) -> Result<Option<String>, String> {
    match slice {
        None => Ok(Some("null".to_string())),
        Some(_) if action.kind() == "@@undo/status" => Ok(action.payload().map(str::to_string)),
        Some(_) => Ok(None),
    }
}

fn undo_so() -> PathBuf {
    turnstate::plugins_dir().expect("built with TURNSTATE_PLUGINS_DIR or pkg-config's pluginsdir").join("undo.so")
}

fn undo_store(config: &str) -> Store {
    let store = Store::new("{}").unwrap();
    store.add_reducer("count", count).unwrap();
    store.add_reducer("status", status).unwrap();
    store.load_plugin(undo_so(), Some(config)).unwrap();
    store
}

#[test]
fn undo_and_redo_move_through_the_history() {
    let store = undo_store(r#"{"keys":["count"],"limit":2}"#);
    for _ in 0..4 {
        store.dispatch(r#"{"type":"INCREMENT"}"#).unwrap();
    }
    for _ in 0..4 {
        store.dispatch(r#"{"type":"@@undo"}"#).unwrap();
    }
    assert_eq!(store.get("/count").unwrap(), "2", "limit 2: two undos");
    store.dispatch(r#"{"type":"@@redo"}"#).unwrap();
    assert_eq!(store.get("/count").unwrap(), "3");
    store.dispatch(r#"{"type":"@@undo/status"}"#).unwrap();
    assert_eq!(store.get("/status/past").unwrap(), "1");
    assert_eq!(store.get("/status/future").unwrap(), "1");
}

#[test]
fn filtered_actions_are_not_steps_and_bad_jumps_are_refused() {
    let store = undo_store(r#"{"keys":["count"],"include":["INCREMENT"]}"#);
    store.dispatch(r#"{"type":"INCREMENT"}"#).unwrap();
    store.dispatch(r#"{"type":"DECREMENT"}"#).unwrap();
    store.dispatch(r#"{"type":"@@undo/status"}"#).unwrap();
    assert_eq!(store.get("/status/past").unwrap(), "1");
    let error = store.dispatch(r#"{"type":"@@undo/jump","payload":-2}"#).unwrap_err();
    assert_eq!(error.status(), Status::Rejected);
    assert!(error.message().contains("cannot jump 2 steps back"), "{}", error.message());
    store.dispatch(r#"{"type":"@@undo"}"#).unwrap();
    assert_eq!(store.get("/count").unwrap(), "0");
    store.dispatch(r#"{"type":"@@undo/clear"}"#).unwrap();
    store.dispatch(r#"{"type":"@@undo/status"}"#).unwrap();
    assert_eq!(store.get("/status/future").unwrap(), "0");
}

#[test]
fn a_bad_config_is_refused_with_its_message() {
    let store = Store::new("{}").unwrap();
    let error = store.load_plugin(undo_so(), Some(r#"{"keys":["a","a"]}"#)).unwrap_err();
    assert!(error.message().contains(r#""keys" names "a" twice"#), "{}", error.message());
}
