import Foundation

/// A value that threads take turns with, which escaping closures may capture.
public final class LockedBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    public init(_ value: Value) { self.value = value }

    public func withLock<R>(_ body: (inout Value) -> R) -> R { lock.withLock { body(&value) } }

    public var current: Value { withLock { $0 } }
}

/// The name of the calling thread, as `ps` shows it ("suite-watcher", "suite-observers").
public func currentThreadName() -> String {
    ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "?").trimmingCharacters(in: .newlines)
}
