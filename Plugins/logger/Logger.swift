import CTurnstate
import Glibc

/// One logger instance: made by create() for one store, freed by destroy().
/// Immutable after create(), so the calls on it from different threads over
/// time (serialized per store by the host; concurrent across stores that
/// share nothing but, maybe, the file) need no lock.
final class Logger {
    let fd: Int32
    let ownsFile: Bool
    let exact: [[UInt8]]
    let prefixes: [[UInt8]]
    let trackChanges: Bool

    init(fd: Int32, ownsFile: Bool, config: LoggerConfig) {
        self.fd = fd
        self.ownsFile = ownsFile
        exact = config.exact
        prefixes = config.prefixes
        trackChanges = config.changed
    }

    deinit {
        if ownsFile { close(fd) }
    }

    /// Whether the config leaves this action type out of the log.
    func excludes(_ type: UnsafePointer<CChar>) -> Bool {
        if exact.isEmpty && prefixes.isEmpty { return false }
        let length = strlen(type)
        for pattern in exact where pattern.count == length {
            if pattern.withUnsafeBytes({ memcmp(type, $0.baseAddress!, length) }) == 0 { return true }
        }
        for prefix in prefixes where prefix.count <= length {
            if prefix.isEmpty { return true }
            if prefix.withUnsafeBytes({ memcmp(type, $0.baseAddress!, prefix.count) }) == 0 { return true }
        }
        return false
    }

    /// Writes `line` with one write() call, so that lines written by several
    /// threads (or processes) to one O_APPEND file never interleave. A short
    /// write (a full disk, a pipe) is finished with further calls; a failed
    /// one is dropped: logging never changes the outcome of a dispatch.
    func write(_ line: [UInt8]) {
        line.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += written
            }
        }
    }
}

// MARK: create / run / destroy

/// The table fields up to and including `free`: what reading the state needs.
private let tableSizeForState = MemoryLayout<ts_store_api>.offset(of: \ts_store_api.free)! +
    MemoryLayout<UnsafeRawPointer>.size

