
/// A token for something that runs until cancelled: an observation, a diagnostics
/// handler. It cancels itself when it is deinitialized, so keep it for as long as the
/// thing should run.
public final class SuiteCancellable: Sendable {
    private let onCancel: Locked<(@Sendable () -> Void)?>

    /// Creates a token that runs `onCancel` once, on the first `cancel()` or at deinit.
    public init(_ onCancel: @escaping @Sendable () -> Void) {
        self.onCancel = Locked(onCancel)
    }

    /// Stops what this token stands for. Calling it again does nothing.
    public func cancel() {
        let action = onCancel.withLock { action in
            defer { action = nil }
            return action
        }
        action?()
    }

    /// Whether `cancel()` has run.
    public var isCancelled: Bool { onCancel.withLock { $0 == nil } }

    deinit { cancel() }
}
