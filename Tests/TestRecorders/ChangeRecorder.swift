import Foundation
import SuiteDefaults

/// Collects the changes and errors an observer receives, and waits for them with
/// deadlines.
public final class ChangeRecorder: @unchecked Sendable {
    private let condition = NSCondition()
    private var received: [SuiteChange] = []
    private var failures: [SuiteError] = []

    public init() {}

    public var handler: @Sendable (SuiteChange) -> Void {
        { [self] change in
            condition.lock()
            received.append(change)
            condition.broadcast()
            condition.unlock()
        }
    }

    public var errorHandler: @Sendable (SuiteError) -> Void {
        { [self] error in
            condition.lock()
            failures.append(error)
            condition.broadcast()
            condition.unlock()
        }
    }

    public var errors: [SuiteError] {
        condition.lock()
        defer { condition.unlock() }
        return failures
    }

    /// Waits until an error arrived; false if none does by the deadline.
    public func waitForError(timeout: Duration = .seconds(30)) -> Bool {
        let deadline = Date().addingTimeInterval(Double(timeout.components.seconds))
        condition.lock()
        defer { condition.unlock() }
        while failures.isEmpty {
            if !condition.wait(until: deadline) { return !failures.isEmpty }
        }
        return true
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
