import CTurnstate
import Glibc

/// The logger's configuration (README.md):
///     {"path": "/var/log/app.log", "exclude": ["@@delay", "debug/*"], "changed": true}
struct LoggerConfig {
    /// The file to append to (UTF-8 bytes, no NUL), or nil for stderr.
    var path: [UInt8]? = nil
    /// Action types left out: exact types, and prefixes (a pattern that ends in `*`).
    var exact: [[UInt8]] = []
    var prefixes: [[UInt8]] = []
    /// Whether to read the state before and after each action to list the
    /// top-level keys it changed.
    var changed = true
}

/// Why a config was refused; `message` names the field. A config the logger
/// cannot use (a wrong field, text that is no JSON object) is TS_E_PLUGIN,
/// as for the other plugins; a file it cannot open, TS_E_IO.
struct ConfigError: Error {
    let status: ts_status
    let message: String

    init(_ message: String, status: ts_status = TS_E_PLUGIN) {
        self.status = status
        self.message = message
    }
}

extension LoggerConfig {
    /// Parses the config object. Every field is optional; an unknown field
    /// or a value of the wrong type is refused. (The host refuses a config
    /// with a key twice, at any depth, before the plugin sees it.)
    static func parse(_ text: UnsafePointer<CChar>) throws(ConfigError) -> LoggerConfig {
        let length = strlen(text)
        return try text.withMemoryRebound(to: UInt8.self, capacity: length) { (bytes) throws(ConfigError) in
            try parse(bytes, count: length)
        }
    }

    private static func parse(_ bytes: UnsafePointer<UInt8>, count: Int) throws(ConfigError) -> LoggerConfig {
        var config = LoggerConfig()
        var cursor = JSONCursor(bytes, count: count)
        guard cursor.take(UInt8(ascii: "{")) else {
            throw ConfigError("the config must be a JSON object, such as {\"path\": \"/tmp/app.log\"}")
        }
        if !cursor.take(UInt8(ascii: "}")) {
            while true {
                guard let keyBytes = cursor.string() else {
                    throw ConfigError("the config is not valid JSON (near byte \(cursor.index))")
                }
                let key = String(decoding: keyBytes, as: UTF8.self)
                guard cursor.take(UInt8(ascii: ":")) else {
                    throw ConfigError("the config is not valid JSON (near byte \(cursor.index))")
                }
                switch key {
                case "path":
                    config.path = try readPath(&cursor)
                case "exclude":
                    (config.exact, config.prefixes) = try readExclude(&cursor)
                case "changed":
                    if cursor.take(word: "true") {
                        config.changed = true
                    } else if cursor.take(word: "false") {
                        config.changed = false
                    } else {
                        throw ConfigError("\"changed\" must be true or false")
                    }
                default:
                    throw ConfigError("\"\(key)\": unknown field (the logger knows \"path\", \"exclude\" and \"changed\")")
                }
                if cursor.take(UInt8(ascii: ",")) { continue }
                if cursor.take(UInt8(ascii: "}")) { break }
                throw ConfigError("the config is not valid JSON (near byte \(cursor.index))")
            }
        }
        cursor.skipSpace()
        guard cursor.atEnd else {
            throw ConfigError("the config is not valid JSON: trailing text at byte \(cursor.index)")
        }
        return config
    }

    private static func readPath(_ cursor: inout JSONCursor) throws(ConfigError) -> [UInt8] {
        guard cursor.peekAfterSpace == UInt8(ascii: "\""), let path = cursor.string() else {
            throw ConfigError("\"path\" must be a string: the file to append the log to")
        }
        guard !path.isEmpty else { throw ConfigError("\"path\" is empty; leave it out to log to stderr") }
        guard !path.contains(0) else { throw ConfigError("\"path\" contains a NUL character") }
        return path
    }

    private static func readExclude(_ cursor: inout JSONCursor) throws(ConfigError) -> ([[UInt8]], [[UInt8]]) {
        guard cursor.take(UInt8(ascii: "[")) else {
            throw ConfigError("\"exclude\" must be an array of action types, such as [\"@@delay\", \"debug/*\"]")
        }
        var exact: [[UInt8]] = []
        var prefixes: [[UInt8]] = []
        if cursor.take(UInt8(ascii: "]")) { return (exact, prefixes) }
        var position = 0
        while true {
            guard cursor.peekAfterSpace == UInt8(ascii: "\""), var pattern = cursor.string() else {
                throw ConfigError("\"exclude\"[\(position)] must be a string (an action type, or a prefix ending in *)")
            }
            guard !pattern.isEmpty else { throw ConfigError("\"exclude\"[\(position)] is empty") }
            guard !pattern.contains(0) else {
                throw ConfigError("\"exclude\"[\(position)] contains \\u0000 (NUL), which no action type can contain")
            }
            if pattern.last == UInt8(ascii: "*") {
                pattern.removeLast()
                prefixes.append(pattern)
            } else {
                exact.append(pattern)
            }
            position += 1
            if cursor.take(UInt8(ascii: ",")) { continue }
            if cursor.take(UInt8(ascii: "]")) { return (exact, prefixes) }
            throw ConfigError("\"exclude\" is not a valid JSON array (near byte \(cursor.index))")
        }
    }
}

extension JSONCursor {
    fileprivate var peekAfterSpace: UInt8? {
        mutating get {
            skipSpace()
            return peek
        }
    }
}
