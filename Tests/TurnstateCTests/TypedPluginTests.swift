import Foundation
import Testing
import Turnstate
import TurnstateC
import TurnstatePlugins

// A typed Swift store loads the same .so plugins as C stores. These tests
// compile small C plugins with the system compiler into a private folder.

struct Counter: Codable, Equatable, Sendable {
    var count = 0
    var log: [String] = []
}

struct Increment: TaggedAction, Equatable {
    static let actionType = "counter/inc"
    var by: Int
}

struct Note: TaggedAction, Equatable {
    static let actionType = "counter/note"
    var text: String
}

/// Not a TaggedAction: plugins never see it.
struct Reset: Action {}

let counterReducer = Reducer<Counter> { state, action in
    switch action {
    case let inc as Increment: state.count += inc.by
    case let note as Note: state.log.append(note.text)
    case is Reset: state = Counter()
    default: break
    }
}

enum PluginBuilder {
    static let include = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Include").path

    /// The C standard of the fixture plugins: the Makefile's (TS_C_STD, which
    /// it exports), and its value when `swift test` runs without make.
    static let cStandard = ProcessInfo.processInfo.environment["TS_C_STD"] ?? "-std=c99"

    /// Compiles `body` (the plugin's run function and anything it needs) into
    /// `<folder>/<name>.so` and returns its path.
    static func build(_ name: String, in folder: URL, run body: String) throws -> String {
        let source = folder.appendingPathComponent("\(name).c")
        let output = folder.appendingPathComponent("\(name).so").path
        // The default create keeps a copy of the config; destroy frees it.
        let lifecycle = body.contains("static void destroy") ? "" : """
            static ts_status create(const char *config, const ts_store_api *store, void **self, char **error) {
                (void)store; (void)error; *self = strdup(config); return TS_OK;
            }
            static void destroy(void *self) { free(self); }
            """
        let text = """
            #define _DEFAULT_SOURCE
            #include <stdio.h>
            #include <stdlib.h>
            #include <string.h>
            #include "turnstate_plugin.h"
            \(lifecycle)
            \(body)
            static const ts_plugin descriptor = {
                TS_PLUGIN_ABI_VERSION, sizeof(ts_plugin), "\(name)", "1.0", create, run, destroy };
            const ts_plugin *ts_plugin_entry(uint32_t host) { (void)host; return &descriptor; }
            """
        try text.write(to: source, atomically: true, encoding: .utf8)
        let cc = Process()
        cc.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        cc.arguments = ["cc", cStandard, "-Wall", "-Werror", "-shared", "-fPIC", "-I", include, source.path, "-o", output]
        try cc.run()
        cc.waitUntilExit()
        guard cc.terminationStatus == 0 else { throw StoreError(.io, "cc failed for \(name)") }
        return output
    }

    static func privateFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("turnstate-plugins-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        return folder
    }
}

@Suite struct TypedPluginTests {
    let registry: ActionRegistry
    let folder: URL

    init() throws {
        registry = try ActionRegistry([Increment.self, Note.self])
        folder = try PluginBuilder.privateFolder()
    }

    @Test func pluginSeesTaggedJSONAndChangedActionIsDecodedBack() throws {
        // Doubles every increment by rewriting the payload; records what it saw.
        let path = try PluginBuilder.build("doubler", in: folder, run: """
            static ts_status run(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *self) {
                (void)store; (void)self;
                if (strcmp(action->type, "counter/inc") == 0 && action->payload != NULL) {
                    int by = atoi(strchr(action->payload, ':') + 1);
                    char text[128];
                    snprintf(text, sizeof text, "{\\"type\\":\\"counter/inc\\",\\"payload\\":{\\"by\\":%d}}", by * 2);
                    return next(text);
                }
                return next(action->json);
            }
            """)
        let store = Store(initialState: Counter(), reducer: counterReducer)
        try store.loadPlugin(at: path, registry: registry)
        try store.dispatch(Increment(by: 3))
        try store.dispatch(Note(text: "unchanged"))
        #expect(try store.getState() == Counter(count: 6, log: ["unchanged"]))
    }

