import Foundation

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
    /// `onChange` runs on a private serial queue of the suite, one change at a time.
    /// Changes committed before this call are not delivered; with
    /// `includingCurrentValues`, the current values come first, as changes of kind
    /// `.initialValue` from nil.
    ///
    /// - Parameter keys: the keys to observe; nil for every key.
    /// - Throws: `SuiteError` when the directory cannot be watched (inotify limits).
    public func observe(
        keys: [String]? = nil, includingCurrentValues: Bool = false,
        onChange: @escaping @Sendable (SuiteChange) -> Void
    ) throws -> SuiteCancellable {
        try store.addObserver(keys: keys.map { Set($0.map(Validation.normalized)) },
                              initialValues: includingCurrentValues ? .initialValue : nil,
                              lockTimeout: options.lockTimeout, handler: onChange)
    }

    /// The changes to the suite, from any process, in commit order, as an
    /// asynchronous sequence. Leaving the loop, or cancelling its task, ends the
    /// observation.
    ///
    /// ```swift
    /// for await change in try suite.changes(forKeys: ["units.system"]) {
    ///     redraw(with: change.newValue)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - keys: the keys to observe; nil for every key.
    ///   - includingCurrentValues: deliver the current values first, as changes of
    ///     kind `.initialValue` from nil.
    /// - Throws: `SuiteError` when the directory cannot be watched (inotify limits).
    public func changes(forKeys keys: [String]? = nil, includingCurrentValues: Bool = false) throws -> SuiteChanges {
        try SuiteChanges { handler in
            try observe(keys: keys, includingCurrentValues: includingCurrentValues, onChange: handler)
        }
    }
}

/// An asynchronous sequence of changes; see `Suite.changes(forKeys:includingCurrentValues:)`.
///
/// The observation lives as long as the sequence or an iterator of it: it ends when
/// the loop over it ends, or its task is cancelled. Changes wait in an unbounded
/// buffer until the loop takes them, so none is dropped.
public struct SuiteChanges: AsyncSequence, Sendable {
    public typealias Element = SuiteChange
    public typealias Failure = Never

    private let stream: AsyncStream<SuiteChange>

    init(_ start: (@escaping @Sendable (SuiteChange) -> Void) throws -> SuiteCancellable) throws {
        let (stream, continuation) = AsyncStream.makeStream(of: SuiteChange.self, bufferingPolicy: .unbounded)
        let token = try start { change in continuation.yield(change) }
        continuation.onTermination = { _ in token.cancel() }
        self.stream = stream
    }

    public func makeAsyncIterator() -> AsyncStream<SuiteChange>.Iterator {
        stream.makeAsyncIterator()
    }
}
