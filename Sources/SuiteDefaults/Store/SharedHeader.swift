import CSuiteDefaults
import Glibc

/// The first page of a suite's lock file, mapped `MAP_SHARED` by every process that
/// uses the suite. It says what is committed, so that a reader learns whether its
/// cache is fresh from one memory load instead of a system call.
///
/// Layout (host byte order; the file never leaves the machine):
///
///     0  u64 magic "SUITELK1"      8  u32 layout (1)      12 u32 pid of the last committer
///     16 u64 generation            24 u64 committed length of the data file
///     32 u64 data file ID          40 u64 last sequence number
///     48 u64 boot ID, high half    56 u64 boot ID, low half
///
/// Only a process holding the exclusive `flock` writes it. `generation` changes on
/// every commit; it is odd while a commit is in progress, so a writer that died
/// mid-commit leaves an odd generation behind and the next writer repairs the file.
struct SharedHeader {
    static let size = 4096
    static let magic: UInt64 = 0x314B_4C45_5449_5553  // the bytes "SUITELK1"

    let base: UnsafeMutableRawPointer

    private func word(_ offset: Int) -> UnsafeMutablePointer<UInt64> {
        (base + offset).assumingMemoryBound(to: UInt64.self)
    }

    private func load(_ offset: Int) -> UInt64 { sd_atomic_load_relaxed(word(offset)) }
    private func store(_ value: UInt64, _ offset: Int) { sd_atomic_store_relaxed(word(offset), value) }

    /// The generation, with acquire ordering: what was published before it is visible.
    var generation: UInt64 { sd_atomic_load_acquire(word(16)) }

    /// Publishes a generation, with release ordering: every field written before it
    /// is visible to a process that loads it.
    func publish(generation: UInt64) { sd_atomic_store_release(word(16), generation) }

    var committedLength: Int {
        get { Int(clamping: load(24)) }
        nonmutating set { store(UInt64(newValue), 24) }
    }

    var dataFileID: UInt64 {
        get { load(32) }
        nonmutating set { store(newValue, 32) }
    }

    var lastSequence: UInt64 {
        get { load(40) }
        nonmutating set { store(newValue, 40) }
    }

    var committerPID: Int32 {
        get { Int32(truncatingIfNeeded: load(8) >> 32) }
        nonmutating set { store(UInt64(UInt32(bitPattern: newValue)) << 32 | 1, 8) }
    }

    /// Whether the header was set up since this boot, by this layout.
    var isValid: Bool {
        load(0) == Self.magic && load(8) & 0xFFFF_FFFF == 1
            && load(48) == BootID.current.0 && load(56) == BootID.current.1
    }

    /// Sets up every field from what a full scan found. The magic comes last, so a
    /// process killed half-way leaves a header that is still seen as invalid.
    func initialize(dataFileID: UInt64, committedLength: Int, lastSequence: UInt64) {
        store(0, 0)
        self.dataFileID = dataFileID
        self.committedLength = committedLength
        self.lastSequence = lastSequence
        committerPID = getpid()
        store(BootID.current.0, 48)
        store(BootID.current.1, 56)
        // A fresh random even generation, so that no cached generation from before
        // can match it by chance.
        publish(generation: UInt64.random(in: 0...(1 << 62)) & ~1)
        store(Self.magic, 0)
    }
}
