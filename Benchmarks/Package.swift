// swift-tools-version: 6.1
import PackageDescription
import struct Foundation.URL

// SwiftPM names a path dependency after its folder ("main", "turnstate", ...).
let rootIdentity = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().lastPathComponent.lowercased()

// The Swift workloads of `make bench` (W1..W5), run with ordo-one's
// package-benchmark. A package of its own so that the library's Package.swift
// needs no benchmark dependency; built with its own scratch path
// (--scratch-path ../.build-bench), release only.
let package = Package(
    name: "TurnstateBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(path: ".."),
        // Only the MallocInterposer trait: the default RuntimeInterposer trait
        // would pull in swift-runtime-interposer, which is not needed here.
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1",
                 traits: ["MallocInterposer"]),
    ],
    targets: [
        // W1..W5 themselves, shared by the harness and the profiling driver.
        .target(
            name: "TurnstateWorkloads",
            dependencies: [.product(name: "Turnstate", package: rootIdentity)]
        ),
        // The package-benchmark target (`swift package benchmark`).
        .executableTarget(
            name: "TurnstateBenchmarks",
            dependencies: [
                "TurnstateWorkloads",
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/TurnstateBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // One workload without the harness, for callgrind / perf.
        .executableTarget(name: "turnstate-profile", dependencies: ["TurnstateWorkloads"]),
    ]
)
