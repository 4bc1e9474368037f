/// One wait for a suite's file lock, with a deadline. `flock` itself cannot wait with
/// one, so the lock is only ever asked for without waiting, and between attempts the
/// waiter pauses here, holding none of the store's locks, so that the other threads of
/// its process go on reading meanwhile.
///
/// It spins first, pausing between attempts for times that double from 1 µs: a holder
/// keeps the lock for microseconds, so most waits end there, and while nobody sleeps
/// a release costs no wake-up call (the pauses matter: `flock` calls in a tight loop
/// slow the holder's own). Then it counts itself a waiter in the shared page and
/// sleeps on the futex there, which a release bumps, at most 5 ms at a time: a holder
/// that died frees its lock but bumps nothing, and a process that may only read the
/// page cannot count itself.
struct LockWait {
    static let spinning = Duration.microseconds(100)
    static let longestSleep = Duration.milliseconds(5)

    /// Where the last attempt left off: the shared page and its release count then.
    struct Point {
        var page: MappedPage?
        var seen: UInt32
    }

    /// When the first pause began (the attempt before it costs no clock read).
    private var start: Duration?
    private let timeout: Duration?
    private var pause = Duration.microseconds(1)
    private var counted: MappedPage?

    init(timeout: Duration?) {
        self.timeout = timeout
    }

    /// Pauses before the next attempt; false when the deadline has passed.
    mutating func pause(after point: Point) -> Bool {
        let now = MonotonicClock.now()
        guard let start else {
            start = now
            SuiteFaultInjection.reach(.waitingForLock)
            return pause(after: point)
        }
        var remaining = Self.longestSleep
        if let timeout {
            let left = start + timeout - now
            guard left > .zero else { return false }
            remaining = min(remaining, left)
        }
        if now - start < Self.spinning {
            let resume = now + min(pause, remaining)
            while MonotonicClock.now() < resume { Processor.relax() }
            pause = min(pause * 2, .microseconds(32))
            return true
        }
        guard let page = point.page else {
            MonotonicClock.sleep(remaining)
            return true
        }
        // A waiter moved to another lock file (the old one replaced, or mapped again
        // after it was cut short) is counted where it now waits.
        if let counted, counted !== page { finish() }
        if counted == nil, page.isWritable, !page.wasCutShort {
            // Counted before the next attempt, so that a release after it wakes us.
            Self.waiterCount(page).add(1)
            counted = page
            return true
        }
        if Self.releaseCount(page).wait(whileEqualTo: point.seen, timeout: remaining) == .unsupported {
            MonotonicClock.sleep(remaining)
        }
        return true
    }

    /// Stops counting this waiter: once it holds the lock (so that its own release
    /// wakes nobody on its account), or when it gives up.
    mutating func finish() {
        if let counted, !counted.wasCutShort { Self.waiterCount(counted).decrementToZero() }
        counted = nil
    }

    private static func releaseCount(_ page: MappedPage) -> SharedWord32 {
        SharedHeader(page: page).releaseCount
    }

    private static func waiterCount(_ page: MappedPage) -> SharedWord32 {
        SharedHeader(page: page).waiterCount
    }
}
