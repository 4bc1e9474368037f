import ChildProcess
import Foundation
import Glibc
import SuiteDefaults
import ToolSupport

/// The surroundings of one scenario: a fresh directory of its own, and a way to
/// start this program's worker roles as real child processes.
struct StressRun: Sendable {
    let options: StressOptions
    /// A fresh directory for this run, removed at the end.
    let root: URL
    private static let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        ?? CommandLine.arguments[0]

    init(options: StressOptions) throws(ToolError) {
        self.options = options
        root = try makeTemporaryDirectory(prefix: "suite-stress", in: options.directory)
    }

    func removeFiles() {
        try? FileManager.default.removeItem(at: root)
    }

    func removeDirectory(_ directory: URL) {
        try? FileManager.default.removeItem(at: directory)
    }

    /// A new empty directory inside the run's directory.
    func freshDirectory(_ name: String) -> URL {
        let directory = root.appendingPathComponent(name, isDirectory: true)
        try? FileManager.default.removeItem(at: directory)
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// Starts `suite-stress worker ROLE --dir DIR --key value ...`. Foundation's
    /// UserDefaults keeps a suite in $XDG_CONFIG_HOME, so its workers get the
    /// directory there.
    func worker(_ role: String, in directory: URL, _ options: [String: String] = [:]) throws -> ChildProcess {
        var arguments = ["worker", role, "--dir", directory.path]
        for (key, value) in options.sorted(by: { $0.key < $1.key }) { arguments += ["--\(key)", value] }
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_CONFIG_HOME"] = directory.path
        return try ChildProcess(executable: Self.executable, arguments: arguments, environment: environment)
    }
}

extension StressRun {
    /// A scenario's run on this library, then, with `--against foundation`, the same
    /// run on Foundation's UserDefaults.
    func oursThenFoundation(_ once: (_ foundation: Bool) throws -> ScenarioResult) rethrows -> [ScenarioResult] {
        var results = [try once(false)]
        if options.againstFoundation { results.append(try once(true)) }
        return results
    }

    /// Starts workers, waits until all are ready, starts them at once ("go"), and waits
    /// for each to report "done"; adds their errors, and those that did not end
    /// cleanly, to `result`.
    func runTogether(_ workers: [ChildProcess], into result: inout ScenarioResult, within timeout: Duration = .seconds(3_600)) {
        for worker in workers where worker.line(startingWith: "ready") == nil { result.crashed += 1 }
        for worker in workers { worker.send("go\n") }
        for worker in workers {
            result.errors += ChildProcess.fields(worker.line(startingWith: "done", within: timeout))["errors"] ?? 0
            if !worker.endedCleanly() { result.crashed += 1 }
        }
    }
}

extension ChildProcess {
    /// Waits for a line starting with `prefix`; nil at the deadline or when output ends.
    func line(startingWith prefix: String, within timeout: Duration = .seconds(120)) -> String? {
        waitForLine(timeout: timeout) { $0.hasPrefix(prefix) }
    }

    /// The numbers in a line such as "done 10 errors 0", by name.
    static func fields(_ line: String?) -> [String: Int] {
        let words = (line ?? "").split(separator: " ").map(String.init)
        var fields: [String: Int] = [:]
        for index in stride(from: 0, to: words.count - 1, by: 1) {
            if let number = Int(words[index + 1]) { fields[words[index]] = number }
        }
        return fields
    }

    /// Whether the process ended on its own with status 0.
    func endedCleanly(within timeout: Duration = .seconds(300)) -> Bool {
        let ended = wait(timeout: timeout)
        if ended == nil { kill() }
        return ended == .exited(0)
    }
}
