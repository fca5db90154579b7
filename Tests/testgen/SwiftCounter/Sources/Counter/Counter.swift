// A typed store's state, actions and reducer: what a Swift program records a
// session of, and what the generated TestStore test replays it through.
import Foundation
import Turnstate

public struct CounterState: Codable, Equatable, Sendable {
    public var count: Int
    public var notes: [String]
    public init(count: Int = 0, notes: [String] = []) {
        self.count = count
        self.notes = notes
    }
}

public struct Add: TaggedAction, Equatable {
    public static let actionType = "counter/add"
    public var by: Int
    public init(by: Int) { self.by = by }
}

public struct Note: TaggedAction, Equatable {
    public static let actionType = "notes/add"
    public var text: String
    public init(text: String) { self.text = text }
}

/// The action types of the program: what the journal's actions decode into.
public func counterActions() throws -> ActionRegistry { try ActionRegistry([Add.self, Note.self]) }

/// The reducer. COUNTER_CHANGED=1 in the environment changes it (counter/add
/// adds one more), so the suite checks that the generated test fails on a
/// reducer change without building the package twice.
public let counterReducer = Reducer<CounterState> { state, action in
    let changed = ProcessInfo.processInfo.environment["COUNTER_CHANGED"] == "1"
    switch action {
    case let add as Add: state.count += add.by + (changed ? 1 : 0)
    case let note as Note: state.notes.append(note.text)
    default: break
    }
}
