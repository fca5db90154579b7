import Foundation
import Testing
import Turnstate
import TurnstateC
import TurnstatePlugins

// Versioned state on a typed Swift store (docs/migrations.md): StateSchema's
// typed migrations, replaceState(json:version:schema:), and the journal
// plugin (Plugins/journal, compiled here) restoring a journal that the
// store's version 1 wrote into its version 3.

/// Version 1 of the settings: a theme.
struct SettingsV1: Codable, Equatable, Sendable {
    var theme = "light"
}

/// Version 2: the theme renamed.
struct SettingsV2: Codable, Equatable, Sendable {
    var colorScheme: String
}

/// Version 3: a font size too.
struct SettingsV3: Codable, Equatable, Sendable {
    var colorScheme = "light"
    var fontSize = 14
}

struct SetTheme: TaggedAction, Equatable {
    static let actionType = "theme/set"
    var name: String
}

struct BadMigration: Error, CustomStringConvertible {
    var description: String { "the theme is unknown" }
}

let settingsV1Reducer = Reducer<SettingsV1> { state, action in
    if let set = action as? SetTheme { state.theme = set.name }
}

let settingsV3Reducer = Reducer<SettingsV3> { state, action in
    if let set = action as? SetTheme { state.colorScheme = set.name }
}

func settingsSchema(failing: Bool = false) throws -> StateSchema {
    try StateSchema(version: 3)
        .migration(from: 1) { (old: SettingsV1) -> SettingsV2 in SettingsV2(colorScheme: old.theme) }
        .migration(from: 2) { (old: SettingsV2) throws -> SettingsV3 in
            if failing { throw BadMigration() }
            return SettingsV3(colorScheme: old.colorScheme, fontSize: 14)
        }
}

final class Notifications: @unchecked Sendable {
    private let lock = NSLock()
    private var calls = 0
    func add() { lock.withLock { calls += 1 } }
    var count: Int { lock.withLock { calls } }
}

@Suite struct MigrationTests {
    @Test func migrationsRunInOrderFromTheSavedVersion() throws {
        let store = Store(initialState: SettingsV3(), reducer: settingsV3Reducer)
        let notified = Notifications()
        let subscription = try store.subscribe { _ in notified.add() }
        try store.replaceState(json: Data(#"{"theme":"dark"}"#.utf8), version: 1, schema: try settingsSchema())
        #expect(try store.getState() == SettingsV3(colorScheme: "dark", fontSize: 14))
        #expect(notified.count == 1)
        withExtendedLifetime(subscription) {}
        try store.replaceState(json: Data(#"{"colorScheme":"blue"}"#.utf8), version: 2, schema: try settingsSchema())
        #expect(try store.getState() == SettingsV3(colorScheme: "blue", fontSize: 14))
    }

    @Test func aDowngradeIsRefusedAndTheStateUnchanged() throws {
        let store = Store(initialState: SettingsV3(), reducer: settingsV3Reducer)
        let error = #expect(throws: StoreError.self) {
            try store.replaceState(json: Data(#"{"x":1}"#.utf8), version: 4, schema: try settingsSchema())
        }
        #expect(error?.code == .badArgument)
        #expect(error?.message.contains("the state is of version 4, newer than this program's version 3: a downgrade is refused") == true)
        #expect(try store.getState() == SettingsV3())
    }

    @Test func aFailingMigrationNamesItsStepAndChangesNothing() throws {
        let store = Store(initialState: SettingsV3(), reducer: settingsV3Reducer)
        let error = #expect(throws: StoreError.self) {
            try store.replaceState(json: Data(#"{"theme":"dark"}"#.utf8), version: 1, schema: try settingsSchema(failing: true))
        }
        #expect(error?.code == .reducerFailed)
        #expect(error?.message == "migration 2->3 failed: the theme is unknown")
        #expect(try store.getState() == SettingsV3())
    }

    @Test func aMissingStepAndADuplicateAreRefused() throws {
        let store = Store(initialState: SettingsV3(), reducer: settingsV3Reducer)
        let schema = try StateSchema(version: 3)
            .migration(from: 1) { (old: SettingsV1) in SettingsV2(colorScheme: old.theme) }
        let missing = #expect(throws: StoreError.self) {
            try store.replaceState(json: Data(#"{"theme":"dark"}"#.utf8), version: 1, schema: schema)
        }
        #expect(missing?.code == .notFound)
        #expect(missing?.message.contains("there is no migration from version 2 to 3") == true)
        let duplicate = #expect(throws: StoreError.self) {
            _ = try schema.migration(from: 1) { (old: SettingsV1) in SettingsV2(colorScheme: old.theme) }
        }
        #expect(duplicate?.code == .badArgument)
    }

    @Test func aVersion1JournalRestartsAtVersion3() throws {
        let folder = try PluginBuilder.privateFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let plugin = folder.appendingPathComponent("journal.so").path
        let source = URL(fileURLWithPath: PluginBuilder.include).deletingLastPathComponent()
            .appendingPathComponent("Plugins/journal/journal.c").path
        let cc = Process()
        cc.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        cc.arguments = ["cc", PluginBuilder.cStandard, "-shared", "-fPIC", "-I", PluginBuilder.include, source, "-o", plugin, "-lpthread"]
        try cc.run()
        cc.waitUntilExit()
        try #require(cc.terminationStatus == 0)
        let registry = try ActionRegistry([SetTheme.self])
        let config = #"{"path": "\#(folder.path)/settings.journal", "fsync": "never", "snapshot_every": 1}"#

        do {
            let v1 = Store(initialState: SettingsV1(), reducer: settingsV1Reducer)
            try v1.loadPlugin(at: plugin, config: config, registry: registry, schema: StateSchema(version: 1))
            try v1.dispatch(SetTheme(name: "dark"))
            v1.close()
        }
        do {
            let v3 = Store(initialState: SettingsV3(), reducer: settingsV3Reducer)
            try v3.loadPlugin(at: plugin, config: config, registry: registry, schema: try settingsSchema())
            #expect(try v3.getState() == SettingsV3(colorScheme: "dark", fontSize: 14))
            v3.close()
        }
        do {
            let v1 = Store(initialState: SettingsV1(), reducer: settingsV1Reducer)
            let error = #expect(throws: StoreError.self) {
                try v1.loadPlugin(at: plugin, config: config, registry: registry, schema: StateSchema(version: 1))
            }
            #expect(error?.message.contains("newer than this program's version 1: a downgrade is refused") == true)
            #expect(try v1.getState() == SettingsV1())
            v1.close()
        }
    }
}
