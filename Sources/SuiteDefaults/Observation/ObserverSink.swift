import Synchronization

/// One observer of one suite: which keys it wants, and where its changes go.
final class ObserverSink: Sendable {
    let keys: Set<String>?
    private let handler: @Sendable (SuiteChange) -> Void
    private let active = Atomic<Bool>(true)

    init(keys: Set<String>?, handler: @escaping @Sendable (SuiteChange) -> Void) {
        self.keys = keys
        self.handler = handler
    }

    func wants(_ key: String) -> Bool { keys?.contains(key) ?? true }

    /// Hands over a change, unless the observation was cancelled in the meantime.
    func receive(_ change: SuiteChange) {
        if active.load(ordering: .acquiring) && wants(change.key) { handler(change) }
    }

    func deactivate() { active.store(false, ordering: .releasing) }
}
