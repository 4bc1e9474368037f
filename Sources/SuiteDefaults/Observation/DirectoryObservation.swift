#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Suite {
    /// Calls `onChange` for every change to every suite in a directory, including
    /// suites created after this call, until the returned token is cancelled or
    /// released. The contents of a suite created later arrive as changes from nil
    /// (of kind `.netChange` for what it held when it was found).
    ///
    /// `onError` receives what keeps a suite's changes from arriving, as for one
    /// suite (see `SuiteObservation`), and a suite found that cannot be observed.
    ///
    /// - Throws: `SuiteError` `.notFound` when the directory does not exist, or when
    ///   it cannot be watched; `.ioFailure` when no thread can be started to serve it.
    public static func observeSuites(
        in directory: URL? = nil, keys: [String]? = nil, includingCurrentValues: Bool = false,
        options: Options = Options(), onError: (@Sendable (SuiteError) -> Void)? = nil,
        onChange: @escaping @Sendable (SuiteChange) -> Void
    ) throws -> SuiteCancellable {
        let observation = try DirectoryObservation(
            directory: directory ?? defaultDirectory(), keys: keys.map { Set($0.map(Validation.normalized)) }, options: options,
            onError: onError, onChange: onChange)
        try observation.start(includingCurrentValues: includingCurrentValues)
        return SuiteCancellable { observation.cancel() }
    }

    /// The changes to every suite in a directory, including suites created later, as
    /// an asynchronous sequence, which ends with the first error (the loop throws it);
    /// see `observeSuites(in:keys:includingCurrentValues:options:onError:onChange:)`.
    public static func changesOfSuites(
        in directory: URL? = nil, keys: [String]? = nil, includingCurrentValues: Bool = false
    ) throws -> SuiteUpdates<SuiteChange> {
        try SuiteUpdates { yield, fail in
            try observeSuites(in: directory, keys: keys, includingCurrentValues: includingCurrentValues,
                              onError: fail, onChange: yield)
        }
    }
}

/// Observes every suite of a directory, adding suites as their files appear.
final class DirectoryObservation: Sendable {
    private let directory: URL
    private let keys: Set<String>?
    private let options: Suite.Options
    private let onError: (@Sendable (SuiteError) -> Void)?
    private let onChange: @Sendable (SuiteChange) -> Void
    private let handle: DirectoryHandle
    private struct Observed {
        var suites: [String: (suite: Suite, token: SuiteCancellable)] = [:]
        var listener: SuiteCancellable?
        var cancelled = false
    }
    private let observed = Locked(Observed())
    /// Where suites found by the watcher are opened, away from the watcher's thread.
    private let opening: SerialQueue

    init(directory: URL, keys: Set<String>?, options: Suite.Options, onError: (@Sendable (SuiteError) -> Void)?,
         onChange: @escaping @Sendable (SuiteChange) -> Void) throws {
        self.directory = URL(fileURLWithPath: PathNormalization.standardized(directory.filePath), isDirectory: true)
        self.keys = keys
        self.options = options
        self.onError = onError
        self.onChange = onChange
        guard let opening = SerialQueue(name: "suite-directory") else {
            throw SuiteError.threadNotStarted("a thread for the directory's observers", suite: nil, path: self.directory.filePath)
        }
        self.opening = opening
        do {
            handle = try DirectoryHandle.open(path: self.directory.filePath)
        } catch {
            throw SuiteError(error, suite: nil, doing: "watch the suite directory")
        }
    }

    func start(includingCurrentValues: Bool) throws {
        // Listen first, then list: a suite created in between is found either way.
        let listener = try ChangeWatcher.shared.listen(to: handle) { [weak self] name in
            guard let self else { return }
            opening.async {
                if let name {
                    self.observe(name, initialValues: .netChange)
                } else {
                    // Events were lost, creations among them: look at every suite again.
                    for name in (try? Suite.names(in: self.directory)) ?? [] { self.observe(name, initialValues: .netChange) }
                }
            }
        }
        observed.withLock { $0.listener = listener }
        for name in try Suite.names(in: directory) {
            observe(name, initialValues: includingCurrentValues ? .initialValue : nil)
        }
    }

    /// Observes one suite of the directory, unless it is observed already. A failure
    /// goes to `onError` on the opening queue, never under the lock: the handler may
    /// cancel the observation, which takes the lock.
    private func observe(_ name: String, initialValues: SuiteChange.Kind?) {
        let failure = observed.withLock { observed -> SuiteError? in
            guard !observed.cancelled, observed.suites[name] == nil, (try? Suite.validate(name: name)) != nil else { return nil }
            do {
                let suite = try Suite(named: name, directory: directory, options: options)
                let sink = ObserverSink(keys: keys, onError: onError, onChange: onChange)
                let token = try ObserverHub.of(suite.lease).add(sink, initialValues: initialValues, lockTimeout: options.lockTimeout)
                observed.suites[name] = (suite, token)
                return nil
            } catch {
                return SuiteError(error, suite: name, doing: "observe the suite")
            }
        }
        guard let failure else { return }
        SuiteDiagnostics.report(SuiteDiagnostic(kind: .refreshFailed, suite: name, directory: directory.filePath,
                                                message: "Could not observe the suite: \(failure)"))
        guard let onError else { return }
        opening.async { [self] in
            if !observed.withLock({ $0.cancelled }) { onError(failure) }
        }
    }

    func cancel() {
        let tokens = observed.withLock { observed -> [SuiteCancellable] in
            observed.cancelled = true
            defer {
                observed.suites = [:]
                observed.listener = nil
            }
            return observed.suites.values.map(\.token) + [observed.listener].compactMap { $0 }
        }
        tokens.forEach { $0.cancel() }
    }
}
