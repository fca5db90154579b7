#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CTurnstate
import TurnstateCore

/// A plugin's shared object, opened and checked: safe to load (see
/// TrustedFile: nobody else can write it or a folder above it), a shared
/// object with a `ts_plugin_entry`, and built for an ABI this library speaks. Never closed (Swift code in a plugin leaves
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
        // Checked (TrustedFile: the real file and every folder above it) and
        // loaded through the one descriptor that was checked.
        let handle = try TrustedFile.withOpenFile(path, what: "plugin file", refusal: "refusing to load code from it") {
            file throws(StoreError) in try Self.load(file)
        }!
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

    /// Loads the checked file `file` (RTLD_LOCAL: one plugin's symbols never
    /// satisfy another's) through its open descriptor, /proc/self/fd/N, so
    /// that the object loaded is the file checked, whatever happens to its
    /// path meanwhile.
    private static func load(_ file: TrustedFile.Opened) throws(StoreError) -> UnsafeMutableRawPointer {
        let id = FileID(file.info)
        if let handle = loadedObjects.withLock({ $0.handles[id] }) { return handle }
        let name: String
        var duplicate: Int32 = -1
        defer { if duplicate >= 0 { close(duplicate) } }
        if names(file.descriptor, file.info) {
            // glibc's dlopen returns an object already loaded under the same
            // name without opening anything: a /proc/self/fd/N used before
            // (for another file, now closed) must never be used again.
            let number = loadedObjects.withLock { state -> Int32 in
                var number = file.descriptor
                if state.usedNames.contains(number) {
                    duplicate = fcntl(file.descriptor, F_DUPFD_CLOEXEC, state.highestName + 1)
                    number = duplicate
                }
                if number >= 0 {
                    state.usedNames.insert(number)
                    state.highestName = max(state.highestName, number)
                }
                return number
            }
            guard number >= 0 else {
                throw StoreError(.io, "\(file.subject.description) cannot be loaded: no descriptor left (\(String(cString: strerror(errno))))")
            }
            name = "/proc/self/fd/\(number)"
        } else {
            // No /proc/self/fd (another OS, or /proc not mounted): load by
            // real path, once that path still names the file whose descriptor
            // was checked (same st_dev and st_ino). dlopen opens the path
            // again; only the owners of the folders above it (root or this
            // user, checked) could swap the file in between.
            var info = stat()
            guard stat(file.subject.real, &info) == 0, FileID(info) == id else {
                throw StoreError(.pluginFailed, "\(file.subject.description) changed while it was being checked: refusing to load code from it")
            }
            name = file.subject.real
        }
        guard let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL) else {
            var reason = dlerror().map { String(cString: $0) } ?? "unknown reason"
            if name != file.subject.real { reason = replacing(name, with: file.subject.real, in: reason) }
            throw StoreError(.pluginFailed, "\(file.subject.description) could not be loaded as a shared object: \(reason)")
        }
        loadedObjects.withLock { $0.handles[id] = handle }
        return handle
    }

    /// Whether /proc/self/fd/`descriptor` reaches the file `info` describes.
    private static func names(_ descriptor: Int32, _ info: stat) -> Bool {
        var through = stat()
        return stat("/proc/self/fd/\(descriptor)", &through) == 0 && FileID(through) == FileID(info)
    }

    /// `text` with each `name` (not followed by a digit: /proc/self/fd/5 is
    /// not /proc/self/fd/51) replaced by `real`.
    private static func replacing(_ name: String, with real: String, in text: String) -> String {
        var result = ""
        var rest = text[...]
        while let range = firstRange(of: name, in: rest) {
            result += rest[..<range.lowerBound]
            if range.upperBound < rest.endIndex, rest[range.upperBound].isNumber {
                result += rest[range]
            } else {
                result += real
            }
            rest = rest[range.upperBound...]
        }
        return result + rest
    }

    /// The first occurrence of `name` in `text`, compared by UTF-8 bytes (the
    /// library does not link the standard library's string processing).
    private static func firstRange(of name: String, in text: Substring) -> Range<Substring.Index>? {
        let needle = name.utf8
        guard let first = needle.first else { return nil }
        var start = text.utf8.startIndex
        while let found = text.utf8[start...].firstIndex(of: first) {
            if let end = text.utf8.index(found, offsetBy: needle.count, limitedBy: text.utf8.endIndex),
               text.utf8[found..<end].elementsEqual(needle) {
                return found..<end
            }
            start = text.utf8.index(after: found)
        }
        return nil
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
    /// The plugin's own table (its dispatch_after knows its place), kept
    /// until the instance is freed.
    var api: StoreAPI?
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

/// A file's identity: the same st_dev and st_ino are the same file.
struct FileID: Hashable {
    let device: UInt64
    let inode: UInt64

    init(_ info: stat) {
        device = UInt64(truncatingIfNeeded: info.st_dev)
        inode = UInt64(truncatingIfNeeded: info.st_ino)
    }
}

/// The shared objects this library loaded as plugins, process-wide. Plugins
/// are never closed, so an entry stays valid for the life of the process.
struct LoadedObjects {
    /// By file: a file loaded before is not loaded again (dlopen would return
    /// the same object for the same st_dev and st_ino anyway).
    var handles: [FileID: UnsafeMutableRawPointer] = [:]
    /// The N of every /proc/self/fd/N given to dlopen, and the highest one.
    var usedNames: Set<Int32> = []
    var highestName: Int32 = -1
}

/// `LoadedObjects` behind a pthread mutex. Not Synchronization's Mutex: on
/// Linux it waits on a futex that ThreadSanitizer does not see, so every use
/// would be reported as a race by the TSan suites.
final class LoadedObjectsLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var state = LoadedObjects()

    init() {
        mutex = .allocate(capacity: 1)
        // Zeroed first: on glibc that is a valid default mutex
        // (PTHREAD_MUTEX_INITIALIZER), which stays usable if
        // pthread_mutex_init fails (it can, out of memory).
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    func withLock<R>(_ body: (inout LoadedObjects) -> R) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body(&state)
    }
}

let loadedObjects = LoadedObjectsLock()
