import ChildProcess
import Foundation
import Glibc
import SuiteDefaults
import ToolSupport

/// The surroundings of one benchmark run: a directory of its own, suites and
/// UserDefaults suites filled for the rows, and worker processes.
struct Bench: Sendable {
    let options: BenchOptions
    let root: URL
    private static let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        ?? CommandLine.arguments[0]

    init(options: BenchOptions, root: URL) {
        self.options = options
        self.root = root
    }

    /// A suite of `keys` keys ("key.0" ... with short strings), in a directory of its own.
    func suite(_ name: String, keys: Int, options suiteOptions: Suite.Options = .init()) throws -> Suite {
        let suite = try Suite(named: name, directory: root, options: suiteOptions)
        try suite.update { tx in
            for index in 0..<keys { try tx.set("value \(index)", forKey: "key.\(index)") }
        }
        return suite
    }

    /// A UserDefaults suite with the same keys. UserDefaults keeps it in
    /// $XDG_CONFIG_HOME, which main pointed at this run's directory.
    func foundationSuite(_ name: String, keys: Int) -> UserDefaults {
        let defaults = UserDefaults(suiteName: name)!
        for index in 0..<keys { defaults.set("value \(index)", forKey: "key.\(index)") }
        defaults.synchronize()
        return defaults
    }

    /// Starts `suite-bench worker ROLE --dir DIR ...`.
    func worker(_ role: String, _ values: [String: String] = [:]) throws -> ChildProcess {
        var arguments = ["worker", role, "--dir", root.path]
        for (key, value) in values.sorted(by: { $0.key < $1.key }) { arguments += ["--\(key)", value] }
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_CONFIG_HOME"] = root.path
        return try ChildProcess(executable: Self.executable, arguments: arguments, environment: environment)
    }

    /// Keys and values made in advance, so that building them is not measured.
    static let keys = (0..<100).map { "key.\($0)" }
    static let values = (0..<64).map { "value \($0) of sixty-four" }
    /// The value for write `index`: each key gets a value different from the last.
    static func write(_ index: Int) -> (key: String, value: String) {
        (keys[index % keys.count], values[(index / keys.count) % values.count])
    }
    /// How far a turn's warm-up writes are from its timed ones: half the cycle of
    /// values, so that a warm-up write never leaves a key with the value the next
    /// timed write of it brings (which would make that write change nothing).
    static let warmUpShift = keys.count * values.count / 2
}

extension ChildProcess {
    /// Waits for a line starting with `prefix`, or fails the run.
    func expect(_ prefix: String, within timeout: Duration = .seconds(300)) throws -> String {
        guard let line = waitForLine(timeout: timeout, where: { $0.hasPrefix(prefix) }) else {
            throw ToolError(status: 1, message: "worker \(pid) did not report \(prefix): \(standardError.suffix(300))")
        }
        return line
    }
}
