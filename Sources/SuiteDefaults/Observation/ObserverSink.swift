import Synchronization

/// One observer of one suite: which keys it wants, and where its changes and errors go.
final class ObserverSink: Sendable {
    let keys: Set<String>?
    /// Whether it asked for `SuiteObservation.Delivery.watcherThread`.
    let onWatcherThread: Bool
    private let onChange: @Sendable (SuiteChange) -> Void
    private let onError: (@Sendable (SuiteError) -> Void)?
    private let active = Atomic<Bool>(true)

    init(keys: Set<String>?, onWatcherThread: Bool = false, onError: (@Sendable (SuiteError) -> Void)?,
         onChange: @escaping @Sendable (SuiteChange) -> Void) {
        self.keys = keys
        self.onWatcherThread = onWatcherThread
        self.onChange = onChange
        self.onError = onError
    }

    /// Hands over a change, unless the observation was cancelled in the meantime.
    func receive(_ change: SuiteChange) {
        if active.load(ordering: .acquiring) && (keys?.contains(change.key) ?? true) { onChange(change) }
    }

    /// Hands over an error, unless the observation was cancelled in the meantime.
    func fail(_ error: SuiteError) {
        if active.load(ordering: .acquiring) { onError?(error) }
    }

    func deactivate() { active.store(false, ordering: .releasing) }
}