    @Test func actionTheRegistryCannotDecodeIsReportedNotDropped() throws {
        let path = try PluginBuilder.build("renamer", in: folder, run: """
            static ts_status run(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *self) {
                (void)store; (void)self; (void)action;
                return next("{\\"type\\":\\"counter/unknown\\"}");
            }
            """)
        let store = Store(initialState: Counter(), reducer: counterReducer)
        try store.loadPlugin(at: path, registry: registry)
        do {
            try store.dispatch(Increment(by: 1))
            Issue.record("an action the registry cannot decode was dropped silently")
        } catch {
            #expect(error.code == .unknownAction)
            #expect(error.message.contains("counter/unknown"))
        }
        #expect(try store.getState().count == 0)
    }

    @Test func nonTaggedActionsPassThePluginBy() throws {
        let path = try PluginBuilder.build("refuser", in: folder, run: """
            static ts_status run(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *self) {
                (void)next; (void)self;
                return store->fail(TS_E_REJECTED, action->type);
            }
            """)
        let store = Store(initialState: Counter(), reducer: counterReducer)
        try store.dispatch(Increment(by: 5))
        try store.loadPlugin(at: path, registry: registry)
        do {
            try store.dispatch(Increment(by: 1))
            Issue.record("the plugin should have refused the action")
        } catch {
            #expect(error.code == .rejected)
            #expect(error.message.contains("counter/inc"))
        }
        try store.dispatch(Reset())
        #expect(try store.getState() == Counter())
    }

    @Test func pluginTableReadsDispatchesAndReplacesTypedState() throws {
        // On "counter/note" with text "snapshot": reads /count, dispatches a
        // note with it, then restores a state through replace_state.
        let path = try PluginBuilder.build("reader", in: folder, run: """
            static ts_status run(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *self) {
                (void)self;
                if (strcmp(action->type, "counter/note") == 0 && strstr(action->payload, "snapshot")) {
                    char *count = NULL;
                    ts_status status = store->get_state("/count", &count);
                    if (status != TS_OK) return status;
                    char text[128];
                    snprintf(text, sizeof text, "{\\"type\\":\\"counter/note\\",\\"payload\\":{\\"text\\":\\"count=%s\\"}}", count);
                    store->free(count);
                    status = store->dispatch(text);
                    if (status != TS_OK) return status;
                    return store->replace_state("{\\"count\\":100,\\"log\\":[\\"restored\\"]}");
                }
                return next(action->json);
            }
            """)
        let store = Store(initialState: Counter(), reducer: counterReducer)
        try store.loadPlugin(at: path, registry: registry)
        try store.dispatch(Increment(by: 7))
        let seen = Recorder<Counter>()
        try store.subscribe { seen.append($0) }.kept()
        try store.dispatch(Note(text: "snapshot"))
        #expect(seen.values.first == Counter(count: 7, log: ["count=7"]))
        #expect(try store.getState() == Counter(count: 100, log: ["restored"]))
    }

    @Test func applyRunsTheReducersAndListenersWithoutTheMiddleware() throws {
        // On a note "apply": applies an increment, an action the registry
        // cannot decode, and a note that says how many times run() ran.
        let path = try PluginBuilder.build("applier", in: folder, run: """
            static int runs = 0;
            static ts_status run(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *self) {
                (void)self;
                runs++;
                if (strcmp(action->type, "counter/note") == 0 && strstr(action->payload, "apply")) {
                    if (store->struct_size < offsetof(ts_store_api, apply) + sizeof store->apply)
                        return store->fail(TS_E_ABI, "the table has no apply");
                    ts_status status = store->apply("{\\"type\\":\\"counter/inc\\",\\"payload\\":{\\"by\\":5}}");
                    if (status != TS_OK) return status;
                    if (store->apply("{\\"type\\":\\"counter/unknown\\"}") != TS_E_UNKNOWN_ACTION)
                        return store->fail(TS_E_REJECTED, "an action the registry cannot decode was applied");
                    char text[128];
                    snprintf(text, sizeof text, "{\\"type\\":\\"counter/note\\",\\"payload\\":{\\"text\\":\\"runs=%d\\"}}", runs);
                    return store->apply(text);
                }
                return next(action->json);
            }
            """)
        let store = Store(initialState: Counter(), reducer: counterReducer)
        try store.loadPlugin(at: path, registry: registry)
        let seen = Recorder<Counter>()
        try store.subscribe { seen.append($0) }.kept()
        try store.dispatch(Note(text: "apply"))
        // Both applied actions reached the reducers and the listener, and
        // neither went through the plugin (run() ran once).
        #expect(try store.getState() == Counter(count: 5, log: ["runs=1"]))
        #expect(seen.values == [Counter(count: 5, log: []), Counter(count: 5, log: ["runs=1"])])
    }

