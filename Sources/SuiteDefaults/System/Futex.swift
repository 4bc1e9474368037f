import CSuiteDefaults
import Glibc

/// Waiting on, and waking, a 32-bit word in memory shared between processes.
enum SharedFutex {
    enum Outcome { case woken, changed, timedOut, unsupported }

    /// Waits while `word` holds `expected`, for at most `timeout`.
    static func wait(on word: UnsafePointer<UInt32>, whileEqualTo expected: UInt32, timeout: Duration) -> Outcome {
        let nanoseconds = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
        switch sd_futex_wait_shared(word, expected, max(0, nanoseconds)) {
        case 0, EINTR: return .woken
        case EAGAIN: return .changed
        case ETIMEDOUT: return .timedOut
        default: return .unsupported
        }
    }

    static func wake(_ word: UnsafeMutablePointer<UInt32>, count: Int32 = 1) {
        sd_futex_wake_shared(word, count)
    }
}

/// `CLOCK_MONOTONIC`, through the vDSO: deadlines for waits.
enum MonotonicClock {
    static func now() -> Duration { .nanoseconds(Int64(bitPattern: nanoseconds())) }

    /// The same as a plain number, for paths where `Duration`'s arithmetic shows.
    static func nanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}

/// Wall-clock time for record timestamps.
enum WallClock {
    static func nanosecondsSince1970() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}
