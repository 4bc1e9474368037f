import Foundation
import SuiteDefaults

/// Collects the changes an observer receives, and waits for them with deadlines.
public final class ChangeRecorder: @unchecked Sendable {
    private let condition = NSCondition()
    private var received: [SuiteChange] = []

    public init() {}

    public var handler: @Sendable (SuiteChange) -> Void {
        { [self] change in
            condition.lock()
            received.append(change)
            condition.broadcast()
            condition.unlock()
        }
    }

    public var changes: [SuiteChange] {
        condition.lock()
        defer { condition.unlock() }
        return received
    }

    /// Waits until `done` holds for what arrived; false if it does not by the deadline.
    @discardableResult
    public func wait(timeout: Duration = .seconds(30), until done: ([SuiteChange]) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(Double(timeout.components.seconds))
        condition.lock()
        defer { condition.unlock() }
        while !done(received) {
            if !condition.wait(until: deadline) { return done(received) }
        }
        return true
    }

    /// Waits until a change of `key` to `value` arrived.
    @discardableResult
    public func wait(for key: String, toBecome value: SuiteValue?, timeout: Duration = .seconds(30)) -> Bool {
        wait(timeout: timeout) { $0.contains { $0.key == key && $0.newValue == value } }
    }
}
