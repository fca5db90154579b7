//! Finds libturnstate and tells cargo how to link it.
//!
//! In order:
//! 1. `TURNSTATE_LIB_DIR`: the folder of libturnstate.so (a build tree, as
//!    `make test-rust` uses: build/lib); plugins then come from
//!    `TURNSTATE_PLUGINS_DIR` if set.
//! 2. pkg-config (the program, run as a process: no crate needed):
//!    `pkg-config --libs turnstate` and `--variable=pluginsdir turnstate`, for
//!    an installed library (`make install`, the Debian package); set
//!    PKG_CONFIG_PATH=PREFIX/lib/pkgconfig for a private prefix. `PKG_CONFIG`
//!    names another pkg-config program.
//!
//! The plugins folder found is compiled in as `turnstate_sys::PLUGINS_DIR`.
//! Linking adds no rpath: a library in a folder that the dynamic loader does
//! not search needs one from the program (see the README's Rust section).
use std::env;
use std::process::Command;

fn pkg_config(args: &[&str]) -> Result<String, String> {
    let program = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let output =
        Command::new(&program).args(args).output().map_err(|error| format!("cannot run {}: {}", program, error))?;
    if !output.status.success() {
        return Err(format!(
            "`{} {}` failed: {}",
            program,
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

fn main() {
    for name in ["TURNSTATE_LIB_DIR", "TURNSTATE_PLUGINS_DIR", "PKG_CONFIG_PATH", "PKG_CONFIG", "PKG_CONFIG_LIBDIR"] {
        println!("cargo:rerun-if-env-changed={}", name);
    }
    println!("cargo:rerun-if-changed=build.rs");

    let plugins_dir;
    if let Ok(dir) = env::var("TURNSTATE_LIB_DIR") {
        println!("cargo:rustc-link-search=native={}", dir);
        println!("cargo:rustc-link-lib=dylib=turnstate");
        println!("cargo:lib_dir={}", dir);
        plugins_dir = env::var("TURNSTATE_PLUGINS_DIR").unwrap_or_default();
    } else {
        let libs = match pkg_config(&["--libs", "turnstate"]) {
            Ok(libs) => libs,
            Err(error) => {
                eprintln!(
                    "turnstate-sys: libturnstate not found: {}\n\
                     Install it (`make install PREFIX=...` in the Turnstate repository, or the Debian \
                     package libturnstate-dev), and for a private prefix set \
                     PKG_CONFIG_PATH=PREFIX/lib/pkgconfig; or set TURNSTATE_LIB_DIR to the folder \
                     of libturnstate.so.",
                    error
                );
                std::process::exit(1);
            }
        };
        let mut linked = false;
        for flag in libs.split_whitespace() {
            if let Some(dir) = flag.strip_prefix("-L") {
                println!("cargo:rustc-link-search=native={}", dir);
                println!("cargo:lib_dir={}", dir);
            } else if let Some(name) = flag.strip_prefix("-l") {
                println!("cargo:rustc-link-lib=dylib={}", name);
                linked |= name == "turnstate";
            }
        }
        if !linked {
            println!("cargo:rustc-link-lib=dylib=turnstate");
        }
        plugins_dir = env::var("TURNSTATE_PLUGINS_DIR")
            .ok()
            .or_else(|| pkg_config(&["--variable=pluginsdir", "turnstate"]).ok())
            .unwrap_or_default();
    }
    println!("cargo:plugins_dir={}", plugins_dir);
    println!("cargo:rustc-env=TURNSTATE_SYS_PLUGINS_DIR={}", plugins_dir);
}
