#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CTurnstate
import CTurnstateJSON
import TurnstateCore

/// The plugins loaded into one store (of either face). Each becomes a
/// middleware at the end of the chain; all are destroyed, last loaded first,
/// when the set goes (with its store).
package final class PluginSet<State: Sendable>: @unchecked Sendable {
    /// Weak: the set is owned by the store (or its face), never the reverse.
    private weak var store: Store<State>?
    private let api: StoreAPI
    private let bridge: any ActionBridge<State>
    /// Guarded by the store's lock.
    private var instances: [PluginInstance] = []
    /// The name of the plugin whose create() is under way (the table's
    /// loading). Guarded by the store's lock, which a load holds throughout.
    private var creating: UnsafePointer<CChar>?

    package init(store: Store<State>, api: StoreAPI, bridge: any ActionBridge<State>) {
        self.store = store
        self.api = api
        self.bridge = bridge
    }

    deinit { destroyAll() }

    /// Destroys every instance, last loaded first. Idempotent.
    func destroyAll() {
        for instance in instances.reversed() { instance.destroy() }
    }

    /// Loads one plugin with `config` (JSON text; nil means {}).
    package func load(path: String, config: String?) throws(StoreError) {
        try loadAtomically { () throws(StoreError) in [(path, config ?? "{}")] }
    }

    /// Loads every `*.so` in `folder` in byte order of their names, each with
    /// the config in `NAME.json` beside it if there is one. All or nothing.
    package func loadFolder(_ folder: String) throws(StoreError) {
        try loadAtomically { () throws(StoreError) in
            var plugins: [(String, String)] = []
            for file in try Self.pluginFiles(in: folder) {
                let config = try Self.readConfig(at: folder + "/" + file.dropLast(3) + ".json")
                plugins.append((folder + "/" + file, config ?? "{}"))
            }
            return plugins
        }
    }

    /// Starts the plugins that `list` names and adds them to the chain, all
    /// or none, with the store held throughout: no dispatch from another
    /// thread can slip between a plugin's create() and its place in the
    /// chain. If one fails, those started are destroyed and the state any of
    /// them restored or changed in create() is put back.
    private func loadAtomically(_ list: () throws(StoreError) -> [(path: String, config: String)]) throws(StoreError) {
        guard let store else { throw StoreError(.storeReleased, "the store was released") }
        try store.exclusively(.loadPlugin) { () throws(StoreError) in
            let plugins = try list()
            let before = try store.getState()
            let changesBefore = store.changeCount
            var started: [(instance: PluginInstance, place: PluginPlace<State>)] = []
            do throws(StoreError) {
                for plugin in plugins { started.append(try start(path: plugin.path, config: plugin.config)) }
                try add(started)
            } catch {
                for (instance, _) in started.reversed() { instance.destroy() }
                // Put back a state a plugin restored or changed in create();
                // a refusal that changed nothing notifies nobody.
                if store.changeCount != changesBefore {
                    try? store.mutateState(notify: true) { $0 = before }
                }
                throw error
            }
        }
    }

    /// The config is validated (strict JSON, no key twice at any depth) before
    /// the file is opened: a load refused for its config runs no plugin code.
    private func start(path: String, config: String) throws(StoreError) -> (instance: PluginInstance, place: PluginPlace<State>) {
        var config = config
        var minified: UnsafeMutablePointer<CChar>?
        var error = tsj_error()
        let code = config.withUTF8 { bytes in
            tsj_minify(UnsafeRawPointer(bytes.baseAddress)?.assumingMemoryBound(to: CChar.self), bytes.count, &minified, nil, &error)
        }
        if code != 0 {
            throw StoreError(error, context: "the config of plugin \"\(PluginFile.baseName(of: path))\" (\(path))")
        }
        defer { free(minified) }
        let file = try PluginFile(path: path)
        guard let store else { throw StoreError(.storeReleased, "the store was released") }
        // The plugin's own table: dispatch_after knows its place in the chain.
        let place = PluginPlace(store: store, bridge: bridge)
        let own = try api.forPlugin(dispatchAfter: { text throws(StoreError) in try place.dispatchAfter(text) },
                                    unlocked: { body throws(StoreError) in try place.unlocked(body) },
                                    loading: { [weak self] in self?.creating })
        let outer = creating
        creating = file.descriptor.pointee.name
        defer { creating = outer }
        let instance = try file.create(config: minified!, api: own)
        instance.api = own
        return (instance, place)
    }

    /// Adds started plugins to the chain. Under the store's lock.
    private func add(_ started: [(instance: PluginInstance, place: PluginPlace<State>)]) throws(StoreError) {
        guard let store else { throw StoreError(.storeReleased, "the store was released") }
        for (instance, place) in started {
            let host = CMiddlewareHost(api: instance.api ?? api, store: store, bridge: bridge)
            try store.addMiddleware(CMiddleware(
                name: instance.file.name, fn: instance.run, context: CContext(pointer: instance.instance),
                host: host))
            place.join(host)
            instances.append(instance)
        }
    }

    /// The names of the `*.so` files in `folder`, in byte order. The folder
    /// and every folder above it must be trusted (TrustedFile).
    static func pluginFiles(in folder: String) throws(StoreError) -> [String] {
        let subject = try TrustedFile.folder(folder, what: "plugin folder", refusal: "refusing to load code from it")
        guard let directory = opendir(subject.real) else {
            throw StoreError(.io, "\(subject.description) cannot be read: \(String(cString: strerror(errno)))")
        }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            // Read the name in place: a dirent may be shorter than its
            // declared d_name array.
            let name = String(cString: UnsafeRawPointer(entry)
                .advanced(by: MemoryLayout<dirent>.offset(of: \dirent.d_name)!)
                .assumingMemoryBound(to: CChar.self))
            guard name.hasSuffix(".so"), name.count > 3, !name.hasPrefix(".") else { continue }
            names.append(name)
        }
        return names.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
    }

    /// The text of a config file, or nil if there is none. Trusted as a
    /// plugin file is (TrustedFile): whoever can write a config can change
    /// the plugin's policy (the guard plugin's rules).
    static func readConfig(at path: String) throws(StoreError) -> String? {
        try TrustedFile.withOpenFile(path, what: "plugin config", refusal: "refusing to read it (whoever can write it can change the plugin's policy)",
                                     missingIsNil: true) { file throws(StoreError) -> String in
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(file.descriptor, $0.baseAddress, $0.count) }
                if count < 0 {
                    if errno == EINTR { continue }
                    throw StoreError(.io, "\(file.subject.description) cannot be read: \(String(cString: strerror(errno)))")
                }
                if count == 0 { break }
                bytes += chunk[..<count]
            }
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw bytes.withUnsafeBytes { notUTF8($0, file.subject.description) }
            }
            return text
        }
    }
}

