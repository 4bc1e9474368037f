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
///     64 u32 lock releases (a futex word)  68 u32 processes waiting for the lock
///     72 u32 when a counted waiter last looked (ms of the monotonic clock, wrapping)
///
/// Only a process holding the exclusive `flock` writes the fields up to 63. But in
/// group mode any member of the group can write the file, so nothing read from it
/// is trusted: `read()` checks every field against the limits of the format.
struct SharedHeader {
    static let size = MappedPage.size
    static let magic: UInt64 = 0x314B_4C45_5449_5553  // the bytes "SUITELK1"

    /// Keeps the mapping alive; `base` is its address, kept here too so that the
    /// freshness check reaches the page without going through the object.
    let page: MappedPage
    private let base: UnsafeMutableRawPointer

    init(page: MappedPage) {
        self.page = page
        base = page.base
    }

    @inline(__always)
    private func word(_ offset: Int) -> SharedWord64 { SharedWord64(base + offset) }

    private func load(_ offset: Int) -> UInt64 { word(offset).loadRelaxed() }
    private func store(_ value: UInt64, _ offset: Int) { word(offset).storeRelaxed(value) }

    var isWritable: Bool { page.isWritable }

    /// The generation, with acquire ordering: what was published before it is visible.
    var generation: UInt64 { word(16).loadAcquiring() }

    /// Publishes a generation, with release ordering: every field written before it
    /// is visible to a process that loads it. An odd one marks a change begun: the
    /// fence keeps the change's stores from being seen before it by a reader that
    /// reads between changes (`readBetweenChanges()`).
    func publish(generation: UInt64) {
        word(16).storeReleasing(generation)
        if generation & 1 == 1 { SharedMemoryFence.release() }
    }

    func setCommitted(length: Int, dataFileID: UInt64) {
        store(UInt64(length), 24)
        store(dataFileID, 32)
    }

    func setLastSequence(_ sequence: UInt64) { store(sequence, 40) }

    var committerPID: Int32 {
        get { Int32(truncatingIfNeeded: load(8) >> 32) }
        nonmutating set { store(UInt64(UInt32(bitPattern: newValue)) << 32 | 1, 8) }
    }

    /// Whether the header was set up since this boot, by this layout.
    var isInitialized: Bool {
        load(0) == Self.magic && load(8) & 0xFFFF_FFFF == 1
            && load(48) == BootID.current.0 && load(56) == BootID.current.1
    }

    /// What the header says is committed, read once.
    struct Snapshot: Equatable {
        var generation: UInt64
        var committedLength: Int
        var dataFileID: UInt64
        var lastSequence: UInt64

        var isCommitInProgress: Bool { generation & 1 == 1 }
    }

    enum Reading {
        case valid(Snapshot)
        /// Not set up since this boot (or by this layout): rebuilt from the data file.
        case uninitialized
        /// Set up, but a field is out of bounds: written by something that is not
        /// this library. Rebuilt from the data file, with a diagnostic.
        case implausible(String)
    }

    /// Reads every field once and checks it.
    func read() -> Reading {
        guard isInitialized else { return .uninitialized }
        let generation = self.generation
        let length = load(24), fileID = load(32), sequence = load(40)
        if sequence > FormatLimits.maximumSequence {
            return .implausible("last sequence number \(sequence) is beyond the limit \(FormatLimits.maximumSequence)")
        }
        if fileID == 0 && length != 0 {
            return .implausible("committed length \(length) with no data file")
        }
        if fileID != 0 && (length < UInt64(DataFileHeader.size) || length > UInt64(FormatLimits.maximumFileSize)) {
            return .implausible("committed length \(length) is outside \(DataFileHeader.size) to \(FormatLimits.maximumFileSize)")
        }
        return .valid(Snapshot(generation: generation, committedLength: Int(length), dataFileID: fileID, lastSequence: sequence))
    }

    /// What is committed, read without the file lock, while a writer may be changing
    /// it: nil while a change is in progress, or when one began while the fields were
    /// read (the generation, loaded before and after them, differs), as well as when
    /// `read()` finds nothing valid.
    func readBetweenChanges() -> Snapshot? {
        let before = generation
        guard before & 1 == 0, case .valid(let snapshot) = read(), snapshot.generation == before else { return nil }
        SharedMemoryFence.acquire()
        return word(16).loadRelaxed() == before ? snapshot : nil
    }

    /// The last sequence number as written, whether or not the header is trusted,
    /// bounded as a commit bounds the header's number
    /// (`FormatLimits.sequenceToNumberAfter(fromHeader:)`).
    var recordedLastSequence: UInt64 { FormatLimits.sequenceToNumberAfter(fromHeader: load(40)) }

    /// Sets up every field from what a full scan found. The magic comes last, so a
    /// process killed half-way leaves a header that is still seen as uninitialized.
    func initialize(dataFileID: UInt64, committedLength: Int, lastSequence: UInt64) {
        store(0, 0)
        setCommitted(length: committedLength, dataFileID: dataFileID)
        setLastSequence(lastSequence)
        committerPID = ProcessIdentity.id
        store(BootID.current.0, 48)
        store(BootID.current.1, 56)
        // No waiter from before counts any more: one killed while counted (or from
        // before a reboot) would otherwise make every release a wake-up call for good.
        // A live waiter's own decrement then stops at 0, and it is woken by its sleep's end.
        waiterCount.store(0)
        // A fresh random even generation, never 0 (a page zeroed under a reader must
        // not look fresh), so that no cached generation from before matches it by chance.
        publish(generation: UInt64.random(in: 1...(1 << 62)) << 1)
        store(Self.magic, 0)
    }

    // MARK: Waiting for the lock

    /// Bumped by a process releasing the lock while others wait; they wait on it (a
    /// futex word).
    var releaseCount: SharedWord32 { SharedWord32(base + 64) }
    /// How many processes wait for the lock, so that a release without waiters
    /// costs no system call. Only a hint: a wrong count costs a wake-up or a delay.
    var waiterCount: SharedWord32 { SharedWord32(base + 68) }
    /// When a counted waiter last looked at the lock (`MonotonicClock.wrappingMilliseconds`):
    /// what tells a count of live waiters from one that a killed waiter left behind.
    var waiterLastLook: SharedWord32 { SharedWord32(base + 72) }
}
