import Dispatch
import Foundation
import Glibc
import SuiteDefaults
import ToolSupport
import WorkerRoles

/// A worker process: `suite-stress worker ROLE --dir DIR [--name value ...]`.
///
/// Workers report on standard output, one line per event, each written with one
/// write(2). They read start signals from standard input, and exit when it closes
/// (their parent went away). A worker that cannot do its job exits with status 3.
struct Worker: Sendable {
    let role: String
    let commandLine: ParsedCommandLine
    let directory: URL
    /// Lines from standard input, one signal each.
    private let lines = LineQueue()

    static let syntax = CommandLineSyntax(
        synopsis: ["suite-stress worker ROLE --dir DIR --suite NAME [--name value ...]"],
        arguments: [CommandLineArgument("ROLE", help: """
            increment, write-keys, ack-loop, getter, setter, invariant-writer, invariant-reader
            (each also with fd-, on Foundation's UserDefaults), watch, fd-watch, open, fill,
            try-set, fork-increment, fuzz or sync-writer
            """)],
        options: RoleOptions.all + [
            .value("--value-bytes", "B", help: "write-keys: values are strings of B bytes"),
            .value("--hold-micros", "U", help: "ack-loop: each write keeps the lock U microseconds"),
            .value("--children", "N", help: "fork-increment: the children it forks"),
            .value("--seed", "S", help: "fuzz: the seed"),
            .value("--from", "I", help: "fuzz: the first input"),
            .value("--to", "I", help: "fuzz: the input after the last"),
            .value("--duration-ms", "MS", help: "fd-watch: how long to count notifications"),
            .value("--delivery", "watcher-thread", help: "watch: observe with delivery on the change watcher's thread"),
            .value("--shared", "S", help: "sync-writer: how many shared keys"),
            .value("--pause-micros", "U", help: "sync-writer: the pause between writes"),
        ]
    )

    init(_ arguments: [String]) {
        do throws(ToolError) {
            guard let role = arguments.first else { throw Worker.syntax.usageError("no role") }
            self.role = role
            commandLine = try Worker.syntax.parse(Array(arguments.dropFirst()))
            directory = URL(fileURLWithPath: try commandLine.required("--dir") { $0 }, isDirectory: true)
        } catch {
            error.exit()
        }
    }

    /// The suite the role works on (--suite).
    var suiteName: String { string("suite") }

    func string(_ name: String) -> String { required(name) { $0 } }

    func number(_ name: String, default fallback: Int? = nil) -> Int {
        guard let fallback, commandLine.value("--\(name)") == nil else { return required(name) { Int($0) } }
        return fallback
    }

    private func required<Value>(_ name: String, _ convert: (String) -> Value?) -> Value {
        do {
            return try commandLine.required("--\(name)", convert)
        } catch {
            error.exit()
        }
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
        Output.line("ready")
        while true {
            let command = nextLine()
            guard command.hasPrefix("go ") else { return }
            let name = String(command.dropFirst(3))
            Output.line(trial(name))
        }
    }

    /// Whether a line of standard input is waiting (a stop signal for loops).
    var hasInput: Bool { lines.hasLine }

    /// Says "ready" and waits for the start signal.
    func readyThenWaitForGo() {
        Output.line("ready")
        _ = nextLine()
    }

    /// The suite `name`, opened as the options say.
    func open(_ name: String) -> Suite {
        var options = Suite.Options()
        if let slack = commandLine.value("--compaction-slack").flatMap(Int.init) { options.compactionSlack = slack }
        do {
            return try Suite(named: name, directory: directory, options: options)
        } catch {
            ToolError(status: 3, message: "cannot open \(name): \(error)").exit()
        }
    }

    /// The store `name`: UserDefaults for the roles whose names start with "fd-", else
    /// the suite.
    func store(_ name: String) -> any PreferenceStore {
        role.hasPrefix("fd-") ? FoundationStore(suiteName: name, directory: directory) : open(name)
    }

    func run() -> Never {
        listen()
        // A full disk, as the file size limit makes one (disk-full scenario).
        if let limit = commandLine.value("--file-size-limit").flatMap(Int.init) {
            signal(SIGXFSZ, SIG_IGN)
            var bound = rlimit(rlim_cur: rlim_t(limit), rlim_max: rlim_t(limit))
            guard setrlimit(Int32(RLIMIT_FSIZE.rawValue), &bound) == 0 else { ToolError(status: 3, message: "setrlimit failed").exit() }
        }
        SuiteDiagnostics.printsToStandardError = false
        let token = SuiteDiagnostics.observe { Output.line("diagnostic \($0.kind.rawValue)") }
        runRole()
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
