import Dispatch
import SuiteDefaults

/// An observer whose callback blocks at its first `blocking` changes until `open` is
/// called (or 60 s pass, longer than any test waits), and records every change it
/// receives: a slow callback that a test controls.
public final class BlockingObserver: @unchecked Sendable {
    public let recorder = ChangeRecorder()
    /// Signalled each time the callback starts to block.
    public let entered = DispatchSemaphore(value: 0)
    private let gate = DispatchSemaphore(value: 0)
    private let left: LockedBox<Int>

    public init(blocking: Int = 1) { left = LockedBox(blocking) }

    public var handler: @Sendable (SuiteChange) -> Void {
        { [self] change in
            recorder.handler(change)
            let blocks = left.withLock { value -> Bool in
                defer { value -= 1 }
                return value > 0
            }
            guard blocks else { return }
            entered.signal()
            _ = gate.wait(timeout: .now() + 60)
        }
    }

    /// Lets `times` blocked (or yet to block) callbacks go on.
    public func open(_ times: Int = 1) { for _ in 0..<times { gate.signal() } }
}
