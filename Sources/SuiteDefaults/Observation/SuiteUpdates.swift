/// An asynchronous sequence of what an observation delivers: the changes of a
/// suite (`Suite.changes(forKeys:includingCurrentValues:)`), or the values of one key
/// (`Suite.values(for:storingDefault:)`).
///
/// The observation lives as long as the sequence or an iterator of it: it ends when
/// the loop over it ends or its task is cancelled, and with the first error, which
/// the loop throws. Elements wait in an unbounded buffer until the loop takes them,
/// so none is dropped.
public struct SuiteUpdates<Element: Sendable>: AsyncSequence, Sendable {
    public typealias Failure = SuiteError

    private let stream: AsyncThrowingStream<Element, any Error>

    /// Starts an observation with `start`, which receives where elements go and where
    /// an error goes, and returns the observation's token.
    init(_ start: (_ yield: @escaping @Sendable (Element) -> Void,
                   _ fail: @escaping @Sendable (SuiteError) -> Void) throws -> SuiteCancellable) throws {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Element.self, bufferingPolicy: .unbounded)
        let token = try start({ continuation.yield($0) }, { continuation.finish(throwing: $0) })
        continuation.onTermination = { _ in token.cancel() }
        self.stream = stream
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: stream.makeAsyncIterator())
    }

    /// Iterates the elements, throwing the observation's error, if one comes.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<Element, any Error>.Iterator

        public mutating func next() async throws(SuiteError) -> Element? {
            do {
                return try await base.next()
            } catch {
                throw Self.suiteError(error)
            }
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(SuiteError) -> Element? {
            do {
                return try await base.next(isolation: actor)
            } catch {
                throw Self.suiteError(error)
            }
        }

        /// Only `SuiteError`s are put in the stream.
        private static func suiteError(_ error: any Error) -> SuiteError {
            error as? SuiteError ?? SuiteError(.ioFailure, message: "\(error)")
        }
    }
}
