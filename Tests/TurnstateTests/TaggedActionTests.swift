import Foundation
import Testing
import Turnstate

/// The wire form of actions: `{"type": "...", "payload": ...}`, and decoding it back.
@Suite("Tagged actions")
struct TaggedActionTests {

    struct AddTodo: TaggedAction, Equatable {
        static let actionType = "todos/add"
        var title: String
        var url: String
        var priority: Int
        var tags: [String]
        var done: Bool
        var weight: Double
    }

    struct Ping: TaggedAction, Equatable {
        static let actionType = "ping"
    }

    struct Rename: TaggedAction, Equatable {
        static let actionType = "user/rename"
        var name: String
        var previous: String?
    }

    /// An action whose fields are all optional: `{}` decodes, `null` does not.
    struct Configure: TaggedAction, Equatable {
        static let actionType = "settings/configure"
        var verbose: Bool?
        var level: Int?
    }

    /// A different type that claims the tag of AddTodo.
    struct Impostor: TaggedAction {
        static let actionType = "todos/add"
        var other: Int
    }

    static let sample = AddTodo(title: "milk", url: "https://example.com/a/b", priority: 2,
                                tags: ["z/y", "a"], done: false, weight: 0.5)

    @Test func taggedJSONHasTypeThenPayloadWithSortedKeysAndUnescapedSlashes() throws {
        let json = try Self.sample.taggedJSON()
        #expect(json == #"{"type":"todos/add","payload":{"done":false,"priority":2,"tags":["z/y","a"],"title":"milk","url":"https://example.com/a/b","weight":0.5}}"#)
        #expect(!json.contains(#"\/"#))
    }

    @Test func taggedJSONIsValidJSONWithTheTagAndThePayload() throws {
        let json = try Rename(name: "a/b", previous: nil).taggedJSON()
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(Set(object.keys) == ["type", "payload"])
        #expect(object["type"] as? String == "user/rename")
        let payload = try #require(object["payload"] as? [String: Any])
        #expect(payload["name"] as? String == "a/b")
    }

    @Test func fieldlessActionHasAnEmptyObjectPayload() throws {
        #expect(try Ping().taggedJSON() == #"{"type":"ping","payload":{}}"#)
    }

    @Test func registryDecodesTheWireFormBackToTheRightType() throws {
        let registry = try ActionRegistry([AddTodo.self, Ping.self, Rename.self])
        let actions: [any TaggedAction] = [Self.sample, Ping(), Rename(name: "n/m", previous: "old"), Rename(name: "x", previous: nil)]
        for action in actions {
            let decoded = try registry.decode(json: try action.taggedJSON())
            #expect(type(of: decoded) == type(of: action))
            switch (action, decoded) {
            case (let a as AddTodo, let b as AddTodo): #expect(a == b)
            case (let a as Ping, let b as Ping): #expect(a == b)
            case (let a as Rename, let b as Rename): #expect(a == b)
            default: Issue.record("decoded \(decoded) as the wrong type for \(action)")
            }
        }
    }

    @Test func registryDecodesHandWrittenJSONWithOtherKeyOrderAndEscapes() throws {
        let registry = try ActionRegistry([AddTodo.self])
        let json = #"{ "payload" : {"weight": 1.25, "url": "a\/b", "title": "eggs", "tags": [], "priority": 7, "done": true}, "type": "todos/add" }"#
        let decoded = try registry.decode(json: json)
        #expect(decoded as? AddTodo == AddTodo(title: "eggs", url: "a/b", priority: 7, tags: [], done: true, weight: 1.25))
    }

    @Test func decodeTypeAndPayload() throws {
        var registry = try ActionRegistry()
        try registry.register(Ping.self)
        try registry.register(Rename.self)
        #expect(registry.actionTypes == ["ping", "user/rename"])
        #expect(registry.contains(actionType: "ping"))
        #expect(!registry.contains(actionType: "todos/add"))

        #expect(try registry.decode(type: "ping", payload: nil) as? Ping == Ping())
        #expect(try registry.decode(type: "ping", payload: "{}") as? Ping == Ping())
        #expect(try registry.decode(type: "user/rename", payload: #"{"name":"q"}"#) as? Rename == Rename(name: "q", previous: nil))
    }

