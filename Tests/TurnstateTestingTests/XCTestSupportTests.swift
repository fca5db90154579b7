#if canImport(XCTest)
import Foundation
import Turnstate
import TurnstateTesting
import XCTest

/// The TestStore under XCTest: a test that describes every step passes, and
/// a wrong step becomes an XCTest failure of the running test at the line of
/// the call. (Run with `swift test --disable-swift-testing`; `make test-swift`
/// does.)
final class TestStoreXCTests: XCTestCase {
    /// Failures recorded by the test under way, instead of failing it, while
    /// `capturing` is set.
    private var captured: [(message: String, line: Int)] = []
    private var capturing = false

    override func recordFailure(withDescription description: String, inFile filePath: String, atLine lineNumber: Int,
                                expected: Bool) {
        if capturing {
            captured.append((description, lineNumber))
        } else {
            super.recordFailure(withDescription: description, inFile: filePath, atLine: lineNumber, expected: expected)
        }
    }

    /// The failures `body` records.
    private func failures(_ body: () async -> Void) async -> [(message: String, line: Int)] {
        capturing = true
        captured = []
        await body()
        capturing = false
        return captured
    }

    func testAPassingTestRecordsNothing() async {
        let store = makeStore(middleware: [bonus, ThunkMiddleware()])
        store.send(CounterAction.increment) { $0.count = 1 }
        await store.receive(CounterAction.add(10)) { $0.count = 11 }
        store.send(load)
        await store.receive(CounterAction.startLoading) { $0.loading = true }
        await store.receive(CounterAction.loaded(["a", "b"])) {
            $0.items = ["a", "b"]
            $0.loading = false
        }
        await store.finish()
    }

    func testAWrongStateChangeIsAnXCTestFailureAtTheCall() async {
        let store = makeStore()
        let line = #line + 2
        let recorded = await failures {
            store.send(CounterAction.add(2)) { $0.count = 3 }
        }
        XCTAssertEqual(recorded.count, 1)
        XCTAssertEqual(recorded.first?.line, line)
        XCTAssertTrue(recorded.first?.message.contains("The state does not match the expectation") == true,
                      recorded.first?.message ?? "")
        XCTAssertTrue(recorded.first?.message.contains("+   count: 2,") == true, recorded.first?.message ?? "")
    }

    func testAnUnreceivedActionIsAnXCTestFailureWhenTheStoreGoes() async {
        let recorded = await failures {
            let store = makeStore(middleware: [bonus])
            store.send(CounterAction.increment) { $0.count = 1 }
        }
        XCTAssertEqual(recorded.count, 1)
        XCTAssertTrue(recorded.first?.message.contains("CounterAction.add(10)") == true, recorded.first?.message ?? "")
    }

    func testATimeoutIsAnXCTestFailure() async {
        let store = makeStore()
        let recorded = await failures {
            await store.receive(CounterAction.self, timeout: .milliseconds(20))
        }
        XCTAssertEqual(recorded.count, 1)
        XCTAssertTrue(recorded.first?.message.contains("no action was received within") == true,
                      recorded.first?.message ?? "")
    }
}
#endif
