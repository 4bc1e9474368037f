import Synchronization

/// Points inside a commit (or a wait, or a removal) where a test can stop a process.
///
/// For tests of crash safety only: a worker process arms a point with a handler
/// that reports where it is and then waits to be killed with SIGKILL. When nothing
/// is armed, each point costs one relaxed atomic load.
@_spi(Testing)
public enum SuiteFaultInjection {
    public enum Point: Int, Sendable, CaseIterable {
        /// Under the exclusive lock, the generation made odd, nothing written yet.
        case commitStarted
        /// Half of the record written to the data file.
        case partialRecordWritten
        /// The whole record written, not yet published in the shared header.
        case recordWritten
        /// Published, the lock still held.
        case committed
        /// A compaction's new file renamed into place, the shared header not yet updated.
        case compactionRenamed
        /// The suite's lock found held by another process: the wait for it begins.
        case waitingForLock
        /// A removal of the suite's files (`Suite.removeFiles`) took the data file's
        /// name away, holding the lock.
        case suiteFileRemoved
        /// A compaction's new file written under its temporary name (and the old one
        /// linked as history), not yet in place.
        case compactionWritten
        /// A repair's new file written under its temporary name and the damaged file
        /// kept aside under a name of its own, the new file not yet in place.
        case repairWritten
        /// A compaction's new file written under its temporary name, before the old one
        /// is linked as history.
        case compactionNewFileWritten
        /// A compaction's or repair's replacement of the data file: the data file's name
        /// found leading to the file it replaces, the names not yet exchanged.
        case replacementChecked
        /// The same replacement's names exchanged, what came out not yet checked.
        case replacementExchanged
    }

    private static let armed = Atomic<Int>(0)
    private static let handlers = Locked<[Int: @Sendable (Point) -> Void]>([:])

    /// Calls `handler` whenever a commit reaches `point`, on the committing thread.
    public static func arm(_ point: Point, handler: @escaping @Sendable (Point) -> Void) {
        handlers.withLock { $0[point.rawValue] = handler }
        armed.bitwiseOr(1 << point.rawValue, ordering: .sequentiallyConsistent)
    }

    static func isArmed(_ point: Point) -> Bool {
        armed.load(ordering: .relaxed) & (1 << point.rawValue) != 0
    }

    @inline(__always)
    static func reach(_ point: Point) {
        guard isArmed(point) else { return }
        let handler = handlers.withLock { $0[point.rawValue] }
        handler?(point)
    }

    private static let simulatedOverflow = Atomic<Bool>(false)

    /// Makes the change watcher treat its next wake-up as an inotify queue overflow,
    /// as if events had been lost, for tests on machines where the queue limit
    /// cannot be lowered.
    public static func simulateWatcherOverflow() {
        simulatedOverflow.store(true, ordering: .sequentiallyConsistent)
    }

    static func takeSimulatedOverflow() -> Bool {
        simulatedOverflow.exchange(false, ordering: .sequentiallyConsistent)
    }
}
