import ChildProcess
import Foundation
import Testing

/// The executables this package builds, found beside the test binary.
public enum Products {
    public static let directory: URL = {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: executable).deletingLastPathComponent()
    }()

    public static func path(_ name: String) -> String {
        directory.appendingPathComponent(name).path
    }
}

/// Starts `suite-test-worker COMMAND --dir DIR --suite SUITE [--key value ...]`.
public func startWorker(
    _ command: String, in directory: TemporaryDirectory, suite: String, _ options: [String: String] = [:]
) throws -> ChildProcess {
    try startWorker(command, at: directory.url, suite: suite, options)
}

/// Starts the worker on a suite in `directory`, which the caller keeps and removes.
public func startWorker(_ command: String, at directory: URL, suite: String, _ options: [String: String] = [:]) throws -> ChildProcess {
    var arguments = [command, "--dir", directory.path, "--suite", suite]
    for (key, value) in options.sorted(by: { $0.key < $1.key }) { arguments += ["--\(key)", value] }
    return try ChildProcess(executable: Products.path("suite-test-worker"), arguments: arguments)
}

extension ChildProcess {
    /// Waits for a line starting with `prefix` and fails the test if none comes in time.
    @discardableResult
    public func expectLine(startingWith prefix: String, within timeout: Duration = .seconds(60),
                    sourceLocation: SourceLocation = #_sourceLocation) -> String? {
        let line = waitForLine(timeout: timeout) { $0.hasPrefix(prefix) }
        #expect(line != nil, "no line starting with \"\(prefix)\" from \(pid); output: \(lines.suffix(5)), errors: \(standardError)",
                sourceLocation: sourceLocation)
        return line
    }

    /// Waits for a normal exit with status 0.
    public func expectSuccess(within timeout: Duration = .seconds(120), sourceLocation: SourceLocation = #_sourceLocation) {
        let ended = wait(timeout: timeout)
        #expect(ended == .exited(0), "process \(pid) \(ended.map(\.description) ?? "did not end in time"); errors: \(standardError)",
                sourceLocation: sourceLocation)
        if ended == nil { kill() }
    }
}
