// swift-tools-version:6.0
// A typed Swift program's state, actions and reducer (make test-testgen): the
// session of it becomes a TestStore test (turnstate-testgen --lang
// swift-teststore). The turnstate package is this checkout, or
// $TURNSTATE_PACKAGE.
import PackageDescription
import Foundation

let turnstate = Context.environment["TURNSTATE_PACKAGE"]
    ?? URL(fileURLWithPath: Context.packageDirectory).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

let package = Package(
    name: "SwiftCounter",
    platforms: [.macOS(.v15)],
    products: [.library(name: "Counter", targets: ["Counter"])],
    dependencies: [.package(path: turnstate)],
    targets: [
        .target(name: "Counter", dependencies: [.product(name: "Turnstate", package: URL(fileURLWithPath: turnstate).lastPathComponent)]),
    ]
)
