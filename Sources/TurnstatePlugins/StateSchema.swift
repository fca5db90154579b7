#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Turnstate
import TurnstateCore

/// The version of a typed store's state and the migrations from each older
/// version, as typed closures: what the plugins that bring saved state in
/// (the journal, replicate, the inspector's import) and
/// ``Turnstate/Store/replaceState(json:version:schema:)`` migrate with.
/// The rules are those of every face (docs/migrations.md): migrations run in
/// order from the saved version to ``version``; a downgrade
/// (``StoreError/Code/badArgument``) and a missing step
/// (``StoreError/Code/notFound``) are refused before any runs; a step that
/// throws fails with `migration A->B failed: ...`, and nothing is loaded.
///
/// ```swift
/// let schema = try StateSchema(version: 3)
///     .migration(from: 1) { (old: SettingsV1) in SettingsV2(colorScheme: old.theme) }
///     .migration(from: 2) { (old: SettingsV2) in Settings(colorScheme: old.colorScheme, fontSize: 14) }
/// try store.loadPlugin(at: "journal.so", config: #"{"path": "app.journal"}"#, registry: registry, schema: schema)
/// ```
public struct StateSchema: Sendable {
    var migrations: StateMigrations<Data>

    /// The version of the state this program's store makes (0: none declared).
    public var version: UInt32 { migrations.version }

    /// A schema at `version`, without migrations yet.
    public init(version: UInt32) {
        migrations = StateMigrations(version: version)
    }

    /// This schema with the migration from version `from` to `from + 1`
    /// added: `step` gets the saved state decoded as `Old` (the type the
    /// state had at version `from`) and returns its value at the next
    /// version, which is encoded for the next step (or decoded as the
    /// store's `State` after the last). An error it throws fails the step
    /// (a ``StoreError`` keeps its code; any other is
    /// ``StoreError/Code/reducerFailed``). State that does not decode as
    /// `Old` fails the step with ``StoreError/Code/invalidJSON``.
    /// - Throws: ``StoreError/Code/badArgument`` when a migration from
    ///   `from` was added already.
    public func migration<Old: Decodable, New: Encodable>(
        from: UInt32, _ step: @escaping @Sendable (Old) throws -> New
    ) throws(StoreError) -> StateSchema {
        var copy = self
        try copy.migrations.add(from: from) { data throws(StoreError) -> Data in
            let old: Old
            do {
                old = try JSONDecoder().decode(Old.self, from: data)
            } catch {
                throw StoreError(.invalidJSON, "the state does not decode as \(Old.self): \(error)")
            }
            let new: New
            do {
                new = try step(old)
            } catch let error as StoreError {
                throw error
            } catch {
                throw StoreError(.reducerFailed, "\(error)")
            }
            do {
                return try WireFormat.encoder().encode(new)
            } catch {
                throw StoreError(.invalidJSON, "\(New.self) does not encode as JSON: \(error)")
            }
        }
        return copy
    }

    /// `json`, saved at `version`, migrated to ``version`` and decoded as
    /// `State`. Throws as the migrations do, and ``StoreError/Code/invalidJSON``
    /// when the result does not decode.
    public func decode<State: Decodable>(_ type: State.Type, from json: Data, version: UInt32) throws(StoreError) -> State {
        let migrated = try migrations.migrate(json, from: version)
        do {
            return try JSONDecoder().decode(State.self, from: migrated)
        } catch {
            throw StoreError(.invalidJSON, "the migrated state does not decode as \(State.self): \(error)")
        }
    }
}

extension Store where State: Codable {
    /// Replaces the whole state with `json`, saved at `version`, migrated by
    /// `schema` first, then notifies the subscribers: all or nothing (on any
    /// error the state is unchanged and nobody is notified).
    /// - Throws: a downgrade (``StoreError/Code/badArgument``), a missing
    ///   step (``StoreError/Code/notFound``), a step that failed (its code,
    ///   `migration A->B failed: ...`), state that does not decode
    ///   (``StoreError/Code/invalidJSON``).
    public func replaceState(json: Data, version: UInt32, schema: StateSchema) throws(StoreError) {
        let state = try schema.decode(State.self, from: json, version: version)
        try mutateState(.replaceState, notify: true) { current in current = state }
    }
}
