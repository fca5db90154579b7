#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import CTurnstate
import Turnstate
import TurnstateC

extension Store where State: Codable {
    /// Loads the middleware plugin at `path` (a shared object written against
    /// `turnstate_plugin.h`, the same plugins C stores load) and appends it to
    /// the end of the middleware chain.
    ///
    /// The plugin sees each ``TaggedAction`` in its wire form
    /// `{"type": ..., "payload": ...}`; an action it changes is decoded back
    /// through `registry`, and one that the registry cannot decode fails the
    /// dispatch with ``StoreError/Code/unknownAction`` (never dropped silently).
    /// Actions that are not `TaggedAction`s (thunks, for instance) pass the
    /// plugin by. The plugin's table reads the state as the JSON encoding of
    /// `State` and restores it by decoding.
    ///
    /// - Parameters:
    ///   - path: the plugin file. Checked as `ts_store_load_plugin` checks it:
    ///     refused unless, with links resolved, it and every folder above it
    ///     belong to root or this user and nobody else can write them (a
    ///     sticky folder owned by root, like /tmp, excepted).
    ///   - config: the plugin's configuration as JSON text; nil means `{}`.
    ///   - registry: the action types the plugin may send back.
    ///   - schema: the state's version and migrations: what the plugin reads
    ///     as the store's version (the journal records it) and migrates saved
    ///     state with (``StateSchema``); nil is version 0, no migrations.
    /// - Throws: as `ts_store_load_plugin`: ``StoreError/Code/notFound``,
    ///   ``StoreError/Code/pluginFailed``, ``StoreError/Code/abiMismatch``,
    ///   ``StoreError/Code/invalidJSON``.
    public func loadPlugin(at path: String, config: String? = nil, registry: ActionRegistry,
                           schema: StateSchema? = nil) throws(StoreError) {
        try pluginSet(registry: registry, schema: schema).load(path: path, config: config)
    }

    /// Loads every `*.so` in `folder` in byte order of their names, each with
    /// the config in `NAME.json` beside it if there is one. All or nothing.
    /// See ``loadPlugin(at:config:registry:)``.
    public func loadPlugins(from folder: String, registry: ActionRegistry, schema: StateSchema? = nil) throws(StoreError) {
        try pluginSet(registry: registry, schema: schema).loadFolder(folder)
    }

    private func pluginSet(registry: ActionRegistry, schema: StateSchema?) throws(StoreError) -> PluginSet<State> {
        let face = TypedStoreFace(store: self, registry: registry, schema: schema)
        let plugins = PluginSet(store: self, api: try StoreAPI(for: face),
                                bridge: TaggedActionBridge<State>(registry: registry))
        // The face and the plugins live as long as the store.
        attach(face)
        attach(plugins)
        return plugins
    }
}

/// Tagged actions to JSON for plugins, and back through a registry.
struct TaggedActionBridge<State: Sendable>: ActionBridge {
    let registry: ActionRegistry

    package func foreign(_ action: any Action) throws(StoreError) -> JSONAction? {
        guard let tagged = action as? any TaggedAction else { return nil }
        return try JSONAction(copying: try tagged.taggedJSON())
    }

    package func native(_ json: UnsafePointer<CChar>) throws(StoreError) -> any Action {
        let action = try JSONAction(parsing: json)
        let payload = action.view.pointee.payload.map { String(cString: $0) }
        return try registry.decode(type: action.type, payload: payload)
    }
}

/// What a plugin's table does on a typed store.
final class TypedStoreFace<State: Codable & Sendable>: StoreFace, @unchecked Sendable {
    private weak var store: Store<State>?
    private let registry: ActionRegistry
    private let schema: StateSchema?

    init(store: Store<State>, registry: ActionRegistry, schema: StateSchema?) {
        self.store = store
        self.registry = registry
        self.schema = schema
    }

    private func live() throws(StoreError) -> Store<State> {
        guard let store else { throw StoreError(.storeReleased, "the store was released") }
        return store
    }

    package func dispatch(_ json: UnsafePointer<CChar>) throws(StoreError) {
        try live().dispatch(try TaggedActionBridge<State>(registry: registry).native(json))
    }

    package func apply(_ json: UnsafePointer<CChar>) throws(StoreError) {
        try live().applySkippingMiddleware(try TaggedActionBridge<State>(registry: registry).native(json))
    }

    package func state(at pointer: UnsafePointer<CChar>?) throws(StoreError) -> UnsafeMutablePointer<CChar> {
        let pointerText = pointer.map { String(cString: $0) } ?? ""
        let data: Data
        do {
            data = try WireFormat.encoder().encode(try live().getState())
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(.badArgument, "the state does not encode as JSON: \(error)")
        }
        // The encoded state as one slice: the C store's pointer look-up.
        let whole = data.withUnsafeBytes { raw in
            Result { () throws(StoreError) -> JSONSlice in
                try JSONSlice(validating: raw.baseAddress!.assumingMemoryBound(to: CChar.self), length: raw.count,
                              context: "the encoded state")
            }
        }
        return try whole.get().value(at: pointerText[...].utf8, path: pointerText).0
    }

    package func exclusive(_ body: () -> Int32) throws(StoreError) -> Int32 {
        try live().exclusively(.operation) { body() }
    }

    package func replaceState(_ json: UnsafePointer<CChar>) throws(StoreError) {
        let length = strlen(json)
        // Strict JSON first, as for C stores: JSONDecoder alone would take one
        // copy of a key that appears twice.
        _ = try JSONSlice(validating: json, length: length, context: "the new state")
        let state: State
        do {
            state = try JSONDecoder().decode(State.self, from: Data(bytes: json, count: length))
        } catch {
            throw StoreError(.invalidJSON, "the new state does not decode as \(State.self): \(error)")
        }
        try live().mutateState(.replaceState, notify: true) { current in current = state }
    }

    package func stateVersion() throws(StoreError) -> UInt32 {
        _ = try live()
        return schema?.version ?? 0
    }

    package func replaceState(_ json: UnsafePointer<CChar>, from version: UInt32) throws(StoreError) {
        let length = strlen(json)
        _ = try JSONSlice(validating: json, length: length, context: "the new state")
        let schema = schema ?? StateSchema(version: 0)
        let state = try schema.decode(State.self, from: Data(bytes: json, count: length), version: version)
        try live().mutateState(.replaceState, notify: true) { current in current = state }
    }
}
