/// Something the store noticed and handled without failing the operation: a damaged
/// file repaired, a write cut short by a killed process discarded, and the like.
public struct SuiteDiagnostic: Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        /// A damaged suite file was repaired; `path` names the damaged copy kept aside.
        case repairedDamage
        /// A record cut short by a process that died while writing was discarded. No
        /// write that had returned was lost.
        case discardedTornWrite
        /// A process died inside a commit; the next writer finished the cleanup.
        case recoveredInterruptedCommit
        /// The suite's data file disappeared while its lock file remained.
        case dataFileMissing
        /// A compaction failed (for example on a full disk); the journal keeps growing
        /// and compaction is tried again later. Nothing stored was affected.
        case compactionFailed
        /// A read could not refresh from the file and answered from the last state read.
        case refreshFailed
        /// A stored value was not valid for its key's type and was treated as absent.
        case invalidStoredValue
        /// A default given to `register(defaults:)` was left out: its key or value is
        /// one a write would refuse (an empty key, NaN, nesting too deep, too large).
        case refusedDefault
        /// The shared header in the lock file was set up again from the data file,
        /// because something outside this library wrote implausible values into it
        /// or cut the lock file short. Nothing stored was affected.
        case rebuiltSharedHeader
        /// The directory of an observed suite was removed: its observers hear nothing
        /// until a directory is created at the same path, where the suite is then
        /// observed (reported again when that happens).
        case directoryReplaced
        /// The kernel's queue of change events overflowed, so events were lost; the
        /// suite caught up from its file, and observers received every change still
        /// in its journal (net changes beyond).
        case changeEventsLost
        /// The process's watch for changes ended (code of the process closed the
        /// descriptor of its inotify instance and gave the number to another file),
        /// and the suite's directory could not be watched again through a new one:
        /// its observers hear of no more changes from other processes (each gets an
        /// `.ioFailure` error as well). Watched again, a suite reports
        /// `changeEventsLost` instead, and catches up.
        case changeWatchingEnded
    }

    public var kind: Kind
    public var suite: String
    /// The suite's directory.
    public var directory: String
    /// A file the diagnostic concerns, such as the damaged copy moved aside.
    public var path: String?
    public var message: String

    /// Creates a diagnostic. The domain layers use it to report their own findings.
    public init(kind: Kind, suite: String, directory: String, path: String? = nil, message: String) {
        self.kind = kind
        self.suite = suite
        self.directory = directory
        self.path = path
        self.message = message
    }

    public var description: String { "suite \(suite): \(message)" }
}

/// Where diagnostics go: to the handlers added with `observe(_:)`, and to standard
/// error unless `printsToStandardError` is turned off.
public enum SuiteDiagnostics {
    private struct Registry {
        var handlers: [UInt64: @Sendable (SuiteDiagnostic) -> Void] = [:]
        var nextToken: UInt64 = 0
        var printsToStandardError = true
    }

    private static let registry = Locked(Registry())

    /// Calls `handler` for every diagnostic of every suite in this process until the
    /// returned token is cancelled or released.
    public static func observe(_ handler: @escaping @Sendable (SuiteDiagnostic) -> Void) -> SuiteCancellable {
        let token = registry.withLock { registry in
            registry.nextToken += 1
            registry.handlers[registry.nextToken] = handler
            return registry.nextToken
        }
        return SuiteCancellable {
            _ = registry.withLock { $0.handlers.removeValue(forKey: token) }
        }
    }

    /// Whether diagnostics are also printed to standard error (the default).
    public static var printsToStandardError: Bool {
        get { registry.withLock { $0.printsToStandardError } }
        set { registry.withLock { $0.printsToStandardError = newValue } }
    }

    /// Delivers a diagnostic to every handler, synchronously.
    @_spi(Tools) public static func report(_ diagnostic: SuiteDiagnostic) {
        let (handlers, prints) = registry.withLock { (Array($0.handlers.values), $0.printsToStandardError) }
        if prints {
            let line = "suite-defaults: \(diagnostic.kind.rawValue): \(diagnostic)\n"
            StandardError.write(line)
        }
        for handler in handlers { handler(diagnostic) }
    }
}
