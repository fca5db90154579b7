#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An action with a wire form: the tagged JSON `{"type": "...", "payload": ...}`
/// that the C API, plugins and other processes speak.
///
/// The tag is a static property of the type; the payload is the action's own
/// `Codable` encoding.
///
/// ```swift
/// struct AddTodo: TaggedAction {
///     static let actionType = "todos/add"
///     var title: String
/// }
/// try AddTodo(title: "milk").taggedJSON()   // {"type":"todos/add","payload":{"title":"milk"}}
/// ```
public protocol TaggedAction: Action, Codable {
    /// The `type` tag of this kind of action on the wire, e.g. `"todos/add"`.
    static var actionType: String { get }
}

extension TaggedAction {
    /// The action in its wire form, `{"type":"<actionType>","payload":<payload>}`,
    /// with the payload's keys sorted and `/` not escaped.
    public func taggedJSON() throws(StoreError) -> String {
        do {
            let encoder = WireFormat.encoder()
            let tag = try encoder.encode(Self.actionType)
            let payload = try encoder.encode(self)
            return "{\"type\":" + String(decoding: tag, as: UTF8.self)
                + ",\"payload\":" + String(decoding: payload, as: UTF8.self) + "}"
        } catch {
            throw StoreError(.badArgument, "cannot encode \(Self.self) as \"\(Self.actionType)\": \(error)")
        }
    }
}

/// The JSON settings of the wire form: sorted keys, `/` not escaped. Also
/// used by the faces that show a typed state as JSON.
package enum WireFormat {
    package static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}

/// Decodes tagged JSON actions back into the Swift types registered for their tags.
///
/// ```swift
/// let registry = try ActionRegistry([AddTodo.self, ToggleTodo.self])
/// let action = try registry.decode(json: #"{"type":"todos/add","payload":{"title":"milk"}}"#)
/// ```
public struct ActionRegistry: Sendable {
    private typealias Decode = @Sendable (Data) throws -> any TaggedAction
    private var decoders: [String: (type: any TaggedAction.Type, decode: Decode)] = [:]

    /// Creates a registry that knows `types`.
    ///
    /// Throws ``/TurnstateCore/StoreError/Code/badArgument`` if two types share one tag.
    public init(_ types: [any TaggedAction.Type] = []) throws(StoreError) {
        for type in types { try register(type) }
    }

    /// Teaches the registry to decode actions tagged `A.actionType` as `A`.
    ///
    /// Registering the same type twice is harmless; a different type with a
    /// tag that is already taken throws ``/TurnstateCore/StoreError/Code/badArgument``.
    public mutating func register<A: TaggedAction>(_ type: A.Type) throws(StoreError) {
        if let existing = decoders[A.actionType], existing.type != type {
            throw StoreError(.badArgument, "the tag \"\(A.actionType)\" is already registered for \(existing.type), cannot register \(A.self)")
        }
        decoders[A.actionType] = (type, { data in try JSONDecoder().decode(A.self, from: data) })
    }

    /// The tags this registry decodes.
    public var actionTypes: Set<String> { Set(decoders.keys) }

    /// Whether actions tagged `tag` can be decoded.
    public func contains(actionType tag: String) -> Bool { decoders[tag] != nil }

    /// Decodes an action from its tag and the JSON text of its payload
    /// (`nil` when the action has none, which decodes as `{}`).
    public func decode(type tag: String, payload: String?) throws(StoreError) -> any TaggedAction {
        guard let entry = decoders[tag] else {
            throw StoreError(.unknownAction, "no action type is registered for the tag \"\(tag)\"")
        }
        do {
            return try entry.decode(Data((payload ?? "{}").utf8))
        } catch {
            throw StoreError(.notAnAction, "the payload of \"\(tag)\" does not decode as \(entry.type): \(error)")
        }
    }

    /// Decodes a whole tagged action, `{"type": "...", "payload": ...}`.
    public func decode(json: String) throws(StoreError) -> any TaggedAction {
        let envelope: Envelope
        do {
            envelope = try JSONDecoder().decode(Envelope.self, from: Data(json.utf8))
        } catch {
            throw StoreError(.notAnAction, "not a tagged action {\"type\": \"...\", \"payload\": ...}: \(error)")
        }
        return try decode(type: envelope.type, payload: envelope.payload?.text)
    }
}

/// The outside of a tagged action: the tag, and the payload kept as JSON text.
private struct Envelope: Decodable {
    let type: String
    let payload: RawJSON?
}

/// Any JSON value, kept as its (re-encoded) text.
private struct RawJSON: Decodable {
    let text: String

    init(from decoder: any Decoder) throws {
        let value = try JSONValue(from: decoder)
        let data = try WireFormat.encoder().encode(value)
        text = String(decoding: data, as: UTF8.self)
    }
}

/// A generic JSON value, used only to carry a payload through `Codable`.
private enum JSONValue: Codable {
    case null, bool(Bool), int(Int64), uint(UInt64), double(Double), string(String)
    case array([JSONValue]), object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let value = try? container.decode(Bool.self) { self = .bool(value) }
        else if let value = try? container.decode(Int64.self) { self = .int(value) }
        else if let value = try? container.decode(UInt64.self) { self = .uint(value) }
        else if let value = try? container.decode(Double.self) { self = .double(value) }
        else if let value = try? container.decode(String.self) { self = .string(value) }
        else if let value = try? container.decode([JSONValue].self) { self = .array(value) }
        else { self = .object(try container.decode([String: JSONValue].self)) }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .uint(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}
