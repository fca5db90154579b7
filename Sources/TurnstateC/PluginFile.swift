#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CTurnstate
import Turnstate

/// A plugin's shared object, opened and checked: safe to load (nobody else
/// can write it), a shared object with a `ts_plugin_entry`, and built for an
/// ABI this library speaks. Never closed (Swift code in a plugin leaves
/// metadata behind that must stay mapped).
struct PluginFile: @unchecked Sendable {
    /// The ABI this library speaks; see turnstate_plugin.h.
    static let abiVersion: UInt32 = 1
    /// sizeof(ts_plugin) for ABI version 1: up to and including `destroy`,
    /// whatever later versions append.
    static let descriptorSizeV1 = UInt32(MemoryLayout<ts_plugin>.offset(of: \ts_plugin.destroy)!
                                         + MemoryLayout<UnsafeRawPointer>.size)

    let path: String
    let descriptor: UnsafePointer<ts_plugin>
    let name: String

    init(path: String) throws(StoreError) {
        self.path = path
        try Self.checkOwnership(of: path, what: "plugin file", mustBeRegularFile: true)
        try Self.checkOwnership(of: Self.folder(of: path), what: "the folder of plugin file \"\(path)\"", mustBeRegularFile: false)
        // RTLD_LOCAL: one plugin's symbols never satisfy another's.
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "unknown reason"
            throw StoreError(.pluginFailed, "plugin file \"\(path)\" could not be loaded as a shared object: \(reason)")
        }
        guard let symbol = dlsym(handle, "ts_plugin_entry") else {
            throw StoreError(.pluginFailed, "plugin file \"\(path)\" has no ts_plugin_entry symbol: is it a Turnstate plugin? (see turnstate_plugin.h)")
        }
        let entry = unsafeBitCast(symbol, to: ts_plugin_entry_fn.self)
        guard let descriptor = entry(Self.abiVersion) else {
            throw StoreError(.abiMismatch, "plugin file \"\(path)\" cannot work with plugin ABI version \(Self.abiVersion), the version this library speaks (its ts_plugin_entry returned NULL)")
        }
        let abi = descriptor.pointee.abi_version
        guard abi >= 1, abi <= Self.abiVersion else {
            throw StoreError(.abiMismatch, "plugin file \"\(path)\" was built for plugin ABI version \(abi); this library speaks version \(Self.abiVersion)")
        }
        guard descriptor.pointee.struct_size >= Self.descriptorSizeV1 else {
            throw StoreError(.abiMismatch, "plugin file \"\(path)\": its descriptor is \(descriptor.pointee.struct_size) bytes, smaller than the \(Self.descriptorSizeV1) of plugin ABI version \(abi)")
        }
        guard descriptor.pointee.create != nil, descriptor.pointee.run != nil else {
            throw StoreError(.pluginFailed, "plugin file \"\(path)\": its descriptor has no \(descriptor.pointee.create == nil ? "create" : "run") function")
        }
        self.descriptor = descriptor
        name = descriptor.pointee.name.map { String(cString: $0) } ?? Self.baseName(of: path)
    }

    /// Makes one instance for a store whose table is `api`.
    func create(config: UnsafePointer<CChar>, api: StoreAPI) throws(StoreError) -> PluginInstance {
        var instance: UnsafeMutableRawPointer?
        var message: UnsafeMutablePointer<CChar>?
        let status = descriptor.pointee.create!(config, api.table, &instance, &message)
        defer { free(message) }
        guard status == TS_OK else {
            let reason = message.map { String(cString: $0) } ?? "no reason given"
            throw StoreError(.pluginFailed, "plugin \"\(name)\" (\(path)) failed to start with \(CStatus.name(status)): \(reason)")
        }
        return PluginInstance(file: self, instance: instance)
    }

    // MARK: Files

    private static func checkOwnership(of path: String, what: String, mustBeRegularFile: Bool) throws(StoreError) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let error = errno
            if error == ENOENT { throw StoreError(.notFound, "\(what) \"\(path)\" does not exist") }
            throw StoreError(.io, "\(what) \"\(path)\": \(String(cString: strerror(error)))")
        }
        let isRegular = (info.st_mode & S_IFMT) == S_IFREG
        if mustBeRegularFile && !isRegular {
            throw StoreError(.pluginFailed, "\(what) \"\(path)\" is not a regular file")
        }
        let writableByOthers = info.st_mode & 0o022
        if writableByOthers != 0 {
            throw StoreError(.pluginFailed, "\(what) \"\(path)\" can be written by other users (mode \(String(info.st_mode & 0o7777, radix: 8))): refusing to load code from it; run chmod go-w on it")
        }
        if info.st_uid != geteuid() && info.st_uid != 0 {
            throw StoreError(.pluginFailed, "\(what) \"\(path)\" belongs to user \(info.st_uid), neither this process's user (\(geteuid())) nor root: refusing to load code from it")
        }
    }

    static func folder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    static func baseName(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }
}

/// One plugin's instance in one store. `destroy` runs once, when the store goes.
final class PluginInstance: @unchecked Sendable {
    let file: PluginFile
    let instance: UnsafeMutableRawPointer?
    private var destroyed = false

    init(file: PluginFile, instance: UnsafeMutableRawPointer?) {
        self.file = file
        self.instance = instance
    }

    var run: ts_middleware_fn { file.descriptor.pointee.run! }

    func destroy() {
        guard !destroyed else { return }
        destroyed = true
        file.descriptor.pointee.destroy?(instance)
    }
}
