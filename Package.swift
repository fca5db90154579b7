// swift-tools-version: 6.1
import PackageDescription

// Linker options for the shipped libturnstate.so (SONAME, version script,
// rpath) are passed by the Makefile, not here: unsafeFlags would stop other
// packages from depending on this one by version.

// TURNSTATE_LIBRARY_ONLY=1: the Makefile's library and plugin builds (make,
// make run, make install, and the sanitizer builds of the library) set it, so
// that building the C library resolves no package of the documentation or of
// the tests: the manifest then leaves out TurnstateTesting (its dependencies
// are xctest-dynamic-overlay and swift-custom-dump), the test targets, and
// swift-docc-plugin. Without it (swift build, swift test, make test, make
// docs, and every package that depends on this one) the manifest is whole:
// a user's package gets TurnstateTesting.
let libraryOnly = Context.environment["TURNSTATE_LIBRARY_ONLY"] == "1"

let package = Package(
    name: "turnstate",
    products: [
        /// The typed Swift store: `import Turnstate`.
        .library(name: "Turnstate", targets: ["Turnstate"]),
        /// The C API compiled into a Swift program: `import CTurnstate` and call `ts_*`.
        .library(name: "TurnstateC", targets: ["TurnstateC", "CTurnstate"]),
        /// Typed Swift stores loading the same plugins: `import TurnstatePlugins`.
        .library(name: "TurnstatePlugins", targets: ["TurnstatePlugins"]),
        /// libturnstate.so: the C API for C and every language with a C FFI.
        .library(name: "turnstate", type: .dynamic, targets: ["TurnstateC"]),
        /// The logger middleware plugin, written in Swift: load it with ts_store_load_plugin.
        .library(name: "turnstate-logger", type: .dynamic, targets: ["TurnstateLoggerPlugin"]),
    ] + (libraryOnly ? [] : [
        /// Exhaustive tests of a store in the style of TCA: `import TurnstateTesting`
        /// in a test target and use `TestStore`.
        .library(name: "TurnstateTesting", targets: ["TurnstateTesting"]),
    ]),
    dependencies: libraryOnly ? [] : [
        // For TurnstateTesting only: reportIssue (swift-testing and XCTest)
        // and the state diffs of a failed expectation.
        .package(url: "https://github.com/pointfreeco/xctest-dynamic-overlay", from: "1.13.1"),
        .package(url: "https://github.com/pointfreeco/swift-custom-dump", from: "1.7.3"),
        // `swift package generate-documentation` (make docs).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // The core: the typed store and its semantics, without Foundation.
        .target(name: "TurnstateCore"),
        // `import Turnstate`: the core re-exported, plus the Codable wire form
        // of actions (Foundation's JSON coders).
        .target(name: "Turnstate", dependencies: ["TurnstateCore"]),
        // The public C header (Include/, through a symlink).
        .target(name: "CTurnstate"),
        // A thin C API over simdjson, the JSON parser of the C face.
        .target(name: "CTurnstateJSON", linkerSettings: [.linkedLibrary("simdjson")]),
        // libffi closures, thread-local error text, reducer calls, and the
        // C API's JSON getters (over CTurnstateJSON).
        .target(name: "CTurnstateSupport", dependencies: ["CTurnstateJSON"], linkerSettings: [.linkedLibrary("ffi")]),
        // The C face: implements Include/turnstate.h over the core store.
        // It links TurnstateCore only: libturnstate.so needs no Foundation.
        .target(name: "TurnstateC", dependencies: ["TurnstateCore", "CTurnstate", "CTurnstateJSON", "CTurnstateSupport"],
                exclude: ["CAPI/exports.map", "PluginHost/ShutdownProtocol.pml"]),
        // Typed Swift stores load plugins through the C face's plugin host.
        .target(name: "TurnstatePlugins", dependencies: ["Turnstate", "TurnstateC", "CTurnstate"]),
        .executableTarget(name: "turnstate-demo", dependencies: ["Turnstate"], path: "Examples/SwiftDemo"),
        // The logger plugin (Plugins/logger): reaches the store only through ts_store_api.
        .target(name: "TurnstateLoggerPlugin", dependencies: ["CTurnstate"], path: "Plugins/logger", exclude: ["README.md"]),
    ] + (libraryOnly ? [] : [
        // TestStore: exhaustive tests of a store's state changes and received actions.
        .target(name: "TurnstateTesting", dependencies: [
            // TurnstateCore directly too: its documentation links into the core's.
            "Turnstate", "TurnstateCore",
            .product(name: "IssueReporting", package: "xctest-dynamic-overlay"),
            // Links the bridges to swift-testing's Issue.record and XCTFail that
            // reportIssue looks up at run time (needed on Linux).
            .product(name: "IssueReportingTestSupport", package: "xctest-dynamic-overlay"),
            .product(name: "CustomDump", package: "swift-custom-dump"),
        ]),
        .testTarget(name: "TurnstateTests", dependencies: ["Turnstate"]),
        .testTarget(name: "TurnstateTestingTests", dependencies: ["TurnstateTesting"]),
        .testTarget(name: "TurnstateCTests", dependencies: ["Turnstate", "TurnstateC", "TurnstatePlugins"]),
        // make test-testgen: a typed Swift program that records a session with
        // the journal plugin (its Counter.swift is Tests/testgen/SwiftCounter's).
        .executableTarget(name: "testgen-counter-recorder", dependencies: ["Turnstate", "TurnstatePlugins"],
                          path: "Tests/testgen/SwiftCounterRecorder"),
    ]),
    swiftLanguageModes: [.v6]
    // No cxxLanguageStandard: the toolchain's clang compiles C++ as gnu++17 by
    // default, as simdjson needs, and a package-wide standard also reaches
    // swift-symbolgraph-extract for the C targets (-std=c++17 on C), which
    // breaks `swift package generate-documentation` (every target).
)
