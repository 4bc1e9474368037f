/// One read of the keys "a", "b" and "version" (and "stop", a reader's signal to end).
public struct InvariantSnapshot: Sendable {
    public var a: Int?
    public var b: Int?
    public var version: Int
    /// Whether the key "stop" is set.
    public var stopRequested: Bool
    /// Whether the store's file, read as another program would, was not whole.
    public var fileUnreadable: Bool

    public init(a: Int?, b: Int?, version: Int, stopRequested: Bool, fileUnreadable: Bool = false) {
        self.a = a
        self.b = b
        self.version = version
        self.stopRequested = stopRequested
        self.fileUnreadable = fileUnreadable
    }

    /// Whether the read saw part of one transaction and part of another.
    public var isTorn: Bool {
        guard let a else { return b != nil || version != 0 }
        return a + (b ?? 0) != 0 || version != a
    }
}

/// What an invariant reader counted.
public struct InvariantReading: Sendable {
    public var reads = 0
    public var torn = 0
    /// Reads that saw an older version than the read before, or one below the floor.
    public var regressions = 0
    /// The version the last read saw.
    public var last = 0
    /// Reads whose store's file was not whole.
    public var unreadableFiles = 0
}
