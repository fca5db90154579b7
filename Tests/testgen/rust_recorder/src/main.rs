//! The flight recorder (Plugins/recorder) loaded from Rust, for make
//! test-testgen (Tests/testgen/run.py):
//!
//!     record RECORDER_SO CONFIG_JSON
//!
//! A turnstate::Store with the reducers of src/lib.rs loads the recorder with
//! CONFIG_JSON, dispatches a few actions (one "secret/login" with a token),
//! then "items/boom", whose reducer fails: the dispatch returns the error
//! and the recorder dumps. Prints that error and the state; exits 0 when the
//! dispatch failed as it should, 1 otherwise, 2 on a usage or setup error.
use std::process::{exit, ExitCode};

use turnstate::Store;

fn main() -> ExitCode {
    // The store is dropped (the recorder destroyed) before the process ends:
    // valgrind finds no leak.
    ExitCode::from(run())
}

fn run() -> u8 {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: record RECORDER_SO CONFIG_JSON");
        exit(2);
    }
    let store = Store::new("{}").unwrap_or_else(|error| {
        eprintln!("record: the store: {}", error.message());
        exit(2)
    });
    for (key, reducer) in rust_recorder::REDUCERS {
        store.add_reducer(key, move |slice, action| reducer(slice, action.kind(), action.payload())).unwrap_or_else(
            |error| {
                eprintln!("record: add_reducer {}: {}", key, error.message());
                exit(2)
            },
        );
    }
    if let Err(error) = store.load_plugin(&args[1], Some(&args[2])) {
        eprintln!("record: load_plugin {}: {}", args[1], error.message());
        exit(2);
    }
    for action in [
        r#"{"type":"items/add","payload":{"id":1}}"#,
        r#"{"type":"secret/login","payload":{"token":"hunter2"}}"#,
        r#"{"type":"counter/inc"}"#,
        r#"{"type":"items/add","payload":{"id":2}}"#,
        r#"{"type":"counter/inc"}"#,
    ] {
        if let Err(error) = store.dispatch(action) {
            eprintln!("record: {}: {}", action, error.message());
            exit(2);
        }
    }
    let failed = match store.dispatch(r#"{"type":"items/boom"}"#) {
        Ok(()) => {
            println!("items/boom: dispatched");
            false
        }
        Err(error) => {
            println!("items/boom: {:?}: {}", error.status(), error.message());
            true
        }
    };
    println!("state: {}", store.get("").unwrap_or_default());
    if failed {
        0
    } else {
        1
    }
}
