/// Which thread reads the change watcher's inotify instance, and the thread standing
/// by to take the reading over.
///
/// A reader that found a change of a suite whose observers' queue is idle takes that
/// queue and runs the catch-up and the deliveries itself: a wake-up of the queue's
/// thread, on a machine whose idle processors sleep, costs about as much again as the
/// reader's own. While it does, the reading is paused (`pause`), and, when the pause
/// holds back anyone else (another observed suite, a directory's listener), a timer is
/// armed, which wakes nobody. The observers' callbacks may take as long as they like:
/// if they run past `longestPause`, the timer wakes the thread standing by, which
/// reads from then on. The reader, done with the queue, reads again if nobody took
/// over (`resume`), or else stands by itself, or ends when a thread stands by already.
///
/// A process that observes one suite, the usual widget, holds back nobody: its pauses
/// arm no timer (two system calls fewer per change). Whoever starts watching another
/// while such a pause lasts arms it then (`othersWatched`).
///
/// Made with each inotify instance: a forked child, which has none of its parent's
/// threads, starts over with a new instance and a new role.
final class ReaderRole: @unchecked Sendable {
    /// The longest that a queue's callbacks hold back the reading of every other
    /// observed suite of the process.
    static let longestPause = Duration.milliseconds(5)

    private let timer: OneShotTimer
    // Guarded by `lock`, so not checked for exclusive access at run time.
    private let lock = ThreadCondition()
    /// Whether the reader runs a queue's jobs, and nobody reads.
    @exclusivity(unchecked) private var paused = false
    /// Whether a thread stands by (or is being started to).
    @exclusivity(unchecked) private var standingBy = false
    /// Whether the timer runs for the pause.
    @exclusivity(unchecked) private var timerArmed = false
    /// Whether the reading has ended for good (the instance failed): nobody stands by.
    @exclusivity(unchecked) private var ended = false

    /// Nil when no timer can be made: the reader then takes no queue.
    init?() {
        guard let timer = OneShotTimer() else { return nil }
        self.timer = timer
    }

    /// Makes sure a thread stands by, starting one with `start` (which runs
    /// `standBy(started: true)`) if none does; false when none could be started.
    func ensureStandingBy(start: () -> Bool) -> Bool {
        lock.lock()
        let starts = !standingBy
        standingBy = true
        lock.unlock()
        guard starts, !start() else { return true }
        lock.lock()
        standingBy = false
        lock.unlock()
        return false
    }

    /// The reader is about to run a queue's jobs: the reading pauses (after
    /// `ensureStandingBy`), for at most `longestPause` when `holdsBackOthers` says
    /// that anyone else waits for the reading. That is asked holding this role's
    /// lock, so whoever starts watching after the answer finds the pause in
    /// `othersWatched`.
    func pause(holdsBackOthers: () -> Bool) {
        lock.lock()
        defer { lock.unlock() }
        paused = true
        timerArmed = holdsBackOthers()
        if timerArmed { timer.arm(after: Self.longestPause) }
    }

    /// Another suite or listener is watched now (called after it was added): a pause
    /// that held back nobody holds it back from now on, for at most `longestPause`.
    func othersWatched() {
        lock.lock()
        defer { lock.unlock() }
        guard paused, !timerArmed else { return }
        timerArmed = true
        timer.arm(after: Self.longestPause)
    }

    /// The jobs are done: true when the reading is still paused, and the caller reads
    /// again; false when the thread standing by took over.
    func resume() -> Bool {
        lock.lock()
        let armed = timerArmed, stillPaused = paused
        timerArmed = false
        paused = false
        lock.unlock()
        // An expiry before this finds the reading going on (`standBy`).
        if armed { timer.disarm() }
        return stillPaused
    }

    /// The instance can no longer be read (its number was given to another file): the
    /// thread standing by, woken by the timer, ends, as does any that would stand by.
    func end() {
        lock.lock()
        defer { lock.unlock() }
        ended = true
        if standingBy { timer.arm(after: .nanoseconds(1)) }
    }

    /// Stands by until a pause runs long, then returns true: the caller reads from
    /// then on. False at once when another thread stands by already (not `started`
    /// for it), or the reading has ended, and false when the timer fails or the reading
    /// ends while it stands by: the caller ends.
    func standBy(started: Bool) -> Bool {
        lock.lock()
        guard !ended else {
            if started { standingBy = false }
            lock.unlock()
            return false
        }
        if !started {
            guard !standingBy else {
                lock.unlock()
                return false
            }
            standingBy = true
        }
        lock.unlock()
        while true {
            let expired = timer.wait()
            lock.lock()
            defer { lock.unlock() }
            guard expired, !ended else {
                standingBy = false
                return false
            }
            // An expiry as the reader resumed finds the reading going on: wait again.
            if paused {
                standingBy = false
                paused = false
                timerArmed = false
                return true
            }
        }
    }
}
