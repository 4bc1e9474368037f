import Glibc

/// CLOCK_MONOTONIC in nanoseconds: one clock for every process of the machine, so one
/// process's timestamp can be compared with another's.
/// Inlinable: the benchmarks read it around operations that take microseconds.
@inlinable public func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// The CPU time of the whole process so far (every thread), in nanoseconds: what a
/// process costs the machine, beside the time it takes.
public func processCPUNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}