    @Test func nilPayloadDecodesAsAnEmptyObject() throws {
        let registry = try ActionRegistry([Configure.self])
        #expect(try registry.decode(type: "settings/configure", payload: nil) as? Configure == Configure())
        #expect(try registry.decode(json: #"{"type":"settings/configure"}"#) as? Configure == Configure())
        #expect(try registry.decode(type: "settings/configure", payload: #"{"level":3}"#) as? Configure == Configure(level: 3))
        #expect(try registry.decode(json: try Configure(verbose: true).taggedJSON()) as? Configure == Configure(verbose: true))
    }

    @Test func envelopeWithoutPayloadDecodesAFieldlessAction() throws {
        let registry = try ActionRegistry([Ping.self])
        #expect(try registry.decode(json: #"{"type":"ping"}"#) as? Ping == Ping())
        #expect(try registry.decode(json: #"{"type":"ping","payload":null}"#) as? Ping == Ping())
    }

    @Test func unknownTagIsUnknownAction() throws {
        let registry = try ActionRegistry([Ping.self])
        #expect(storeError { () throws(StoreError) in _ = try registry.decode(type: "pong", payload: nil) }?.code == .unknownAction)
        #expect(storeError { () throws(StoreError) in _ = try registry.decode(json: #"{"type":"pong","payload":{}}"#) }?.code == .unknownAction)
    }

    @Test(arguments: [
        #"{"title":5,"url":"","priority":1,"tags":[],"done":false,"weight":1}"#, // wrong type
        #"{"url":"","priority":1,"tags":[],"done":false,"weight":1}"#,           // missing field
        #"[1,2,3]"#,                                                               // not an object
        #"{"title": "#,                                                            // not JSON
    ])
    func badPayloadIsNotAnAction(payload: String) throws {
        let registry = try ActionRegistry([AddTodo.self])
        #expect(storeError { () throws(StoreError) in _ = try registry.decode(type: "todos/add", payload: payload) }?.code == .notAnAction)
    }

    @Test func badPayloadInsideAnEnvelopeIsNotAnAction() throws {
        let registry = try ActionRegistry([AddTodo.self, Ping.self])
        #expect(storeError { () throws(StoreError) in _ = try registry.decode(json: #"{"type":"todos/add","payload":{"title":5}}"#) }?.code == .notAnAction)
        #expect(storeError { () throws(StoreError) in _ = try registry.decode(json: #"{"type":"todos/add"}"#) }?.code == .notAnAction)
        #expect(storeError { () throws(StoreError) in _ = try registry.decode(json: #"{"type":"todos/add","payload":[]}"#) }?.code == .notAnAction)
        // A payload that is not JSON at all is refused even for a field-less action.
        #expect(storeError { () throws(StoreError) in _ = try registry.decode(type: "ping", payload: "{") }?.code == .notAnAction)
    }

    @Test(arguments: [
        #"not json"#,
        #"{"payload":{}}"#,              // no type
        #"{"type":5,"payload":{}}"#,     // type is not a string
        #"["ping",{}]"#,                 // not an object
        #"{"type":"ping""#,              // truncated
        #""#,
    ])
    func malformedEnvelopeIsNotAnAction(json: String) throws {
        let registry = try ActionRegistry([Ping.self])
        #expect(storeError { () throws(StoreError) in _ = try registry.decode(json: json) }?.code == .notAnAction)
    }

    @Test func secondTypeUnderATakenTagIsBadArgument() throws {
        var registry = try ActionRegistry([AddTodo.self])
        #expect(storeError { () throws(StoreError) in try registry.register(Impostor.self) }?.code == .badArgument)
        // The first registration is untouched.
        let decoded = try registry.decode(json: try Self.sample.taggedJSON())
        #expect(decoded as? AddTodo == Self.sample)
        // Registering the same type again is harmless.
        try registry.register(AddTodo.self)
        #expect(registry.actionTypes == ["todos/add"])
    }

    @Test func initWithClashingTypesIsBadArgument() {
        let error = storeError { () throws(StoreError) in _ = try ActionRegistry([AddTodo.self, Ping.self, Impostor.self]) }
        #expect(error?.code == .badArgument)
    }

    @Test func decodedActionCanBeDispatched() throws {
        let registry = try ActionRegistry([Rename.self])
        let store = Store(initialState: "", reducer: Reducer(on: Rename.self) { name, action in name = action.name })
        try store.dispatch(try registry.decode(json: try Rename(name: "from/wire").taggedJSON()))
        #expect(try store.getState() == "from/wire")
    }
}