func loggerCreate(
    config: UnsafePointer<CChar>?, store: UnsafePointer<ts_store_api>?,
    instance: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
    errorMessage: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> ts_status {
    func fail(_ error: ConfigError) -> ts_status {
        if let errorMessage { errorMessage.pointee = error.message.withCString { strdup($0) } }
        return error.status
    }
    guard let instance else { return fail(ConfigError("create: self is NULL", status: TS_E_ARGUMENT)) }
    let parsed: LoggerConfig
    do {
        parsed = try LoggerConfig.parse(config ?? cStringLiteral("{}"))
    } catch {
        return fail(error)
    }
    if parsed.changed {
        guard let store else {
            return fail(ConfigError("create: the store table is NULL (\"changed\": true reads the state through it)",
                                    status: TS_E_ARGUMENT))
        }
        guard Int(store.pointee.struct_size) >= tableSizeForState else {
            return fail(ConfigError("\"changed\": true needs the store's get_state, which this host's table lacks; set \"changed\": false",
                                    status: TS_E_ABI))
        }
    }
    var fd: Int32 = 2
    if let path = parsed.path {
        fd = (path + [0]).withUnsafeBytes { bytes in
            open(bytes.baseAddress!.assumingMemoryBound(to: CChar.self), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        }
        if fd < 0 {
            let reason = String(cString: strerror(errno))
            return fail(ConfigError("\"path\": cannot open \"\(String(decoding: path, as: UTF8.self))\" for appending: \(reason)",
                                    status: TS_E_IO))
        }
    }
    let logger = Logger(fd: fd, ownsFile: parsed.path != nil, config: parsed)
    instance.pointee = Unmanaged.passRetained(logger).toOpaque()
    return TS_OK
}

func loggerDestroy(_ instance: UnsafeMutableRawPointer?) {
    guard let instance else { return }
    Unmanaged<Logger>.fromOpaque(instance).release()
}

func loggerRun(
    store: UnsafePointer<ts_store_api>?, next: ts_next_fn?, action: UnsafePointer<ts_action>?,
    instance: UnsafeMutableRawPointer?
) -> ts_status {
    guard let next, let action else { return TS_E_ARGUMENT }
    let json = action.pointee.json
    guard let instance, let type = action.pointee.type else { return next(json) }
    let logger = Unmanaged<Logger>.fromOpaque(instance).takeUnretainedValue()
    if logger.excludes(type) { return next(json) }

    var wall = timespec()
    clock_gettime(CLOCK_REALTIME, &wall)

    // The state before, only if asked: it costs a copy of the whole state.
    var getState: (@convention(c) (UnsafePointer<CChar>?, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> ts_status)?
    var freeState: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?
    if logger.trackChanges, let store, Int(store.pointee.struct_size) >= tableSizeForState {
        getState = store.pointee.get_state
        freeState = store.pointee.free
    }
    var before: UnsafeMutablePointer<CChar>?
    var haveBefore = false
    if let getState { haveBefore = getState(nil, &before) == TS_OK && before != nil }

    var start = timespec()
    clock_gettime(CLOCK_MONOTONIC, &start)
    let status = next(json)
    var end = timespec()
    clock_gettime(CLOCK_MONOTONIC, &end)

    var after: UnsafeMutablePointer<CChar>?
    var haveAfter = false
    if haveBefore, let getState { haveAfter = getState(nil, &after) == TS_OK && after != nil }

    var line: [UInt8] = []
    line.reserveCapacity(160)
    line.append(literal: "{\"time\": \"")
    appendISO8601(wall, to: &line)
    line.append(literal: "\", \"type\": \"")
    appendEscaped(type, to: &line)
    line.append(literal: "\", \"us\": ")
    let nanoseconds = (Int64(end.tv_sec) - Int64(start.tv_sec)) * 1_000_000_000 + (Int64(end.tv_nsec) - Int64(start.tv_nsec))
    appendDecimal(UInt64(max(nanoseconds, 0) / 1000), to: &line)
    line.append(literal: ", \"status\": \"")
    if let name = store?.pointee.status_name?(status) {
        line.append(contentsOf: UnsafeRawBufferPointer(start: name, count: strlen(name)))
    }
    line.append(literal: "\"")
    if logger.trackChanges {
        line.append(literal: ", \"changed\": ")
        if haveBefore && haveAfter, let before, let after {
            if !appendChangedKeys(before: before, after: after, to: &line) { line.append(literal: "null") }
        } else {
            line.append(literal: "null")
        }
    }
    line.append(literal: "}\n")
    if let freeState {
        freeState(before)
        freeState(after)
    }
    logger.write(line)
    return status
}

// MARK: The line

private func cStringLiteral(_ text: StaticString) -> UnsafePointer<CChar> {
    UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
}

extension Array where Element == UInt8 {
    mutating func append(literal: StaticString) {
        append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }
}

/// "2025-01-31T23:59:59.123Z"
private func appendISO8601(_ time: timespec, to line: inout [UInt8]) {
    var seconds = time_t(time.tv_sec)
    var parts = tm()
    gmtime_r(&seconds, &parts)
    func digits(_ value: Int32, _ width: Int) {
        var divisor: Int32 = 1
        for _ in 1..<width { divisor *= 10 }
        var value = value
        while divisor > 0 {
            line.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: (value / divisor) % 10))
            value %= divisor
            divisor /= 10
        }
    }
    digits(parts.tm_year + 1900, 4)
    line.append(UInt8(ascii: "-"))
    digits(parts.tm_mon + 1, 2)
    line.append(UInt8(ascii: "-"))
    digits(parts.tm_mday, 2)
    line.append(UInt8(ascii: "T"))
    digits(parts.tm_hour, 2)
    line.append(UInt8(ascii: ":"))
    digits(parts.tm_min, 2)
    line.append(UInt8(ascii: ":"))
    digits(parts.tm_sec, 2)
    line.append(UInt8(ascii: "."))
    digits(Int32(time.tv_nsec / 1_000_000), 3)
    line.append(UInt8(ascii: "Z"))
}

private func appendDecimal(_ value: UInt64, to line: inout [UInt8]) {
    var reversed: [UInt8] = []
    var value = value
    repeat {
        reversed.append(UInt8(ascii: "0") + UInt8(value % 10))
        value /= 10
    } while value > 0
    line.append(contentsOf: reversed.reversed())
}

/// The type as the inside of a JSON string: quote, backslash and control
/// characters escaped; everything else (valid UTF-8, checked by the host)
/// copied as it is.
private func appendEscaped(_ text: UnsafePointer<CChar>, to line: inout [UInt8]) {
    let hex: StaticString = "0123456789abcdef"
    var pointer = UnsafeRawPointer(text).assumingMemoryBound(to: UInt8.self)
    while pointer.pointee != 0 {
        let byte = pointer.pointee
        switch byte {
        case UInt8(ascii: "\""): line.append(literal: "\\\"")
        case UInt8(ascii: "\\"): line.append(literal: "\\\\")
        case 0x0A: line.append(literal: "\\n")
        case 0x0D: line.append(literal: "\\r")
        case 0x09: line.append(literal: "\\t")
        case 0x08: line.append(literal: "\\b")
        case 0x0C: line.append(literal: "\\f")
        case 0..<0x20:
            line.append(literal: "\\u00")
            line.append(hex.utf8Start[Int(byte >> 4)])
            line.append(hex.utf8Start[Int(byte & 0xF)])
        default: line.append(byte)
        }
        pointer += 1
    }
}

/// Appends the JSON array of the top-level keys whose values differ between
/// the two states (present in one only, or with different text): the keys of
/// `after` in its order, then those that were removed. Returns false if
/// either text is not a JSON object.
private func appendChangedKeys(before: UnsafePointer<CChar>, after: UnsafePointer<CChar>, to line: inout [UInt8]) -> Bool {
    let old = UnsafeRawPointer(before).assumingMemoryBound(to: UInt8.self)
    let new = UnsafeRawPointer(after).assumingMemoryBound(to: UInt8.self)
    guard let diff = diffTopLevel(old: old, oldCount: strlen(before), new: new, newCount: strlen(after)) else { return false }
    var first = true
    func appendKey(_ base: UnsafePointer<UInt8>, _ member: Member) {
        if !first { line.append(literal: ", ") }
        first = false
        // The key's text with its quotes, as the store wrote it: valid JSON.
        line.append(contentsOf: UnsafeBufferPointer(start: base + member.keyStart, count: member.keyEnd - member.keyStart))
    }
    line.append(UInt8(ascii: "["))
    for member in diff.changed { appendKey(new, member) }
    for member in diff.removed { appendKey(old, member) }
    line.append(UInt8(ascii: "]"))
    return true
}

