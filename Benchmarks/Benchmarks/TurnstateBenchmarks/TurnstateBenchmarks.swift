// The Swift workloads of `make bench` (W1..W7, defined in
// Sources/TurnstateWorkloads) run with ordo-one's package-benchmark.
//
// Each benchmark iteration runs a whole workload of n operations (n is in the
// benchmark's name, "[n=...]", so that Benchmarks/report.py can turn the
// wall-clock time of an iteration into nanoseconds per operation). Making the
// store and its subscribers is not measured. Nothing here asserts a timing; a
// workload whose result is wrong (a lost update) fails the run.

import Benchmark
import TurnstateWorkloads

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// report.py may shrink the workloads for a smoke run (TURNSTATE_BENCH_SCALE,
// default 1) and set the number of measured iterations (TURNSTATE_BENCH_RUNS,
// default 7).
func environment(_ name: String) -> Double? {
    getenv(name).flatMap { Double(String(cString: $0)) }
}

let benchmarks: @Sendable () -> Void = {
    let scale = environment("TURNSTATE_BENCH_SCALE") ?? 1
    let runs = max(1, Int(environment("TURNSTATE_BENCH_RUNS") ?? 7))

    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock],
        timeUnits: .nanoseconds,
        warmupIterations: 1,
        maxDuration: .seconds(60),
        maxIterations: runs
    )

    for spec in allWorkloads {
        let operations = max(10, Int((Double(spec.operations) * scale).rounded()))
        Benchmark("\(spec.id) \(spec.title) [n=\(operations)]") { benchmark in
            let workload = try spec.make(operations)
            benchmark.startMeasurement()
            try workload.run()
            benchmark.stopMeasurement()
            try workload.verify()
        }
    }
}
