/// What to observe in a suite, described as a value and started later, in any
/// number of suites.
///
/// ```swift
/// let observation = SuiteObservation.keys(.unitSystem, .workouts).including(currentValues: true)
/// let token = try observation.start(in: suite, onError: { error in
///     log("not watching: \(error)")
/// }, onChange: { change in
///     redraw(change)
/// })
/// ```
///
/// `onError` receives what keeps changes from arriving: a change that could not
/// be read (the file became unreadable, say), the suite's directory removed, or a
/// directory made again at its path in which the suite cannot be opened. Each is
/// also reported as a `SuiteDiagnostic`. A started observation goes on after an
/// error, and delivers again once the cause is gone (a readable file, a directory
/// made again); cancel it to stop. A sequence from `changes(in:)` ends instead:
/// the loop throws the error.
public struct SuiteObservation: Sendable {
    /// The keys, normalized; nil for every key.
    let keyNames: Set<String>?
    let includesCurrentValues: Bool
    let delivery: Delivery

    /// Which thread runs an observation's `onChange` and `onError`.
    public enum Delivery: Sendable {
        /// A private serial queue of the suite (the default): calls one at a time,
        /// in commit order, and free to wait for anything. A change from another
        /// process is delivered by the thread that read it, which pauses its reading
        /// meanwhile, when the queue is idle: that saves the wake-up of a second
        /// thread. A callback that runs past 5 ms has the
        /// reading taken over by another thread, so a slow callback holds back the
        /// observers of the other suites of the process for at most that long, and
        /// those of its own suite until it returns. (A process that observes only
        /// this suite has no other to hold back, and times nothing.)
        case suiteQueue
        /// The process's change-watching thread, when it can be: the thread that
        /// reads the inotify events reads the change and calls the observers at
        /// once, without pausing its reading (which saves the pause's timer, 1–2
        /// µs, when the process observes other suites too). It does so only while the suite's
        /// queue is idle, every observation of the suite in this process asked for
        /// it, and reading the change needs no more than a short wait (for a commit
        /// in progress to be published, or for a lock); otherwise the change goes
        /// the default way. Either way calls stay one at a time and in
        /// commit order. A callback must be short and must never wait for anything,
        /// since while it runs no observed suite of the process hears of changes: no
        /// locks, I/O or other threads, and no reads or writes of a suite (a read may
        /// wait for a lock). Cancelling an observation from it is fine.
        case watcherThread
    }

    init(keyNames: [String]?, includesCurrentValues: Bool = false, delivery: Delivery = .suiteQueue) {
        self.keyNames = keyNames.map { Set($0.map(Validation.normalized)) }
        self.includesCurrentValues = includesCurrentValues
        self.delivery = delivery
    }

    private init(keySet: Set<String>?, includesCurrentValues: Bool, delivery: Delivery) {
        keyNames = keySet
        self.includesCurrentValues = includesCurrentValues
        self.delivery = delivery
    }

    /// Every key of the suite.
    public static let allKeys = SuiteObservation(keyNames: nil)

    /// The keys with these names.
    public static func keys(named names: [String]) -> SuiteObservation {
        SuiteObservation(keyNames: names)
    }

    /// These typed keys.
    public static func keys<each Value>(_ keys: repeat SuiteKey<each Value>) -> SuiteObservation {
        var names: [String] = []
        for key in repeat each keys { names.append(key.name) }
        return SuiteObservation(keyNames: names)
    }

    /// The same observation, delivering the current values first (as changes of
    /// kind `.initialValue` from nil) when `currentValues` is true.
    public func including(currentValues: Bool = true) -> SuiteObservation {
        SuiteObservation(keySet: keyNames, includesCurrentValues: currentValues, delivery: delivery)
    }

    /// The same observation, with its callbacks run where `delivery` says.
    public func delivered(on delivery: Delivery) -> SuiteObservation {
        SuiteObservation(keySet: keyNames, includesCurrentValues: includesCurrentValues, delivery: delivery)
    }

    /// Starts the observation in `suite`: `onChange` receives every change from any
    /// process in commit order, and `onError` what keeps changes from arriving, one
    /// call at a time, on a private serial queue of the suite (or as `delivery`
    /// says), until the token is cancelled or released.
    ///
    /// - Throws: `SuiteError` when the directory cannot be watched (inotify limits), or
    ///   `.ioFailure` when no thread can be started to serve the observation.
    public func start(
        in suite: Suite, onError: (@Sendable (SuiteError) -> Void)? = nil,
        onChange: @escaping @Sendable (SuiteChange) -> Void
    ) throws -> SuiteCancellable {
        try ObserverHub.of(suite.lease).add(
            ObserverSink(keys: keyNames, onWatcherThread: delivery == .watcherThread, onError: onError, onChange: onChange),
            initialValues: includesCurrentValues ? .initialValue : nil, lockTimeout: suite.options.lockTimeout)
    }

    /// The observation in `suite` as an asynchronous sequence, which ends when the
    /// loop ends, its task is cancelled, or an error comes (the loop throws it).
    /// (The sequence only buffers what arrives, which never waits, so it is fed on the
    /// change-watching thread when it can be: see `Delivery.watcherThread`.)
    public func changes(in suite: Suite) throws -> SuiteUpdates<SuiteChange> {
        try SuiteUpdates { yield, fail in
            try delivered(on: .watcherThread).start(in: suite, onError: fail, onChange: yield)
        }
    }
}
