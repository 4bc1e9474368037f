import Synchronization

/// One thread of this process, marked so that code can tell whether it runs on it. The
/// fork epoch is kept beside the thread's ID, since a forked child's new threads may
/// reuse a parent's thread IDs.
struct ThreadMark: ~Copyable, Sendable {
    private let thread = Atomic<UInt>(0)
    private let epoch = Atomic<UInt32>(0)

    init() {}

    /// Marks the calling thread.
    func markCurrentThread() {
        epoch.store(ForkEpoch.current, ordering: .relaxed)
        thread.store(ProcessIdentity.thread, ordering: .relaxed)
    }

    /// Marks no thread.
    func clear() { thread.store(0, ordering: .relaxed) }

    /// Whether the calling thread is the marked one.
    var isCurrentThread: Bool {
        thread.load(ordering: .relaxed) == ProcessIdentity.thread && epoch.load(ordering: .relaxed) == ForkEpoch.current
    }
}
