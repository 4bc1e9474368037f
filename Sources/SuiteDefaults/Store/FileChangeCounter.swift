/// Counts, for this process, the events that say a suite file may no longer be what a
/// writer last found it to be: it lost or changed a name (deleted, renamed, or replaced
/// by a rename over it), had its attributes changed, or, for a lock file, was written,
/// cut or grown by a call (this library writes it only through the mapping, which
/// raises no event). One inotify instance watches every writer's lock file and data
/// file, so that a commit learns that nothing happened to its two files from one read
/// that finds no event, instead of a status call on each.
///
/// Only a count, and a conservative one: a writer that sees it move checks its files
/// with status calls, as before. It also moves for the files of other suites that the
/// process writes, for the process's own compactions, and when the queue overflows;
/// each costs a writer one such check. The kernel queues an event before the call
/// that caused it returns, so a read that finds none proves that no such call ended
/// before it began.
///
/// A forked child inherits the instance but never reads it (that would take events
/// its parent needs): it opens its own. Two states of the process that watch one
/// file share its watch.
enum FileChangeCounter {
    /// One file watched, for the fork epoch it was watched in.
    struct Watch: Equatable {
        fileprivate let number: Int32
        fileprivate let epoch: UInt32
        /// Which of the process's instances it is in (one is given up after a failed read).
        fileprivate let instance: UInt32
    }

    /// Which of a suite's files is watched, which decides what is watched for.
    enum File {
        case lockFile
        case dataFile

        fileprivate var mask: Inotify.Mask {
            switch self {
            // The lock file cut short (`ftruncate` raises IN_MODIFY) must be noticed.
            case .lockFile: [.attributesChanged, .modified, .movedSelf, .deletedSelf]
            // Every commit writes the data file, so writes are not watched: a commit
            // learns its size from `lseek` instead.
            case .dataFile: [.attributesChanged, .movedSelf, .deletedSelf]
            }
        }
    }

    private struct State {
        var epoch = ForkEpoch.current
        var instance: CInt = -1
        /// Counts the instances this process had, so that a watch of one given up is
        /// never taken for a watch of the next.
        var instanceNumber: UInt32 = 0
        var count: UInt64 = 0
        /// Live watches, by number, and how many states use each (two states of one
        /// process that watch one file get one watch).
        var users: [Int32: Int] = [:]
        /// Watches removed whose removal has not been read yet (`IN_IGNORED`): their
        /// events may still come.
        var removed: Set<Int32> = []
        /// After inotify failed (no instance or watch to be had: descriptors or
        /// watches used up, no /proc; or a read failed), how many requests for a watch
        /// are refused before it is tried again, and how many the next failure costs:
        /// meanwhile writers check their files with status calls.
        var refusalsLeft = 0
        var refusalsAfterFailure = 1

        func isInPlace(_ watch: Watch) -> Bool {
            watch.epoch == epoch && watch.instance == instanceNumber && users[watch.number] != nil
        }

        mutating func failed() {
            refusalsLeft = refusalsAfterFailure
            refusalsAfterFailure = min(2 * refusalsAfterFailure, 1024)
        }
    }

    private static let locked = Locked(State())

    /// The size of the buffer events are read into, on the stack: 32 events of
    /// watched files, which carry no names. More are counted at the next read.
    private static let readSize = 512

    private static func withState<R>(_ body: (inout State) -> R) -> R {
        locked.withLock { state in
            if state.epoch != ForkEpoch.current {
                // The parent's instance is left open, not closed: the child may have
                // closed that number already and given it to a file of its own.
                state = State()
            }
            return body(&state)
        }
    }

    /// Starts watching the file open as `descriptor`; nil when this process cannot
    /// (then asked again after a number of requests that doubles with each failure).
    static func watch(_ descriptor: FileDescriptor, as file: File) -> Watch? {
        withState { state in
            guard state.refusalsLeft == 0 else {
                state.refusalsLeft -= 1
                return nil
            }
            do {
                if state.instance < 0 {
                    state.instance = try Inotify.openWithoutBlocking()
                    state.instanceNumber &+= 1
                }
                // By the descriptor's link in /proc: the file this process has open,
                // whatever has its name now.
                let number = try Inotify.watch(state.instance, path: descriptor.procPath, mask: file.mask)
                state.users[number, default: 0] += 1
                state.refusalsAfterFailure = 1
                return Watch(number: number, epoch: state.epoch, instance: state.instanceNumber)
            } catch {
                state.failed()
                return nil
            }
        }
    }

    /// Stops one state's watching of a file.
    static func unwatch(_ watch: Watch) {
        withState { state in
            guard state.isInPlace(watch), let users = state.users[watch.number] else { return }
            if users > 1 {
                state.users[watch.number] = users - 1
            } else {
                state.users[watch.number] = nil
                state.removed.insert(watch.number)
                Inotify.removeWatch(state.instance, watch.number)
            }
        }
    }

    /// Counts the events queued since the last call, without waiting (one `read`),
    /// and returns how many have been counted so far; nil when this process has no
    /// instance.
    static func count() -> UInt64? {
        withState { state in
            guard state.instance >= 0 else { return nil }
            let read: Bool = withUnsafeTemporaryAllocation(byteCount: readSize, alignment: 8) { buffer in
                guard let count = Inotify.readWithoutWaiting(state.instance, into: buffer.baseAddress!, capacity: readSize) else {
                    return false
                }
                return count == 0 || countEvents(in: UnsafeRawBufferPointer(rebasing: buffer[..<count]), &state)
            }
            guard read else {
                // Given up, not closed: the number is no longer this instance (code
                // outside the library closed it, and maybe gave it to another file,
                // whose bytes are no events). Every watch goes with it, and the count
                // moves, so that every writer checks its files and watches them again.
                state.instance = -1
                state.users = [:]
                state.removed = []
                state.count &+= 1
                state.failed()
                return nil
            }
            return state.count
        }
    }

    /// Whether `watches` are all still in place (a watch is removed with its file, or
    /// by the last state that used it). Needed only once the count moved: a watch is
    /// never removed without an event, which moves it.
    static func areInPlace(_ lockFile: Watch, _ dataFile: Watch?) -> Bool {
        withState { state in
            state.isInPlace(lockFile) && (dataFile.map(state.isInPlace) ?? true)
        }
    }

    /// Counts the events in `bytes`; false when they are not this instance's: not whole
    /// events of watched files (which carry no names), or of a watch it never had.
    private static func countEvents(in bytes: UnsafeRawBufferPointer, _ state: inout State) -> Bool {
        var events: [Inotify.Event] = []
        Inotify.append(eventsIn: bytes.baseAddress!, count: bytes.count, to: &events)
        guard bytes.count == events.count * Inotify.eventSize else { return false }
        for event in events {
            if event.mask.contains(.queueOverflowed) { continue }
            guard event.name.isEmpty, state.users[event.watch] != nil || state.removed.contains(event.watch) else { return false }
            if event.mask.contains(.watchRemoved) {
                state.users[event.watch] = nil
                state.removed.remove(event.watch)
            }
        }
        // Any count that moves will do; one more for an overflow, which stands for
        // events lost.
        state.count &+= UInt64(events.count) &+ 1
        return true
    }
}
