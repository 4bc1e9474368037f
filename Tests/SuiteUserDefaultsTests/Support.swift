import ChildProcess
import Foundation
import SuiteDefaults
import SuiteUserDefaults
import Synchronization
import Testing
import TestSupport

/// A `SuiteUserDefaults` on a fresh suite in a temporary directory, and what its
/// failed writes reported.
final class Fixture: Sendable {
    let directory = TemporaryDirectory("suite-user-defaults-test")
    let name: String
    private let failures = Shared<[SuiteError]>([])

    init(name: String = "group.com.example.fitness") {
        self.name = name
    }

    func suite() throws -> Suite { try Suite(named: name, directory: directory.url) }

    /// A new instance, whose failed writes are recorded in `reportedFailures`.
    func defaults() throws -> SuiteUserDefaults {
        let defaults = SuiteUserDefaults(suite: try suite())
        defaults.writeFailureHandler = { [failures] error in failures.value.withLock { $0.append(error) } }
        return defaults
    }

    var reportedFailures: [SuiteError] { failures.value.withLock { $0 } }

    /// This process's environment with the suites' directory set to the fixture's, for
    /// the programs it starts (which open the suite with `init?(suiteName:)`).
    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["SUITE_DEFAULTS_DIR"] = directory.path
        return environment
    }

    /// Runs `seed-port` to its end.
    func seedPort(_ arguments: [String]) throws -> ProgramRun {
        try run(program: "seed-port", arguments, environment: environment)
    }

    /// Starts `seed-port`, which the caller waits for (a ChildProcess is reaped at deinit anyway).
    func startSeedPort(_ arguments: [String]) throws -> ChildProcess {
        try ChildProcess(executable: Products.path("seed-port"), arguments: arguments, environment: environment)
    }
}

/// Counts `UserDefaults.didChangeNotification`s posted with one object, and lets a
/// test wait for a count with a deadline.
final class NotificationCounter: @unchecked Sendable {
    private let count = Shared(0)
    private let posted = DispatchSemaphore(value: 0)
    private var token: (any NSObjectProtocol)?

    init(object: SuiteUserDefaults) {
        token = NotificationCenter.default.addObserver(forName: UserDefaults.didChangeNotification, object: object, queue: nil) {
            [count, posted] _ in
            count.value.withLock { $0 += 1 }
            posted.signal()
        }
    }

    var value: Int { count.value.withLock { $0 } }

    /// Waits until `total` notifications have been posted; false at the deadline.
    func wait(untilCount total: Int, within timeout: TimeInterval = 60) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while value < total {
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 || posted.wait(timeout: .now() + remaining) == .timedOut { return value >= total }
        }
        return true
    }

    deinit {
        if let token { NotificationCenter.default.removeObserver(token) }
    }
}

/// A mutex that closures can capture.
final class Shared<Value: Sendable>: Sendable {
    let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
}
