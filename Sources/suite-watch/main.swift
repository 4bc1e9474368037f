// suite-watch: print the changes of suites as they happen, from any process.
import ChildProcess
import Dispatch
import Foundation
import Glibc
import Synchronization
@_spi(Tools) import SuiteDefaults

let usageText = """
    usage: suite-watch [--dir DIR] SUITE [KEY ...]    watch one suite (every key, or those named)
           suite-watch [--dir DIR] --all             watch every suite in the directory, new ones too

      --json             one JSON object per line: time, suite, key, old, new, seq, pid, kind
      --initial          print the current values first
      --count N          exit 0 after N changes
      --timeout SECONDS  exit 1 if the N changes have not come by then (without --count: stop, exit 0);
                         counted from the start, while waiting for a suite's lock too
      --dir DIR          the suite directory (default: $SUITE_DEFAULTS_DIR,
                         $XDG_CONFIG_HOME/suite-defaults or ~/.config/suite-defaults)
    """

/// Writes a line with one write(2), so that a pipe sees each change at once.
func emit(_ line: String, to descriptor: Int32 = STDOUT_FILENO) {
    let text = line + "\n"
    _ = text.withCString { write(descriptor, $0, strlen($0)) }
}

func fail(_ message: String, status: Int32 = 2) -> Never {
    emit("suite-watch: \(message)", to: STDERR_FILENO)
    if status == 2 { emit(usageText, to: STDERR_FILENO) }
    exit(status)
}

struct Settings {
    var directory: URL?
    var suite: String?
    var keys: [String] = []
    var all = false
    var json = false
    var initial = false
    var count: Int?
    var timeout: Double?

    init(_ arguments: [String]) {
        var index = 0
        func value(for option: String) -> String {
            index += 1
            guard index < arguments.count else { fail("\(option) needs a value") }
            return arguments[index]
        }
        var positional: [String] = []
        while index < arguments.count {
            switch arguments[index] {
            case "--dir": directory = URL(fileURLWithPath: value(for: "--dir"), isDirectory: true)
            case "--all": all = true
            case "--json": json = true
            case "--initial": initial = true
            case "--count":
                guard let number = Int(value(for: "--count")), number > 0 else { fail("--count needs a positive number") }
                count = number
            case "--timeout":
                guard let seconds = Double(value(for: "--timeout")), seconds > 0, seconds.isFinite else {
                    fail("--timeout needs a positive number of seconds")
                }
                timeout = seconds
            case "-h", "--help":
                emit(usageText)
                exit(0)
            case let option where option.hasPrefix("-"):
                fail("unknown option \(option)")
            case let word:
                positional.append(word)
            }
            index += 1
        }
        if all {
            guard positional.isEmpty else { fail("--all watches every suite; name no suite or key with it") }
        } else {
            guard let first = positional.first else { fail("name a suite to watch, or use --all") }
            do {
                try Suite.validate(name: first)
            } catch let error as SuiteError {
                fail(error.message)
            } catch {
                fail("\(error)")
            }
            suite = first
            keys = Array(positional.dropFirst())
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

let settings = Settings(Array(CommandLine.arguments.dropFirst()))
let directory = settings.directory ?? Suite.defaultDirectory()
var isDirectory: ObjCBool = false
guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory), isDirectory.boolValue else {
    fail("the directory \(directory.path) does not exist")
}

// Changes arrive on the suites' own queues; one lock keeps lines whole and counts exact.
let received = Mutex(0)
let handler: @Sendable (SuiteChange) -> Void = { change in
    received.withLock { count in
        emit(settings.json ? change.jsonText() : humanLine(change))
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
            emit("suite-watch: \(count) of \(wanted) changes came within \(timeout) s", to: STDERR_FILENO)
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
} catch let error as SuiteError {
    fail(error.message, status: error.code == .notFound || error.code == .invalidSuiteName ? 2 : 3)
} catch {
    fail("\(error)", status: 3)
}
stop.withLock { $0 = token }
emit("suite-watch: watching \(settings.all ? "every suite" : settings.suite!) in \(directory.path)", to: STDERR_FILENO)

withExtendedLifetime(token) { dispatchMain() }
