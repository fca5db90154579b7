/// A state's schema version and the migrations that bring state saved by an
/// older version of the program up to it (redux-persist's `version` and
/// `createMigrate`). One set of rules for every face: the C API
/// (`ts_store_set_version`, `ts_store_add_migration`,
/// `ts_store_replace_state_from`), the plugins that bring old state in (the
/// journal, replicate, the inspector's import) and the Swift, Python, Rust
/// and C++ wrappers all migrate through ``migrate(_:from:)``.
///
/// Rules:
/// - Versions are integers from 0; 0 is the version of state saved without
///   one (before a program declared a version).
/// - A migration goes from one version to the next (`from` to `from + 1`).
///   State saved at version `v` below ``version`` goes through the
///   migrations from `v`, `v + 1`, ... `version - 1`, in that order.
/// - State saved at a version newer than ``version`` (a downgrade) is
///   refused with ``StoreError/Code/badArgument``, before any migration runs.
/// - A missing step is refused with ``StoreError/Code/notFound``, before any
///   migration runs.
/// - A migration that fails stops the chain: the error's message begins
///   `migration A->B failed: ` and nothing is loaded.
public struct StateMigrations<Value>: @unchecked Sendable {
    /// One step: the value at version `from`, turned into the value at `from + 1`.
    public typealias Step = (Value) throws(StoreError) -> Value

    /// The version of the state this program's reducers make.
    public private(set) var version: UInt32
    private var steps: [UInt32: Step] = [:]

    /// No migrations yet, at `version` (0: no version declared).
    public init(version: UInt32 = 0) {
        self.version = version
    }

    /// Declares the version of the state this program's reducers make.
    public mutating func setVersion(_ version: UInt32) {
        self.version = version
    }

    /// Whether a migration from `from` was added.
    public func hasStep(from: UInt32) -> Bool { steps[from] != nil }

    /// Adds the migration from version `from` to `from + 1`. Refused with
    /// ``StoreError/Code/badArgument`` when there is one from `from` already
    /// or `from` is the largest version (there is no `from + 1`).
    public mutating func add(from: UInt32, _ step: @escaping Step) throws(StoreError) {
        guard from < UInt32.max else {
            throw StoreError(.badArgument, "a migration from version \(from) would have no version to go to")
        }
        guard steps[from] == nil else {
            throw StoreError(.badArgument, "there is a migration from version \(from) to \(from + 1) already")
        }
        steps[from] = step
    }

    /// Checks that state saved at `stored` can be brought to ``version``:
    /// not newer, and every step there. Throws as ``migrate(_:from:)``.
    public func check(from stored: UInt32) throws(StoreError) {
        guard stored <= version else {
            throw StoreError(.badArgument,
                             "the state is of version \(stored), newer than this program's version \(version): a downgrade is refused, nothing was loaded")
        }
        var from = stored
        while from < version {
            guard steps[from] != nil else {
                throw StoreError(.notFound,
                                 "the state is of version \(stored) and this program's is \(version), but there is no migration from version \(from) to \(from + 1): nothing was loaded")
            }
            from += 1
        }
    }

    /// `value`, saved at version `stored`, brought to ``version`` by the
    /// migrations in order (`value` itself when `stored == version`).
    /// Throws, with nothing migrated: a downgrade
    /// (``StoreError/Code/badArgument``), a missing step
    /// (``StoreError/Code/notFound``), a step that failed (its code, and a
    /// message that begins `migration A->B failed: `).
    public func migrate(_ value: Value, from stored: UInt32) throws(StoreError) -> Value {
        try check(from: stored)
        var value = value
        var from = stored
        while from < version {
            do {
                value = try steps[from]!(value)
            } catch {
                throw StoreError(status: error.status, "migration \(from)->\(from + 1) failed: \(error.message)")
            }
            from += 1
        }
        return value
    }
}
