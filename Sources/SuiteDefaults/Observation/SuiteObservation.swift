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

    init(keyNames: [String]?, includesCurrentValues: Bool = false) {
        self.keyNames = keyNames.map { Set($0.map(Validation.normalized)) }
        self.includesCurrentValues = includesCurrentValues
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
        SuiteObservation(keyNames: keyNames.map(Array.init), includesCurrentValues: currentValues)
    }

    /// Starts the observation in `suite`: `onChange` receives every change from any
    /// process in commit order, and `onError` what keeps changes from arriving, on a
    /// private serial queue of the suite, until the token is cancelled or released.
    ///
    /// - Throws: `SuiteError` when the directory cannot be watched (inotify limits).
    public func start(
        in suite: Suite, onError: (@Sendable (SuiteError) -> Void)? = nil,
        onChange: @escaping @Sendable (SuiteChange) -> Void
    ) throws -> SuiteCancellable {
        try ObserverHub.of(suite.store).add(
            ObserverSink(keys: keyNames, onError: onError, onChange: onChange),
            initialValues: includesCurrentValues ? .initialValue : nil, lockTimeout: suite.options.lockTimeout)
    }

    /// The observation in `suite` as an asynchronous sequence, which ends when the
    /// loop ends, its task is cancelled, or an error comes (the loop throws it).
    public func changes(in suite: Suite) throws -> SuiteUpdates<SuiteChange> {
        try SuiteUpdates { yield, fail in
            try start(in: suite, onError: fail, onChange: yield)
        }
    }
}
