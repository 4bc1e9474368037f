import Glibc

/// `CLOCK_MONOTONIC`, through the vDSO: deadlines for waits.
enum MonotonicClock {
    /// Sleeps for `duration` (`nanosleep`; a signal may end it early).
    static func sleep(_ duration: Duration) {
        let nanoseconds = max(0, duration.wholeNanoseconds)
        var interval = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
        nanosleep(&interval, nil)
    }

    static func now() -> Duration { .nanoseconds(Int64(bitPattern: nanoseconds())) }

    /// Milliseconds, wrapping every 49 days: for ages far shorter, compared by
    /// wrapping subtraction, in a 32-bit word of the shared page.
    static func wrappingMilliseconds() -> UInt32 {
        UInt32(truncatingIfNeeded: nanoseconds() / 1_000_000)
    }

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

extension Duration {
    /// The duration in whole nanoseconds (what the system calls take), rounded down.
    var wholeNanoseconds: Int64 {
        components.seconds &* 1_000_000_000 &+ components.attoseconds / 1_000_000_000
    }
}
