// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "turnstate",
    products: [
        /// The typed Swift store: `import Turnstate`.
        .library(name: "Turnstate", targets: ["Turnstate"]),
    ],
    targets: [
        .target(name: "Turnstate"),
        .executableTarget(name: "turnstate-demo", dependencies: ["Turnstate"], path: "Examples/SwiftDemo"),
        .testTarget(name: "TurnstateTests", dependencies: ["Turnstate"]),
    ],
    swiftLanguageModes: [.v6]
)
