// suite-watch: print the changes of suites as they happen, from any process.
import ChildProcess
import Dispatch
import Foundation
import Glibc
import Synchronization
@_spi(Tools) import SuiteDefaults
import ToolSupport

let syntax = CommandLineSyntax(
    synopsis: ["suite-watch [--dir DIR] SUITE [KEY ...]    watch one suite (every key, or those named)",
               "suite-watch [--dir DIR] --all             watch every suite in the directory, new ones too"],
    options: [
        .flag("--all", help: "watch every suite in the directory, new ones too"),
        .flag("--json", help: "one JSON object per line: time, suite, key, old, new, seq, pid, kind"),
        .flag("--initial", help: "print the current values first"),
        .value("--count", "N", help: "exit 0 after N changes"),
        .value("--timeout", "SECONDS", help: """
            exit 1 if the N changes have not come by then (without --count: stop, exit 0);
            counted from the start, while waiting for a suite's lock too
            """),
        .value("--dir", "DIR", help: """
            the suite directory (default: $SUITE_DEFAULTS_DIR,
            $XDG_CONFIG_HOME/suite-defaults or ~/.config/suite-defaults)
            """),
    ]
)

struct Settings {
    var directory: URL
    var suite: String?
    var keys: [String] = []
    var all: Bool
    var json: Bool
    var initial: Bool
    var count: Int?
    var timeout: Double?

    init(_ commandLine: ParsedCommandLine) throws(ToolError) {
        directory = commandLine.value("--dir").map { URL(fileURLWithPath: $0, isDirectory: true) } ?? Suite.defaultDirectory()
        all = commandLine.isSet("--all")
        json = commandLine.isSet("--json")
        initial = commandLine.isSet("--initial")
        count = try commandLine.value("--count", { Int($0).flatMap { $0 > 0 ? $0 : nil } }, else: "--count needs a positive number")
        timeout = try commandLine.value("--timeout", { Double($0).flatMap { $0 > 0 && $0.isFinite ? $0 : nil } },
                                        else: "--timeout needs a positive number of seconds")
        let positional = commandLine.arguments
        if all {
            guard positional.isEmpty else { throw syntax.usageError("--all watches every suite; name no suite or key with it") }
        } else {
            guard let first = positional.first else { throw syntax.usageError("name a suite to watch, or use --all") }
            do {
                try Suite.validate(name: first)
            } catch {
                throw syntax.usageError(ToolError(error).message)
            }
            suite = first
            keys = Array(positional.dropFirst())
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw syntax.usageError("the directory \(directory.path) does not exist")
        }
    }
}

/// A value as the human output shows it.
func shown(_ value: SuiteValue?) -> String { value?.description ?? "(absent)" }

func humanLine(_ change: SuiteChange) -> String {
    let time = String(ISO8601DateFormatter.string(from: change.timestamp, timeZone: .current,
                                                  formatOptions: [.withFullTime, .withFractionalSeconds]).prefix(12))
    switch change.kind {
    case .initialValue:
        return "\(time) \(change.suite) \(change.key): \(shown(change.newValue)) (current)"
    case .netChange:
        return "\(time) \(change.suite) \(change.key): \(shown(change.oldValue)) → \(shown(change.newValue)) (net change)"
    case .commit:
        return "\(time) \(change.suite) \(change.key): \(shown(change.oldValue)) → \(shown(change.newValue)) (pid \(change.pid), seq \(change.sequence))"
    }
}

let settings: Settings
do {
    settings = try Settings(syntax.parseCommandLine())
} catch {
    error.exit()
}
let directory = settings.directory

// Changes arrive on the suites' own queues; one lock keeps lines whole and counts exact.
let received = Mutex(0)
let handler: @Sendable (SuiteChange) -> Void = { change in
    received.withLock { count in
        Output.line(settings.json ? change.jsonText() : humanLine(change))
        guard change.kind != .initialValue else { return }
        count += 1
        if let wanted = settings.count, count >= wanted { exit(0) }
    }
}

// The timeout counts from now: opening a suite may wait for another process's lock.
if let timeout = settings.timeout {
    Thread {
        Thread.sleep(forTimeInterval: timeout)
        let count = received.withLock { $0 }
        if let wanted = settings.count {
            Output.errorLine("suite-watch: \(count) of \(wanted) changes came within \(timeout) s")
            exit(1)
        }
        exit(0)
    }.start()
}

// SIGINT and SIGTERM stop the watch cleanly.
let stop = Mutex<SuiteCancellable?>(nil)
TerminationSignals.handle { _ in
    stop.withLock { $0?.cancel() }
    exit(0)
}

// A watcher waits for a held lock for as long as it runs; the timeout ends it.
let options = Suite.Options(lockTimeout: nil)
let token: SuiteCancellable
do {
    if settings.all {
        token = try Suite.observeSuites(in: directory, includingCurrentValues: settings.initial, options: options, onChange: handler)
    } else {
        let suite = try Suite(named: settings.suite!, directory: directory, options: options)
        token = try suite.observe(keys: settings.keys.isEmpty ? nil : settings.keys,
                                  includingCurrentValues: settings.initial, onChange: handler)
    }
} catch {
    var failure = ToolError(error)
    // Status 1 says that the changes did not come in time; a suite not found is a usage error here.
    if failure.status == 1 { failure.status = 2 }
    failure.exit()
}
stop.withLock { $0 = token }
Output.errorLine("suite-watch: watching \(settings.all ? "every suite" : settings.suite!) in \(directory.path)")

withExtendedLifetime(token) { dispatchMain() }
