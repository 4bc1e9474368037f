import Foundation
import SuiteSync
import Testing
import TestSupport

/// The bytes of a text, for keys and values.
func bytes(_ text: String) -> Data { Data(text.utf8) }

/// Why a test's wait ended without its event.
struct DeadlinePassed: Error, CustomStringConvertible {
    let what: String
    var description: String { "no \(what) within the deadline" }
}

/// Runs `body`, cancelling it and throwing `DeadlinePassed` if it has not finished by the
/// deadline: every wait in these tests has one.
func within<T: Sendable>(_ timeout: Duration, _ what: String,
                         _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else { throw DeadlinePassed(what: what) }
        return value
    }
}

/// The `EtcdError` that `body` throws; fails the test when it throws none or another error.
func etcdError(_ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) async -> EtcdError? {
    do {
        try await body()
        Issue.record("no error was thrown", sourceLocation: sourceLocation)
    } catch let error as EtcdError {
        return error
    } catch {
        Issue.record("\(error) is not an EtcdError", sourceLocation: sourceLocation)
    }
    return nil
}

/// Collects the events of `watch` until `count` have come; throws its error, or
/// `DeadlinePassed` at the deadline.
func events(of watch: EtcdWatch, count: Int, within timeout: Duration = .seconds(30)) async throws -> [EtcdWatchEvent] {
    try await within(timeout, "\(count) events") {
        var collected: [EtcdWatchEvent] = []
        for try await batch in watch {
            collected += batch.events
            if collected.count >= count { break }
        }
        return collected
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test only where `etcd` is installed, naming the package that has it.
    static var needsEtcd: Self { .enabled(if: EtcdCluster.executable != nil, Comment(rawValue: EtcdCluster.missingMessage)) }
}
