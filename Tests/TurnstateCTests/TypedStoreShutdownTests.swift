import Foundation
import Testing
import Turnstate
import TurnstateC
import TurnstatePlugins
#if canImport(Glibc)
import Glibc
#endif

/// The plugin thread's action and the one its destroy() sends.
struct Tick: TaggedAction, Equatable {
    static let actionType = "tick"
}

struct FromDestroy: TaggedAction, Equatable {
    static let actionType = "from-destroy"
}

/// The shutdown protocol for a typed store: releasing it closes it before
/// any plugin's destroy() runs, so no plugin runs after its destroy() and a
/// dispatch from a plugin thread or from destroy() is refused with
/// `storeReleased` (TS_E_STORE_GONE). The watcher plugin
/// (Tests/plugins/shutdown_plugin.c) counts violations from inside.
@Suite struct TypedStoreShutdownTests {
    /// Offsets of the Int32 fields of sp_counters (Tests/plugins/shutdown_plugin.h).
    enum Field: Int {
        case created = 0, destroyed = 4, runAfterDestroy = 8, okAfterDestroyBegan = 12, goneAfterDestroyBegan = 16,
             threadDispatches = 20, destroyDispatchStatus = 24
    }

    static func buildWatcher(in folder: URL) throws -> String {
        let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        let output = folder.appendingPathComponent("watch.so").path
        let cc = Process()
        cc.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        cc.arguments = ["cc", PluginBuilder.cStandard, "-Wall", "-Werror", "-shared", "-fPIC", "-I", PluginBuilder.include,
                        "-I", tests.appendingPathComponent("plugins").path,
                        tests.appendingPathComponent("plugins/shutdown_plugin.c").path, "-o", output, "-lpthread"]
        try cc.run()
        cc.waitUntilExit()
        guard cc.terminationStatus == 0 else { throw StoreError(.io, "cc failed for the shutdown watcher") }
        return output
    }

    @Test func releasingAStoreClosesItBeforeItsPluginsAreDestroyed() throws {
        let folder = try PluginBuilder.privateFolder()
        let path = try Self.buildWatcher(in: folder)
        let registry = try ActionRegistry([Increment.self, Tick.self, FromDestroy.self])
        var report: UnsafeMutableRawPointer?
        func read(_ field: Field) -> Int32 {
            // Written by the plugin's threads: read it as they write it.
            report!.advanced(by: field.rawValue).assumingMemoryBound(to: Int32.self).pointee
        }
        let rounds = 30
        for _ in 0..<rounds {
            var store: Store<Counter>? = Store(initialState: Counter(), reducer: counterReducer)
            try store!.loadPlugin(at: path, config: #"{"id":1,"dispatch_in_destroy":true,"thread":true}"#,
                                  registry: registry)
            try store!.loadPlugin(at: path, config: #"{"id":2}"#, registry: registry)
            if report == nil {
                let handle = try #require(dlopen(path, RTLD_NOW | RTLD_NOLOAD))
                report = dlsym(handle, "sp_report")
                try #require(report != nil)
                memset(report!, 0, 28)
            }
            try store!.dispatch(Increment(by: 1))
            // Release the store while its plugin thread dispatches: wait
            // (bounded) until that thread has dispatched in this round.
            let before = read(.threadDispatches)
            for _ in 0..<1000 where read(.threadDispatches) == before { usleep(1000) }
            store = nil // the plugin thread may hold the last reference for a moment
        }
        // Let a store released on a plugin thread finish going.
        for _ in 0..<500 where read(.destroyed) < Int32(2 * rounds) { usleep(2000) }
        #expect(read(.destroyed) == Int32(2 * rounds))
        #expect(read(.runAfterDestroy) == 0)
        #expect(read(.okAfterDestroyBegan) == 0)
        #expect(read(.destroyDispatchStatus) == StoreError.Code.storeReleased.rawValue)
        #expect(read(.threadDispatches) > 0)
    }

    @Test func aClosedStoreRefusesEveryNewCall() throws {
        let store = Store(initialState: Counter(), reducer: counterReducer)
        let seen = Recorder<Int>()
        try store.subscribe { seen.append($0.count) }.kept()
        try store.dispatch(Increment(by: 1))
        store.close()
        #expect(store.isClosed)
        for call in [{ try store.dispatch(Increment(by: 1)) }, { _ = try store.getState() },
                     { _ = try store.subscribe { _ in } }] as [() throws -> Void] {
            do {
                try call()
                Issue.record("a closed store took a call")
            } catch let error as StoreError {
                #expect(error.code == .storeReleased)
                #expect(error.message.contains("closed"))
            }
        }
        #expect(seen.values == [1])
    }
}
