import Dispatch
import Foundation
import Glibc
import SuiteDefaults

/// A worker process: `suite-stress worker ROLE --dir DIR [--name value ...]`.
///
/// Workers report on standard output, one line per event, each written with one
/// write(2). They read start signals from standard input, and exit when it closes
/// (their parent went away).
struct Worker: Sendable {
    let role: String
    let values: [String: String]
    let directory: URL
    /// Lines from standard input, one signal each.
    let input = DispatchSemaphore(value: 0)
    private let lines = LineQueue()

    init(_ arguments: [String]) {
        guard let role = arguments.first else { Worker.fail("no role") }
        var values: [String: String] = [:]
        var index = 1
        while index + 1 < arguments.count, arguments[index].hasPrefix("--") {
            values[String(arguments[index].dropFirst(2))] = arguments[index + 1]
            index += 2
        }
        guard let directory = values["dir"] else { Worker.fail("no --dir") }
        self.role = role
        self.values = values
        self.directory = URL(fileURLWithPath: directory, isDirectory: true)
    }

    static func say(_ line: String) {
        let text = line + "\n"
        _ = text.withCString { write(STDOUT_FILENO, $0, strlen($0)) }
    }

    static func fail(_ message: String) -> Never {
        let text = "suite-stress worker: \(message)\n"
        _ = text.withCString { write(STDERR_FILENO, $0, strlen($0)) }
        exit(3)
    }

    /// The suite the role works on (--suite).
    var suiteName: String { string("suite") }

    func string(_ name: String) -> String {
        guard let value = values[name] else { Worker.fail("missing --\(name)") }
        return value
    }

    func number(_ name: String, default fallback: Int? = nil) -> Int {
        guard let value = values[name].flatMap(Int.init) ?? fallback else { Worker.fail("missing --\(name)") }
        return value
    }

    /// Reads standard input in the background: each line is queued, and the end of
    /// input (the parent went away) ends the worker.
    func listen() {
        let lines = self.lines
        Thread {
            while let line = readLine() { lines.push(line) }
            _exit(0)
        }.start()
    }

    /// The next line of standard input.
    func nextLine() -> String { lines.pop() }

    /// For each "go SUITE" line on standard input, runs `trial` with the suite's name
    /// and says what it returns; any other line ends the trials.
    func forEachTrial(_ trial: (String) -> String) {
        Worker.say("ready")
        while true {
            let command = nextLine()
            guard command.hasPrefix("go ") else { return }
            let name = String(command.dropFirst(3))
            Worker.say(trial(name))
        }
    }

    /// --value-bytes B: write-keys stores strings of B bytes instead of integers.
    var valueBytes: Int { number("value-bytes", default: 0) }

    /// `value` as a string of `valueBytes` bytes that starts with the number.
    func padded(_ value: Int) -> String {
        "\(value):".padding(toLength: valueBytes, withPad: "v", startingAt: 0)
    }

    /// Whether a line of standard input is waiting (a stop signal for loops).
    var hasInput: Bool { lines.hasLine }

    func open(_ name: String, compactionSlack: Int? = nil) -> Suite {
        var options = Suite.Options()
        if let slack = compactionSlack ?? values["compaction-slack"].flatMap(Int.init) { options.compactionSlack = slack }
        do {
            return try Suite(named: name, directory: directory, options: options)
        } catch {
            Worker.fail("cannot open \(name): \(error)")
        }
    }

    static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    func run() -> Never {
        listen()
        // A full disk, as the file size limit makes one (disk-full scenario).
        if let limit = values["file-size-limit"].flatMap(Int.init) {
            signal(SIGXFSZ, SIG_IGN)
            var bound = rlimit(rlim_cur: rlim_t(limit), rlim_max: rlim_t(limit))
            guard setrlimit(Int32(RLIMIT_FSIZE.rawValue), &bound) == 0 else { Worker.fail("setrlimit failed") }
        }
        SuiteDiagnostics.printsToStandardError = false
        let token = SuiteDiagnostics.observe { Worker.say("diagnostic \($0.kind.rawValue)") }
        if role.hasPrefix("fd-") {
            runFoundation()
        } else {
            runOurs()
        }
        withExtendedLifetime(token) {}
        exit(0)
    }
}

/// Lines handed from the reading thread to the worker, in order.
final class LineQueue: @unchecked Sendable {
    private let condition = NSCondition()
    private var queued: [String] = []

    func push(_ line: String) {
        condition.lock()
        queued.append(line)
        condition.signal()
        condition.unlock()
    }

    var hasLine: Bool {
        condition.lock()
        defer { condition.unlock() }
        return !queued.isEmpty
    }

    func pop() -> String {
        condition.lock()
        defer { condition.unlock() }
        while queued.isEmpty { condition.wait() }
        return queued.removeFirst()
    }
}
