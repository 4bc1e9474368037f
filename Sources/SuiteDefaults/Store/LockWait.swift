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
///
/// A waiter killed while counted would leave the count above 0 for good, and every
/// release a wake-up call. So a counted waiter notes the time at every look
/// (`SharedHeader.waiterLastLook`), and a release that finds a count nobody has
/// confirmed for `staleCountMilliseconds` sets it to 0; a live waiter that finds its
/// count gone (it was only slow to look) counts itself again.
struct LockWait {
    static let spinning = Duration.microseconds(100)
    static let longestSleep = Duration.milliseconds(5)
    /// How long without a look before a release takes a count for a leftover: many
    /// times `longestSleep`, so that a waiter the scheduler kept waiting is not taken
    /// for dead (which would cost it no more than sleeps without wake-ups until it
    /// looks again).
    static let staleCountMilliseconds: UInt32 = 100

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
            // Counted before the next attempt, so that a release after it wakes us; the
            // look noted first, so that a release that sees the count sees the look.
            SharedHeader(page: page).waiterLastLook.store(MonotonicClock.wrappingMilliseconds())
            Self.waiterCount(page).add(1)
            counted = page
            return true
        }
        if let counted, !counted.wasCutShort {
            let header = SharedHeader(page: counted)
            header.waiterLastLook.store(MonotonicClock.wrappingMilliseconds())
            if header.waiterCount.load() == 0 { header.waiterCount.add(1) }
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

    /// After a release of the lock that found waiters counted: wakes one, or, when no
    /// counted waiter has looked for `staleCountMilliseconds`, clears the count that a
    /// killed one left (the next release then costs no system call).
    static func wakeAWaiter(of header: SharedHeader) {
        let count = header.waiterCount.load()
        guard count != 0 else { return }
        let sinceLastLook = MonotonicClock.wrappingMilliseconds() &- header.waiterLastLook.load()
        if sinceLastLook > staleCountMilliseconds {
            _ = header.waiterCount.compareExchange(expected: count, desired: 0)
            return
        }
        header.releaseCount.add(1)
        header.releaseCount.wake()
    }

    private static func releaseCount(_ page: MappedPage) -> SharedWord32 {
        SharedHeader(page: page).releaseCount
    }

    private static func waiterCount(_ page: MappedPage) -> SharedWord32 {
        SharedHeader(page: page).waiterCount
    }
}