/// A plugin's place in the chain, for its table's dispatch_after. Its state
/// changes only under the store's lock.
final class PluginPlace<State: Sendable>: @unchecked Sendable {
    private weak var store: Store<State>?
    private let bridge: any ActionBridge<State>
    /// The plugin's middleware host once it joined the chain (weak: the chain
    /// owns the host, which owns the table, which owns this).
    private weak var host: CMiddlewareHost<State>?
    private var joined = false

    init(store: Store<State>, bridge: any ActionBridge<State>) {
        self.store = store
        self.bridge = bridge
    }

    /// Under the store's lock (loading plugins holds it).
    func join(_ host: CMiddlewareHost<State>) {
        self.host = host
        joined = true
    }

    /// What the plugin's table's `unlocked` does: runs `body` with the
    /// store let go (Store.withoutLock), from inside the plugin's run() only;
    /// the run's `next` is put aside meanwhile (other threads' runs use the
    /// same place) and back before the run goes on.
    func unlocked(_ body: () -> Int32) throws(StoreError) -> Int32 {
        guard let store else { throw StoreError(.storeReleased, "unlocked: the store was destroyed") }
        return try store.withoutLock(suspending: { () throws(StoreError) -> (() -> Void) in
            guard joined, let host, let resume = host.suspendFrame() else {
                throw StoreError(.misuse, "unlocked: called outside the plugin's run() (from create(), a listener, exclusive or another thread); only a run() under way can let go of the store")
            }
            return resume
        }, body)
    }

    func dispatchAfter(_ text: UnsafePointer<CChar>) throws(StoreError) {
        guard let store else { throw StoreError(.storeReleased, "dispatch_after: the store was destroyed") }
        let action = try bridge.native(text)
        try store.exclusively(.dispatch) { () throws(StoreError) in
            // In create(): nothing comes after the plugin yet.
            guard joined else { return try store.applySkippingMiddleware(action) }
            var found = false
            if let host = self.host {
                found = try store.dispatch(action, after: { ($0 as? CMiddleware<State>)?.host === host })
            }
            guard found else {
                throw StoreError(.misuse, "dispatch_after: the plugin is no longer in the store's middleware chain")
            }
        }
    }
}
