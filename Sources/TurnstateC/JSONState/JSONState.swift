#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CTurnstateJSON
import Synchronization
import TurnstateCore

/// The state of a C store: a JSON object whose top-level values are kept as
/// separate slices of JSON text, in the order the keys first appeared.
struct JSONState: Sendable {
    struct Member: Sendable {
        let key: String
        /// The key as a JSON string literal, quotes included.
        let quotedKey: String
        var slice: JSONSlice
    }

    private static let lastGeneration = Atomic<UInt64>(0)

    private(set) var members: [Member] = []
    /// Keys compared by their bytes (JSONKey), as the JSON layer does.
    private var indexOfKey: [JSONKey: Int] = [:]
    /// Changes (to a new, unique value) whenever any slice changes.
    private(set) var generation: UInt64 = 0
    /// Names the order of the keys: a new, unique value for each new state
    /// and whenever a key is added. An index found under one layout stays
    /// right as long as the layout is the same (keys are never reordered).
    private(set) var layout: UInt64 = Self.lastGeneration.add(1, ordering: .relaxed).newValue

    init() {}

    /// Parses a JSON object into slices; `context` names it in errors.
    init(parsing json: UnsafePointer<CChar>, context: String) throws(StoreError) {
        final class Collector {
            var members: [(String, JSONSlice)] = []
        }
        let collector = Collector()
        let box = Unmanaged.passUnretained(collector).toOpaque()
        try checkJSON(context) {
            // Each value comes malloc'ed and is adopted as it is: the
            // biggest slice of a big state is the JSON layer's own buffer.
            tsj_split_object(json, strlen(json), { key, keyLength, value, valueLength, context in
                let collector = Unmanaged<Collector>.fromOpaque(context!).takeUnretainedValue()
                let keyText = String(decoding: UnsafeRawBufferPointer(start: key, count: keyLength), as: UTF8.self)
                collector.members.append((keyText, JSONSlice(adoptingMinified: value!, length: valueLength)))
                return 0
            }, box, $0)
        }
        for (key, slice) in collector.members { try set(key, slice) }
        generation = 0
    }

    /// The position of `key` among the members. `hint` is where it was
    /// found under `hintLayout`: still right if the layout did not change,
    /// which saves comparing or hashing the key on every dispatch.
    @inline(__always)
    func index(of key: String, hint: Int, hintLayout: UInt64) -> Int? {
        if hintLayout == layout && hint < members.count { return hint }
        return indexOfKey[JSONKey(key)]
    }

    func slice(at index: Int) -> JSONSlice { members[index].slice }

    /// Replaces the slice of an existing member.
    mutating func setSlice(at index: Int, _ slice: JSONSlice) {
        members[index].slice = slice
        generation = Self.lastGeneration.add(1, ordering: .relaxed).newValue
    }

    subscript(key: String) -> JSONSlice? {
        guard let index = indexOfKey[JSONKey(key)] else { return nil }
        return members[index].slice
    }

    /// Sets the slice of `key`, adding the key at the end if it is new.
    mutating func set(_ key: String, _ slice: JSONSlice) throws(StoreError) {
        if let index = indexOfKey[JSONKey(key)] {
            members[index].slice = slice
        } else {
            let quotedKey = try Self.quote(key)
            indexOfKey[JSONKey(key)] = members.count
            members.append(Member(key: key, quotedKey: quotedKey, slice: slice))
            layout = Self.lastGeneration.add(1, ordering: .relaxed).newValue
        }
        generation = Self.lastGeneration.add(1, ordering: .relaxed).newValue
    }

    /// Gives the state a new generation, as a change does.
    mutating func markChanged() {
        generation = Self.lastGeneration.add(1, ordering: .relaxed).newValue
    }

    /// The length of `wholeText()`, without making it.
    var wholeLength: Int {
        var total = 2
        for member in members { total += member.quotedKey.utf8.count + 1 + member.slice.length + 1 }
        return members.isEmpty ? 2 : total - 1
    }

    /// The whole state as minified JSON text, malloc'ed, NUL-terminated.
    func wholeText() throws(StoreError) -> (UnsafeMutablePointer<CChar>, Int) {
        var total = 2
        for member in members { total += member.quotedKey.utf8.count + 1 + member.slice.length + 1 }
        guard let buffer = malloc(total + 1)?.assumingMemoryBound(to: CChar.self) else {
            throw StoreError(.outOfMemory, "no memory for the state's \(total) bytes")
        }
        var at = 0
        func append(_ bytes: UnsafeRawPointer, _ count: Int) {
            memcpy(buffer + at, bytes, count)
            at += count
        }
        buffer[at] = CChar(UInt8(ascii: "{")); at += 1
        for (i, member) in members.enumerated() {
            if i > 0 { buffer[at] = CChar(UInt8(ascii: ",")); at += 1 }
            var key = member.quotedKey
            key.withUTF8 { append($0.baseAddress!, $0.count) }
            buffer[at] = CChar(UInt8(ascii: ":")); at += 1
            let text: UnsafeMutablePointer<CChar>
            do { text = try member.slice.text } catch {
                free(buffer)
                throw error
            }
            append(text, member.slice.length)
        }
        buffer[at] = CChar(UInt8(ascii: "}")); at += 1
        buffer[at] = 0
        return (buffer, at)
    }

    static func quote(_ key: String) throws(StoreError) -> String {
        var key = key
        var out: UnsafeMutablePointer<CChar>?
        var length = 0
        var error = tsj_error()
        let code = key.withUTF8 { bytes in
            tsj_quote(UnsafeRawPointer(bytes.baseAddress)?.assumingMemoryBound(to: CChar.self), bytes.count, &out, &length, &error)
        }
        if code != 0 { throw StoreError(error, context: "key \"\(key)\"") }
        guard let out else { throw StoreError(.outOfMemory, "no memory to quote a key") }
        defer { free(out) }
        return String(decoding: UnsafeRawBufferPointer(start: out, count: length), as: UTF8.self)
    }
}
