#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
import TurnstateCore
@testable import TurnstateC

// A C store's spare action (SpareAction, JSONState/JSONAction.swift): each
// ts_store_dispatch parses into the same action object when it is free, and
// into a new one when it is in use (a nested dispatch), so that no dispatch
// sees another's action.
@Suite struct SpareActionTests {
    final class Seen: @unchecked Sendable {
        var actions: [JSONAction] = []
        var types: [String] = []
    }

    final class Watch: @unchecked Sendable {
        weak var first: JSONAction?
        var reused: [Bool] = []
    }

    @Test func dispatchesOneAfterAnotherReuseTheSameAction() throws {
        let spare = SpareAction()
        let watch = Watch()
        let seen = Seen()
        for text in [#"{"type":"a","payload":1}"#, #"{"type":"bb"}"#] {
            let json = strdup(text)!
            defer { free(json) }
            try spare.withParsed(json) { action throws(StoreError) in
                // Watched weakly: a strong reference would keep it from reuse.
                if let first = watch.first { watch.reused.append(first === action) } else { watch.first = action }
                seen.types.append(action.type)
                #expect(action.typeLength == action.type.utf8.count)
            }
        }
        #expect(seen.types == ["a", "bb"])
        #expect(watch.reused == [true])
    }

    @Test func anActionSomeoneKeptIsNeverParsedInto() throws {
        let spare = SpareAction()
        let seen = Seen()
        for text in [#"{"type":"kept"}"#, #"{"type":"next"}"#] {
            let json = strdup(text)!
            defer { free(json) }
            try spare.withParsed(json) { action throws(StoreError) in seen.actions.append(action) }
        }
        #expect(seen.actions[0] !== seen.actions[1])
        #expect(seen.actions.map(\.type) == ["kept", "next"])
    }

    @Test func aDispatchWhileTheSpareIsInUseGetsItsOwnAction() throws {
        let spare = SpareAction()
        let seen = Seen()
        let outer = strdup(#"{"type":"outer"}"#)!
        let inner = strdup(#"{"type":"inner"}"#)!
        defer {
            free(outer)
            free(inner)
        }
        try spare.withParsed(outer) { outerAction throws(StoreError) in
            try spare.withParsed(inner) { innerAction throws(StoreError) in
                seen.actions.append(innerAction)
                seen.types.append(innerAction.type)
            }
            // The inner dispatch did not touch the outer's action.
            seen.types.append(outerAction.type)
            #expect(seen.actions[0] !== outerAction)
        }
        #expect(seen.types == ["inner", "outer"])
    }

    @Test func textThatIsNoActionLeavesTheSpareUsable() throws {
        let spare = SpareAction()
        let seen = Seen()
        let texts = [#"{"type":"first"}"#, #"{"payload":1}"#, #"{"type":"#, #"{"type":"after"}"#]
        var statuses: [StoreError.Code?] = []
        for text in texts {
            let json = strdup(text)!
            defer { free(json) }
            do throws(StoreError) {
                try spare.withParsed(json) { action throws(StoreError) in seen.types.append(action.type) }
                statuses.append(nil)
            } catch {
                statuses.append(error.code)
            }
        }
        #expect(statuses == [nil, .notAnAction, .invalidJSON, nil])
        #expect(seen.types == ["first", "after"])
    }
}
