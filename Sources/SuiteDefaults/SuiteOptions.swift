extension Suite {
    /// How far a commit must get before the write returns.
    public enum Durability: Sendable, Equatable {
        /// The write is in the kernel's page cache when it returns: every process sees
        /// it, and it survives the crash of any process, but not a power loss.
        case standard
        /// The write has also reached the disk (`fdatasync`, and `fsync` of the
        /// directory where a file was replaced), so it survives a power loss too.
        case durable
    }

    /// Who may use the suite's files.
    public enum Sharing: Sendable, Equatable {
        /// Files `0600` in a `0700` directory, owned by the current user.
        case `private`
        /// Files `0660` in a `2770` directory (set-group-ID, so new files take the
        /// directory's group), for processes of different users in one group.
        case group
    }

    /// Settings for one `Suite` instance.
    public struct Options: Sendable {
        /// The durability of writes that do not name one. Default `.standard`.
        public var durability: Durability
        /// Who may use the files the suite creates. Default `.private`.
        public var sharing: Sharing
        /// The largest encoded value a write accepts, in bytes. Default 4 MiB.
        public var maximumValueSize: Int
        /// The largest a suite may grow (the encoded size of all its entries), in
        /// bytes. Default 16 MiB; at most 256 MiB (a larger value counts as 256 MiB),
        /// so that the journal stays within the 1 GiB a suite file may have.
        public var maximumSuiteSize: Int
        /// The journal is compacted when it exceeds both twice the live size and the
        /// live size plus this many bytes. Default 64 KiB.
        public var compactionSlack: Int
        /// How long an operation waits for another process to release the suite's
        /// lock before it gives up: writes then throw `SuiteError` `.lockTimeout`, and
        /// reads that need the lock (most read between commits without it) answer from
        /// the state read before, reporting a `refreshFailed` diagnostic (`reload()`
        /// throws). nil waits for as long as it takes.
        /// Default 2 seconds: a healthy holder keeps the lock for microseconds, so
        /// only a stopped or stuck process makes anyone wait that long.
        public var lockTimeout: Duration?
        /// How many bytes of replaced journal a compaction keeps, as `NAME.suite.h.*`
        /// files, for observers that fall behind: an observer up to this far behind
        /// still receives every commit one by one, never folded. 0 keeps none.
        /// Default 16 MiB (about 100,000 commits of a 100-byte value).
        public var changeHistorySize: Int

        /// Creates options; every argument has the documented default.
        public init(
            durability: Durability = .standard,
            sharing: Sharing = .private,
            maximumValueSize: Int = 4 << 20,
            maximumSuiteSize: Int = 16 << 20,
            compactionSlack: Int = 64 << 10,
            lockTimeout: Duration? = .seconds(2),
            changeHistorySize: Int = 16 << 20
        ) {
            self.durability = durability
            self.sharing = sharing
            self.maximumValueSize = maximumValueSize
            self.maximumSuiteSize = maximumSuiteSize
            self.compactionSlack = compactionSlack
            self.lockTimeout = lockTimeout
            self.changeHistorySize = changeHistorySize
        }

        /// `maximumSuiteSize` within its cap.
        var effectiveMaximumSuiteSize: Int { min(maximumSuiteSize, FormatLimits.maximumFileSize / 4) }
    }
}
