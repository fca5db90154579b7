//! Versioned state and migrations (docs/migrations.md) through the safe
//! API: migrations 1->2->3 in order, a downgrade, a missing step and a
//! failing migration refused with the state unchanged, and a journal of
//! version 1 restored at version 3. Run by `make test-rust`.
use std::sync::{Arc, Mutex};

use turnstate::{Status, Store};

/// {"n":N} -> {"count":N}
fn v1_to_v2(state: &str) -> Result<String, String> {
    let n = state.strip_prefix(r#"{"n":"#).and_then(|rest| rest.strip_suffix('}')).ok_or("no n")?;
    Ok(format!(r#"{{"count":{}}}"#, n))
}

/// {"count":N} -> {"count":{"value":N}}
fn v2_to_v3(state: &str) -> Result<String, String> {
    let n = state.strip_prefix(r#"{"count":"#).and_then(|rest| rest.strip_suffix('}')).ok_or("no count")?;
    Ok(format!(r#"{{"count":{{"value":{}}}}}"#, n))
}

fn count_v1(slice: Option<&str>, action: &turnstate::Action<'_>) -> Result<Option<String>, String> {
    match slice {
        None => Ok(Some("0".to_string())),
        Some(n) if action.kind() == "counter/add" => {
            Ok(Some((n.parse::<i64>().map_err(|e| e.to_string())? + 1).to_string()))
        }
        Some(_) => Ok(None),
    }
}

fn count_v3(slice: Option<&str>, action: &turnstate::Action<'_>) -> Result<Option<String>, String> {
    match slice {
        None => Ok(Some(r#"{"value":0}"#.to_string())),
        Some(text) if action.kind() == "counter/add" => {
            let n: i64 = text[9..text.len() - 1].parse().map_err(|e: std::num::ParseIntError| e.to_string())?;
            Ok(Some(format!(r#"{{"value":{}}}"#, n + 1)))
        }
        Some(_) => Ok(None),
    }
}

#[test]
fn migrations_run_in_order_from_the_saved_version() {
    let store = Store::new("{}").unwrap();
    assert_eq!(store.version().unwrap(), 0);
    store.set_version(3).unwrap();
    assert_eq!(store.version().unwrap(), 3);
    let calls = Arc::new(Mutex::new(Vec::new()));
    let (a, b) = (calls.clone(), calls.clone());
    store
        .add_migration(2, move |s| {
            a.lock().unwrap().push("2->3");
            v2_to_v3(s)
        })
        .unwrap();
    store
        .add_migration(1, move |s| {
            b.lock().unwrap().push("1->2");
            v1_to_v2(s)
        })
        .unwrap();
    store.replace_state_from(r#"{"n":5}"#, 1).unwrap();
    assert_eq!(store.state().unwrap(), r#"{"count":{"value":5}}"#);
    assert_eq!(*calls.lock().unwrap(), vec!["1->2", "2->3"]);
}

#[test]
fn a_downgrade_a_missing_step_and_a_failure_are_refused() {
    let store = Store::new(r#"{"k":1}"#).unwrap();
    store.set_version(3).unwrap();
    store.add_migration(1, v1_to_v2).unwrap();
    let error = store.replace_state_from(r#"{"n":1}"#, 4).unwrap_err();
    assert_eq!(error.status(), Status::Argument);
    assert!(error.message().contains("newer than this program's version 3: a downgrade is refused"), "{}", error);
    let error = store.replace_state_from(r#"{"n":1}"#, 1).unwrap_err();
    assert_eq!(error.status(), Status::NotFound);
    assert!(error.message().contains("no migration from version 2 to 3"), "{}", error);
    store.add_migration(2, |_| Err("the count is negative".to_string())).unwrap();
    let error = store.replace_state_from(r#"{"n":1}"#, 1).unwrap_err();
    assert_eq!(error.status(), Status::Reducer);
    assert!(error.message().contains("migration 2->3 failed: the count is negative"), "{}", error);
    let error = store.add_migration(2, v2_to_v3).unwrap_err();
    assert_eq!(error.status(), Status::Argument);
    assert_eq!(store.state().unwrap(), r#"{"k":1}"#);
}

#[test]
fn a_version_1_journal_restarts_at_version_3() {
    let plugins = turnstate::plugins_dir().expect("built with TURNSTATE_PLUGINS_DIR or pkg-config's pluginsdir");
    let dir = std::env::temp_dir().join(format!("turnstate-rust-migrate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let journal = dir.join("count.journal");
    let _ = std::fs::remove_file(&journal);
    let config = format!(r#"{{"path":"{}","fsync":"never","snapshot_every":1}}"#, journal.display());
    {
        let v1 = Store::new("{}").unwrap();
        v1.set_version(1).unwrap();
        v1.add_reducer("count", count_v1).unwrap();
        v1.load_plugin(plugins.join("journal.so"), Some(&config)).unwrap();
        v1.dispatch(r#"{"type":"counter/add"}"#).unwrap();
        v1.dispatch(r#"{"type":"counter/add"}"#).unwrap();
    }
    {
        let v3 = Store::new("{}").unwrap();
        v3.set_version(3).unwrap();
        v3.add_migration(1, v1_to_v2_count).unwrap();
        v3.add_migration(2, v2_to_v3).unwrap();
        v3.add_reducer("count", count_v3).unwrap();
        v3.load_plugin(plugins.join("journal.so"), Some(&config)).unwrap();
        assert_eq!(v3.state().unwrap(), r#"{"count":{"value":2}}"#);
    }
    {
        let v1 = Store::new("{}").unwrap();
        v1.set_version(1).unwrap();
        v1.add_reducer("count", count_v1).unwrap();
        let error = v1.load_plugin(plugins.join("journal.so"), Some(&config)).unwrap_err();
        assert!(error.message().contains("newer than this program's version 1: a downgrade is refused"), "{}", error);
        assert_eq!(v1.state().unwrap(), r#"{"count":0}"#);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The journal's version 1 state is {"count":N}: already version 2's shape.
fn v1_to_v2_count(state: &str) -> Result<String, String> {
    Ok(state.to_string())
}
