import Testing
import TurnstateCore
@testable import TurnstateC

// The core's hooks for the faces (Sources/TurnstateCore/FaceHooks.swift):
// the core names its operations as Swift does and a face renames them; a
// failable reducer's call into its store is logged where the face can see
// it without a reference to the store; and the C face's actions come back
// out of `any Action` with their concrete type.
@Suite struct FaceHooksTests {
    struct Tick: Action {}

    final class Box<Value>: @unchecked Sendable {
        var value: Value?
    }

    @Test func aStoreRefusesWithSwiftNamesUntilItsFaceNamesTheOperations() throws {
        let store = Store(initialState: 0, failableReducer: { state, _ throws(StoreError) in state += 1 })
        store.close()
        #expect(throws: StoreError.self) { try store.dispatch(Tick()) }
        do { try store.dispatch(Tick()) } catch {
            #expect(error.code == .storeReleased)
            #expect(error.message.hasPrefix("dispatch(Tick) was called on a store that is closed"))
        }
        store.nameOperations { operation, _ in
            if case .dispatch = operation { return "face_dispatch" }
            return nil
        }
        do { try store.dispatch(Tick()) } catch {
            #expect(error.message.hasPrefix("face_dispatch was called on a store that is closed"))
        }
        // What the face did not name keeps its Swift name; a face's own
        // operation is named by the face and never renamed by the core.
        do { _ = try store.getState() } catch {
            #expect(error.message.hasPrefix("getState() was called on a store that is closed"))
        }
        do { try store.exclusively(.face("loading a widget")) {} } catch {
            #expect(error.message.hasPrefix("loading a widget was called on a store that is closed"))
        }
    }

    @Test func theCFaceNamesTheCoreOperationsAsTheCAPIDoes() {
        #expect(CNames.name(.dispatch, nil) == "ts_store_dispatch")
        #expect(CNames.name(.getState, nil) == "ts_store_get_state")
        #expect(CNames.name(.removeMiddleware, nil) == "ts_store_remove_middleware")
        #expect(CNames.name(.addReducer, nil) == nil)
        guard case .face(let name) = StoreOperation.addReducer else { Issue.record("not a face operation"); return }
        #expect("\(name)" == "ts_store_add_reducer")
    }

    @Test func aReducerCallIntoItsStoreIsLoggedUntilTheStepEnds() throws {
        let log = ReentrantCallLog()
        let box = Box<Store<Int>>()
        let seen = Box<StoreError>()
        let store = Store(initialState: 0, failableReducer: { state, _ throws(StoreError) in
            #expect(log.isClear)
            #expect(throws: StoreError.self) { _ = try box.value?.getState() }
            // The refusal is in the log while the reducer still runs.
            #expect(!log.isClear)
            seen.value = log.violation
            state += 1
        }, reentrantCalls: log)
        box.value = store
        try store.dispatch(Tick())
        #expect(seen.value?.code == .reentrantCall)
        #expect(seen.value?.message.hasPrefix("getState() was called from inside a reducer") == true)
        // Forgotten once the step is over: the next step starts clear.
        #expect(log.isClear)
        #expect(log.violation == nil)
        #expect(try store.getState() == 1)
        box.value = nil
    }

    @Test func aJSONActionComesBackOutOfAnyActionAsItself() throws {
        let json = try JSONAction(copying: #"{"type":"todos/add","payload":1}"#)
        let erased: any Action = json
        #expect(JSONAction.cast(erased) === json)
        #expect(JSONAction.cast(Tick()) == nil)
        #expect(JSONAction.cast(ReducerReplaced()) == nil)
        // A value whose first word is a JSONAction is not one.
        struct Wrapper: Action { let inner: JSONAction; let tag: Int }
        #expect(JSONAction.cast(Wrapper(inner: json, tag: 7)) == nil)
    }
}
