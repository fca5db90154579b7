import Testing
@testable import TurnstateC

// How a pointer listener decides from a patch's paths, without comparing
// texts, that its value cannot have changed (PatchOrigin, used by
// PointerWatcher). The C suite (Tests/c/test_patch.c) checks the listeners'
// calls; these check the decision itself, which the calls alone cannot tell
// from a comparison that found the value equal.
@Suite struct PatchOriginTests {
    @Test func pathsEndingInAnArrayIndexCountAsTheirArray() {
        #expect(PatchOrigin.affected("/items/3/done") == "/items/3/done")
        #expect(PatchOrigin.affected("/items/3") == "/items")
        #expect(PatchOrigin.affected("/items/-") == "/items")
        #expect(PatchOrigin.affected("/-") == "")
        #expect(PatchOrigin.affected("/0") == "")
        #expect(PatchOrigin.affected("") == "")
        // Digits only: maybe an array index, so the container (never less).
        #expect(PatchOrigin.affected("/obj/007") == "/obj")
        #expect(PatchOrigin.affected("/items/3a") == "/items/3a")
        #expect(PatchOrigin.affected("/items/--") == "/items/--")
        #expect(PatchOrigin.affected("/a~1b/c") == "/a~1b/c")
    }

    @Test func aPointerMayChangeWhenAPathIsAtAboveOrBelowIt() {
        let origin = PatchOrigin(previousID: 1, paths: ["/items/1/done", "/meta/n"])
        func may(_ pointer: String) -> Bool { origin.mayChange(pointer[...].utf8) }
        #expect(may("/items/1/done"))   // at
        #expect(may("/items/1"))        // above
        #expect(may("/items"))
        #expect(may(""))                // the whole slice
        #expect(may("/meta/n/x"))       // below
        #expect(!may("/items/10"))      // a sibling that starts alike
        #expect(!may("/items/1/doneX"))
        #expect(!may("/items/2/done"))
        #expect(!may("/meta/m"))
        #expect(!may("/other"))
    }

    @Test func insertionsAndRemovalsReachTheWholeArray() {
        let origin = PatchOrigin(previousID: 1, paths: ["/items/0", "/list/-"])
        func may(_ pointer: String) -> Bool { origin.mayChange(pointer[...].utf8) }
        #expect(may("/items/5/done"))
        #expect(may("/list/100"))
        #expect(!may("/meta"))
    }

    @Test func theWholeSliceReachesEverything() {
        let origin = PatchOrigin(previousID: 1, paths: [""])
        #expect(origin.mayChange("/a/b"[...].utf8))
        #expect(origin.mayChange(""[...].utf8))
    }
}
