// testgen-counter-recorder JOURNAL_SO JOURNAL_FILE (make test-testgen)
//
// A typed Swift program records a session: a Store<CounterState> with the
// counter's reducer (Counter.swift: a link to Tests/testgen/SwiftCounter's,
// the very source the TestStore tests import) loads the journal plugin
// (through TurnstatePlugins) with "snapshot_every": 1 and dispatches four
// actions. turnstate-testgen --lang swift-teststore makes TestStore tests of
// the journal. Prints the last state as JSON; exits 1 on an error, 2 on a
// usage error. A target of the root package (not of SwiftCounter's), so that
// make test builds it once, in .build, with the library it already builds.
import Foundation
import Turnstate
import TurnstatePlugins

func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(status)
}

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    fail("usage: testgen-counter-recorder JOURNAL_SO JOURNAL_FILE", status: 2)
}
do {
    let store = Store(initialState: CounterState(), reducer: counterReducer)
    let config = String(decoding: try JSONSerialization.data(withJSONObject: [
        "path": arguments[2], "fsync": "never", "snapshot_every": 1,
    ] as [String: Any]), as: UTF8.self)
    try store.loadPlugin(at: arguments[1], config: config, registry: try counterActions())
    let actions: [any TaggedAction] = [Add(by: 2), Note(text: "milk"), Add(by: 0), Add(by: 3)]
    for action in actions {
        try store.dispatch(action)
    }
    print(String(decoding: try JSONEncoder().encode(store.state), as: UTF8.self))
} catch {
    fail("testgen-counter-recorder: \(error)", status: 1)
}
