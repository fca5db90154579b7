#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CTurnstate
import TurnstateCore

// The C face of versioned state: ts_store_set_version,
// ts_store_add_migration, ts_store_replace_state_from and the table's
// state_version and replace_state_from. The rules are the core's
// (StateMigrations); this file only calls C migrations and checks what they
// return.

/// A C migration and its context.
struct CMigration: @unchecked Sendable {
    let fn: ts_migration_fn
    let context: UnsafeMutableRawPointer?

    /// Calls the migration with the state's text; its result, checked as a
    /// JSON object. Throws `.reducerFailed` with the migration's message when
    /// it returned NULL, `.invalidJSON` when it returned text that is not one.
    func callAsFunction(_ state: JSONState) throws(StoreError) -> JSONState {
        let (text, _) = try state.wholeText()
        defer { free(text) }
        var message: UnsafeMutablePointer<CChar>?
        let result = fn(text, context, &message)
        defer { free(message) }
        guard let result else {
            let reason = message.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: strlen($0)), as: UTF8.self) }
            throw StoreError(.reducerFailed, reason.flatMap { $0.isEmpty ? nil : $0 } ?? "it returned NULL (it gave no reason)")
        }
        defer { free(result) }
        return try JSONState(parsing: result, context: "its result")
    }
}

extension CStore {
    func setVersion(_ version: UInt32) throws(StoreError) {
        try store.exclusively(.operation) { migrations.setVersion(version) }
    }

    func version() throws(StoreError) -> UInt32 {
        try store.exclusively(.operation) { migrations.version }
    }

    func addMigration(from: UInt32, fn: ts_migration_fn, context: UnsafeMutableRawPointer?) throws(StoreError) {
        let step = CMigration(fn: fn, context: context)
        try store.exclusively(.operation) { () throws(StoreError) in
            do throws(StoreError) {
                try migrations.add(from: from) { state throws(StoreError) in try step(state) }
            } catch {
                throw StoreError(error.code, "ts_store_add_migration: \(error.message)")
            }
        }
    }

    /// Replaces the whole state with `json`, saved at `version`, migrated
    /// to the store's version first. Nothing changes unless every step
    /// succeeded and the result was put in place.
    func replaceState(_ json: UnsafePointer<CChar>, from version: UInt32) throws(StoreError) {
        let saved = try JSONState(parsing: json, context: "replace_state_from")
        try store.mutateState(.replaceState, notify: true) { state throws(StoreError) in
            var replacement = try migrations.migrate(saved, from: version)
            try fillAndReplace(&state, with: &replacement)
        }
    }
}
