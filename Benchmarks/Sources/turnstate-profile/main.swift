// turnstate-profile: runs one Swift workload of `make bench` without the
// benchmark harness, for a profiler:
//
//   valgrind --tool=callgrind .build-bench/release/turnstate-profile W1 100000
//   callgrind_annotate --inclusive=yes callgrind.out.<pid>
//
// Arguments: a workload id (W1, W2, W2c, W3, W4, W4-40, W5, W7) and the number of
// operations (default: the workload's own). Prints the id and the count only.

import TurnstateWorkloads

let arguments = CommandLine.arguments.dropFirst()
guard let id = arguments.first, let spec = allWorkloads.first(where: { $0.id == id }) else {
    print("usage: turnstate-profile \(allWorkloads.map(\.id).joined(separator: "|")) [operations]")
    exit(2)
}
let operations = arguments.dropFirst().first.flatMap { Int($0) } ?? spec.operations
let workload = try spec.make(operations)
try workload.run()
try workload.verify()
print(spec.id, operations)

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