    @Test func pluginIsDestroyedWithTheStore() throws {
        // The config is a JSON string: a file that destroy() creates.
        let marker = folder.appendingPathComponent("destroyed").path
        let path = try PluginBuilder.build("marker", in: folder, run: """
            static ts_status create(const char *config, const ts_store_api *store, void **self, char **error) {
                (void)store; (void)error;
                char *path = strdup(config + 1);
                path[strlen(path) - 1] = '\\0';
                *self = path;
                return TS_OK;
            }
            static void destroy(void *self) {
                FILE *file = fopen(self, "w");
                if (file) fclose(file);
                free(self);
            }
            static ts_status run(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *self) {
                (void)store; (void)self; return next(action->json);
            }
            """)
        weak var weakStore: Store<Counter>?
        do {
            let store = Store(initialState: Counter(), reducer: counterReducer)
            weakStore = store
            try store.loadPlugin(at: path, config: "\"\(marker)\"", registry: registry)
            try store.dispatch(Increment(by: 1))
            #expect(!FileManager.default.fileExists(atPath: marker))
        }
        #expect(weakStore == nil)
        #expect(FileManager.default.fileExists(atPath: marker))
    }

    @Test func pluginsLoadedInSeparateCallsAreDestroyedLastLoadedFirst() throws {
        // The config is a JSON string "PATH|TAG": destroy() appends TAG to PATH.
        let marker = folder.appendingPathComponent("order").path
        let path = try PluginBuilder.build("orderer", in: folder, run: """
            static ts_status create(const char *config, const ts_store_api *store, void **self, char **error) {
                (void)store; (void)error;
                char *text = strdup(config + 1);
                text[strlen(text) - 1] = '\\0';
                *self = text;
                return TS_OK;
            }
            static void destroy(void *self) {
                char *bar = strchr(self, '|');
                *bar = '\\0';
                FILE *file = fopen(self, "a");
                if (file) { fputs(bar + 1, file); fclose(file); }
                free(self);
            }
            static ts_status run(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *self) {
                (void)store; (void)self; return next(action->json);
            }
            """)
        do {
            let store = Store(initialState: Counter(), reducer: counterReducer)
            for tag in ["a", "b", "c"] {
                try store.loadPlugin(at: path, config: "\"\(marker)|\(tag)\"", registry: registry)
            }
        }
        #expect(try String(contentsOfFile: marker, encoding: .utf8) == "cba")
    }

