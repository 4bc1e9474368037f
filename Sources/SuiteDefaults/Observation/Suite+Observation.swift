#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Suite {
    /// Calls `onChange` for every change to the suite, from any process, in commit
    /// order, until the returned token is cancelled or released.
    ///
    /// ```swift
    /// let token = try suite.observe(keys: ["units.system"]) { change in
    ///     print(change.key, change.oldValue as Any, "→", change.newValue as Any)
    /// }
    /// ```
    ///
    /// `onChange` and `onError` run on a private serial queue of the suite, one call
    /// at a time. Changes committed before this call are not delivered; with
    /// `includingCurrentValues`, the current values come first, as changes of kind
    /// `.initialValue` from nil. See `SuiteObservation` for what reaches `onError`.
    ///
    /// - Parameter keys: the keys to observe; nil for every key.
    /// - Throws: `SuiteError` when the directory cannot be watched (inotify limits).
    public func observe(
        keys: [String]? = nil, includingCurrentValues: Bool = false,
        onError: (@Sendable (SuiteError) -> Void)? = nil, onChange: @escaping @Sendable (SuiteChange) -> Void
    ) throws -> SuiteCancellable {
        try SuiteObservation(keyNames: keys, includesCurrentValues: includingCurrentValues)
            .start(in: self, onError: onError, onChange: onChange)
    }

    /// Observes typed keys: `suite.observe(.workouts, .unitSystem) { change in … }`;
    /// see `observe(keys:includingCurrentValues:onError:onChange:)`.
    public func observe<each Value>(
        _ keys: repeat SuiteKey<each Value>, includingCurrentValues: Bool = false,
        onError: (@Sendable (SuiteError) -> Void)? = nil, onChange: @escaping @Sendable (SuiteChange) -> Void
    ) throws -> SuiteCancellable {
        try SuiteObservation.keys(repeat each keys).including(currentValues: includingCurrentValues)
            .start(in: self, onError: onError, onChange: onChange)
    }

    /// The changes to the suite, from any process, in commit order, as an
    /// asynchronous sequence. Leaving the loop, or cancelling its task, ends the
    /// observation; so does an error, which the loop throws.
    ///
    /// ```swift
    /// for try await change in try suite.changes(forKeys: ["units.system"]) {
    ///     redraw(with: change.newValue)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - keys: the keys to observe; nil for every key.
    ///   - includingCurrentValues: deliver the current values first, as changes of
    ///     kind `.initialValue` from nil.
    /// - Throws: `SuiteError` when the directory cannot be watched (inotify limits).
    public func changes(forKeys keys: [String]? = nil, includingCurrentValues: Bool = false) throws -> SuiteUpdates<SuiteChange> {
        try SuiteObservation(keyNames: keys, includesCurrentValues: includingCurrentValues).changes(in: self)
    }

    /// The changes of typed keys as an asynchronous sequence; see
    /// `changes(forKeys:includingCurrentValues:)`.
    public func changes<each Value>(
        for keys: repeat SuiteKey<each Value>, includingCurrentValues: Bool = false
    ) throws -> SuiteUpdates<SuiteChange> {
        try SuiteObservation.keys(repeat each keys).including(currentValues: includingCurrentValues).changes(in: self)
    }
}
