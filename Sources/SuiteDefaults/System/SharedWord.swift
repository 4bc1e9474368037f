import CSuiteDefaults

// Atomic words in memory shared between processes: a `MAP_SHARED` page that every
// process using a suite maps. Swift's `Atomic` needs storage that Swift owns, so
// these reach the compiler's atomics (CSuiteDefaults' static inline functions) for
// a pointer into the mapping. Each is one pointer: made, used and dropped inline,
// it costs nothing beyond the load or store itself.

/// A 64-bit word in shared memory, at an 8-byte aligned address.
struct SharedWord64 {
    let address: UnsafeMutablePointer<UInt64>

    @inline(__always)
    init(_ address: UnsafeMutableRawPointer) {
        self.address = address.assumingMemoryBound(to: UInt64.self)
    }

    /// A load with acquire ordering: what was stored before a release store of the
    /// value loaded is visible after it.
    @inline(__always)
    func loadAcquiring() -> UInt64 { sd_atomic_load_acquire(address) }

    @inline(__always)
    func loadRelaxed() -> UInt64 { sd_atomic_load_relaxed(address) }

    /// A store with release ordering: every store before it is visible to a process
    /// that loads the value with acquire ordering.
    @inline(__always)
    func storeReleasing(_ value: UInt64) { sd_atomic_store_release(address, value) }

    @inline(__always)
    func storeRelaxed(_ value: UInt64) { sd_atomic_store_relaxed(address, value) }
}

/// A 32-bit word in shared memory, at a 4-byte aligned address: a counter, and a
/// futex word that processes wait on.
struct SharedWord32 {
    let address: UnsafeMutablePointer<UInt32>

    @inline(__always)
    init(_ address: UnsafeMutableRawPointer) {
        self.address = address.assumingMemoryBound(to: UInt32.self)
    }

    /// A load with acquire ordering.
    @inline(__always)
    func load() -> UInt32 { sd_atomic_load_u32(address) }

    /// A store with release ordering.
    @inline(__always)
    func store(_ value: UInt32) { sd_atomic_store_u32(address, value) }

    /// Adds `value` (wrapping), acquire-release.
    @inline(__always)
    func add(_ value: UInt32) { sd_atomic_add_u32(address, value) }

    /// Stores `desired` if the word holds `expected`; true when it did.
    @inline(__always)
    func compareExchange(expected: UInt32, desired: UInt32) -> Bool {
        sd_atomic_compare_exchange_u32(address, expected, desired)
    }

    /// Subtracts one, unless the word is 0: a count that another process set to 0
    /// under us (a page made again) must not wrap to 2^32 - 1.
    @inline(__always)
    func decrementToZero() { sd_atomic_decrement_to_zero_u32(address) }

    /// Waits while the word holds `expected`, at most `timeout` (a futex wait).
    func wait(whileEqualTo expected: UInt32, timeout: Duration) -> SharedFutex.Outcome {
        SharedFutex.wait(on: address, whileEqualTo: expected, timeout: timeout)
    }

    /// Wakes up to `count` processes waiting on the word.
    func wake(count: Int32 = 1) {
        SharedFutex.wake(address, count: count)
    }
}

/// The processor itself.
enum Processor {
    /// Tells the processor this is a busy-wait loop (x86 PAUSE, Arm YIELD).
    @inline(__always)
    static func relax() { sd_cpu_relax() }
}

/// Orderings between accesses to different shared words.
enum SharedMemoryFence {
    /// Stores after it are seen after every access before it.
    @inline(__always)
    static func release() { sd_atomic_fence_release() }

    /// Loads after it see at least what loads before it saw.
    @inline(__always)
    static func acquire() { sd_atomic_fence_acquire() }
}
