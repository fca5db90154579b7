//! Raw declarations of libturnstate's C API: `Include/turnstate.h` and
//! `Include/turnstate_plugin.h`, as Debian's bindgen makes them
//! (`generate.sh`; the output, `src/bindings.rs`, is committed, and
//! `make test-rust` runs `generate.sh --check` so that it cannot drift from
//! the headers). Every function is `unsafe` and follows the header's rules;
//! the `turnstate` crate is the safe API over them.
//!
//! Linking: `build.rs` asks pkg-config for `turnstate` (or takes
//! `TURNSTATE_LIB_DIR`).
#![allow(non_camel_case_types, non_upper_case_globals, non_snake_case)]
#![allow(clippy::all)]

include!("bindings.rs");

/// `TS_VERSION` of the header these declarations were generated from
/// ("MAJOR.MINOR.PATCH"; bindgen does not expand the macro).
pub const TS_VERSION: &str = "0.2.0";

/// The plugins folder found when this crate was built: pkg-config's
/// `pluginsdir` variable of `turnstate` (or `TURNSTATE_PLUGINS_DIR`), "" when
/// there was none.
pub const PLUGINS_DIR: &str = env!("TURNSTATE_SYS_PLUGINS_DIR");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_constants_agree_with_the_header_macros() {
        let expected = format!("{}.{}.{}", TS_VERSION_MAJOR, TS_VERSION_MINOR, TS_VERSION_PATCH);
        assert_eq!(TS_VERSION, expected);
        assert_eq!(TS_VERSION_NUMBER, TS_VERSION_MAJOR * 10000 + TS_VERSION_MINOR * 100 + TS_VERSION_PATCH);
    }

    #[test]
    fn the_linked_library_is_the_version_of_the_header() {
        let loaded = unsafe { std::ffi::CStr::from_ptr(ts_version_string()) };
        assert_eq!(loaded.to_str().unwrap(), TS_VERSION);
        assert_eq!(unsafe { ts_version_number() }, TS_VERSION_NUMBER);
    }

    #[test]
    fn status_names_match_the_constants() {
        let names = [
            (TS_OK, "TS_OK"),
            (TS_E_ARGUMENT, "TS_E_ARGUMENT"),
            (TS_E_JSON, "TS_E_JSON"),
            (TS_E_NOT_ACTION, "TS_E_NOT_ACTION"),
            (TS_E_REDUCER, "TS_E_REDUCER"),
            (TS_E_REENTRANT, "TS_E_REENTRANT"),
            (TS_E_PLUGIN, "TS_E_PLUGIN"),
            (TS_E_IO, "TS_E_IO"),
            (TS_E_NOMEM, "TS_E_NOMEM"),
            (TS_E_NOT_FOUND, "TS_E_NOT_FOUND"),
            (TS_E_REJECTED, "TS_E_REJECTED"),
            (TS_E_STORE_GONE, "TS_E_STORE_GONE"),
            (TS_E_ABI, "TS_E_ABI"),
            (TS_E_UNKNOWN_ACTION, "TS_E_UNKNOWN_ACTION"),
            (TS_E_MISUSE, "TS_E_MISUSE"),
        ];
        for (status, name) in names {
            let got = unsafe { std::ffi::CStr::from_ptr(ts_status_name(status)) };
            assert_eq!(got.to_str().unwrap(), name);
        }
    }
}