    @Test func aFolderOfPluginsLoadsAndAStateThatDoesNotDecodeIsRefused() throws {
        let plugins = folder.appendingPathComponent("plugins")
        try FileManager.default.createDirectory(at: plugins, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o755])
        _ = try PluginBuilder.build("10-refit", in: plugins, run: """
            static ts_status run(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *self) {
                (void)self;
                if (strcmp(action->type, "counter/note") == 0 && strstr(action->payload, "bad state"))
                    return store->replace_state("{\\"count\\":\\"not a number\\",\\"log\\":[]}");
                return next(action->json);
            }
            """)
        let store = Store(initialState: Counter(), reducer: counterReducer)
        try store.loadPlugins(from: plugins.path, registry: registry)
        try store.dispatch(Increment(by: 1))
        do {
            try store.dispatch(Note(text: "bad state"))
            Issue.record("a state that does not decode was accepted")
        } catch {
            #expect(error.code == .invalidJSON)
        }
        #expect(try store.getState() == Counter(count: 1))
    }

    @Test func replaceStateWithAKeyTwiceIsInvalidJSON() throws {
        // JSONDecoder alone would take one of the two "count"s: the JSON
        // layer refuses the text first, as for C stores.
        let path = try PluginBuilder.build("twice", in: folder, run: """
            static ts_status run(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *self) {
                (void)self;
                if (strcmp(action->type, "counter/note") == 0 && strstr(action->payload, "restore"))
                    return store->replace_state("{\\"count\\":1,\\"log\\":[],\\"count\\":100}");
                return next(action->json);
            }
            """)
        let store = Store(initialState: Counter(), reducer: counterReducer)
        try store.loadPlugin(at: path, registry: registry)
        try store.dispatch(Increment(by: 2))
        do {
            try store.dispatch(Note(text: "restore"))
            Issue.record("a state with a key twice was accepted")
        } catch {
            #expect(error.code == .invalidJSON)
            #expect(error.message.contains("duplicate key \"count\" at byte 20"))
        }
        #expect(try store.getState() == Counter(count: 2))
    }

    @Test func refusalsLeaveTheStoreUnchanged() throws {
        let store = Store(initialState: Counter(), reducer: counterReducer)
        #expect(throws: StoreError.self) { try store.loadPlugin(at: folder.appendingPathComponent("missing.so").path, registry: registry) }
        let path = try PluginBuilder.build("ok", in: folder, run: """
            static ts_status run(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *self) {
                (void)store; (void)self; return next(action->json);
            }
            """)
        do {
            try store.loadPlugin(at: path, config: "{not json", registry: registry)
            Issue.record("invalid config accepted")
        } catch {
            #expect(error.code == .invalidJSON)
        }
        try store.dispatch(Increment(by: 2))
        #expect(try store.getState().count == 2)
    }

    /// The typed store loads through the C store's loader: the same trust
    /// checks (TrustedFile) on the real file, every folder above it, and configs.
    @Test func untrustedFilesAreRefusedAsInCStores() throws {
        let store = Store(initialState: Counter(), reducer: counterReducer)
        let passThrough = """
            static ts_status run(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *self) {
                (void)store; (void)self; return next(action->json);
            }
            """
        let world = folder.appendingPathComponent("world")
        try FileManager.default.createDirectory(at: world, withIntermediateDirectories: false)
        let path = try PluginBuilder.build("ok", in: world, run: passThrough)
        #expect(chmod(world.path, 0o777) == 0)
        let link = folder.appendingPathComponent("link.so").path
        #expect(symlink(path, link) == 0)
        do {
            try store.loadPlugin(at: link, registry: registry)
            Issue.record("a plugin linked into a world-writable folder was loaded")
        } catch {
            #expect(error.code == .pluginFailed)
            #expect(error.message.contains("chmod go-w \(world.path)"), "\(error.message)")
        }

        let plugins = folder.appendingPathComponent("plugins")
        try FileManager.default.createDirectory(at: plugins, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o755])
        _ = try PluginBuilder.build("10-ok", in: plugins, run: passThrough)
        let config = plugins.appendingPathComponent("10-ok.json").path
        #expect(FileManager.default.createFile(atPath: config, contents: Data("{}".utf8)))
        #expect(chmod(config, 0o666) == 0)
        do {
            try store.loadPlugins(from: plugins.path, registry: registry)
            Issue.record("a config others can write was read")
        } catch {
            #expect(error.code == .pluginFailed)
            #expect(error.message.contains("plugin config \"\(config)\" can be written by other users"), "\(error.message)")
        }
        #expect(chmod(config, 0o644) == 0)
        try store.loadPlugins(from: plugins.path, registry: registry)
        try store.dispatch(Increment(by: 2))
        #expect(try store.getState().count == 2)
    }
}

/// Collects values from listeners (which run under the store's lock).
final class Recorder<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [Value] = []
    func append(_ value: Value) { lock.withLock { stored.append(value) } }
    var values: [Value] { lock.withLock { stored } }
}

/// Subscriptions that a test never ends itself: kept until the process exits.
private let keptSubscriptions = Recorder<StoreSubscription>()

extension StoreSubscription {
    /// Keeps the subscription until the test process exits.
    func kept() { keptSubscriptions.append(self) }
}
