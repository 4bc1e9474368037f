// The worker that multi-process tests spawn as a real child process.
//
//     suite-test-worker COMMAND --dir DIR --suite NAME [OPTIONS]
//
// It reports on standard output, one line per event, written with one write(2) so
// that the parent sees each line the moment it happens. When its standard input is
// a pipe, it exits as soon as the pipe closes, so a crashed test leaves no worker.
import Foundation
import Glibc
@_spi(Testing) import SuiteDefaults
import UnitPreferences

func say(_ line: String) {
    let text = line + "\n"
    _ = text.withCString { write(STDOUT_FILENO, $0, strlen($0)) }
}

func fail(_ message: String) -> Never {
    let text = "suite-test-worker: \(message)\n"
    _ = text.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    exit(3)
}

func report(_ error: any Error) -> String {
    if let error = error as? SuiteError {
        return "error \(error.code.rawValue) errno \(error.errno ?? 0)"
    }
    return "error other \(error)"
}

/// The command line: a command, then `--name value` pairs.
struct Options: Sendable {
    let command: String
    let values: [String: String]

    init(_ arguments: [String]) {
        guard let command = arguments.first else { fail("no command") }
        var values: [String: String] = [:]
        var index = 1
        while index < arguments.count {
            guard arguments[index].hasPrefix("--"), index + 1 < arguments.count else { fail("bad option \(arguments[index])") }
            values[String(arguments[index].dropFirst(2))] = arguments[index + 1]
            index += 2
        }
        self.command = command
        self.values = values
    }

    subscript(name: String) -> String? { values[name] }

    func string(_ name: String) -> String {
        guard let value = values[name] else { fail("missing --\(name)") }
        return value
    }

    func number(_ name: String) -> Int {
        guard let value = values[name].flatMap(Int.init) else { fail("missing or bad --\(name)") }
        return value
    }
}

let options = Options(Array(CommandLine.arguments.dropFirst()))
let command = options.command
func option(_ name: String) -> String { options.string(name) }
func number(_ name: String) -> Int { options.number(name) }

// Standard input carries start signals, one per line. When it is a pipe, the worker
// exits as soon as it closes: the parent, which holds the other end, went away.
let inputLines = DispatchSemaphore(value: 0)
Thread {
    var status = stat()
    let isPipe = fstat(STDIN_FILENO, &status) == 0 && status.st_mode & S_IFMT == S_IFIFO
    var byte: UInt8 = 0
    while read(STDIN_FILENO, &byte, 1) > 0 {
        if byte == 10 { inputLines.signal() }
    }
    if isPipe { _exit(0) }
}.start()

if let limit = options["file-size-limit"].flatMap(Int.init) {
    signal(SIGXFSZ, SIG_IGN)
    var bound = rlimit(rlim_cur: rlim_t(limit), rlim_max: rlim_t(limit))
    guard setrlimit(Int32(RLIMIT_FSIZE.rawValue), &bound) == 0 else { fail("setrlimit failed") }
}
if let limit = options["file-size-limit-strict"].flatMap(Int.init) {
    // As file-size-limit, but SIGXFSZ keeps its default action (death).
    var bound = rlimit(rlim_cur: rlim_t(limit), rlim_max: rlim_t(limit))
    guard setrlimit(Int32(RLIMIT_FSIZE.rawValue), &bound) == 0 else { fail("setrlimit failed") }
}
if let uid = options["as-uid"].flatMap(UInt32.init) {
    guard setgroups(0, nil) == 0, setgid(uid) == 0, setuid(uid) == 0 else { fail("cannot become uid \(uid)") }
}

SuiteDiagnostics.printsToStandardError = false
let diagnostics = SuiteDiagnostics.observe { diagnostic in
    say("diagnostic \(diagnostic.kind.rawValue)")
}

if options["report-waiting"] != nil {
    SuiteFaultInjection.arm(.waitingForLock) { _ in say("waiting for the lock") }
}

let suite: Suite
do {
    var suiteOptions = Suite.Options()
    if let slack = options["compaction-slack"].flatMap(Int.init) { suiteOptions.compactionSlack = slack }
    if let timeout = options["lock-timeout-ms"].flatMap(Int.init) { suiteOptions.lockTimeout = .milliseconds(timeout) }
    suite = try Suite(named: option("suite"), directory: URL(fileURLWithPath: option("dir")), options: suiteOptions)
} catch {
    say(report(error))
    exit(0)
}
say("opened")

@Sendable func forever() -> Never {
    while true { pause() }
}

/// Takes the exclusive lock inside a transaction, says "holding", and keeps it until killed.
func holdLockUntilKilled() {
    try? suite.update { tx in
        try tx.set("held", forKey: "holder")
        say("holding")
        forever()
    }
}



switch command {
case "increment":
    // THREADS threads, each doing COUNT read-increment-write transactions.
    let threads = number("threads"), count = number("count")
    let key = options["key"] ?? "counter"
    DispatchQueue.concurrentPerform(iterations: threads) { _ in
        for _ in 0..<count {
            do {
                try suite.update { tx in try tx.set((tx.integer(forKey: key) ?? 0) + 1, forKey: key) }
            } catch {
                fail("increment: \(error)")
            }
        }
    }
    say("done \(threads * count)")

case "write-keys":
    // Writes PREFIX.0 ... PREFIX.(COUNT-1) = 0 ... COUNT-1, acknowledging each once set
    // returned; with --keys K, the values go to PREFIX.(n % K), so keys are overwritten.
    let prefix = option("prefix"), count = number("count")
    let keys = options["keys"].flatMap(Int.init) ?? count
    for value in 0..<count {
        let key = "\(prefix).\(value % keys)"
        do { try suite.set(value, forKey: key) } catch { fail("write-keys: \(error)") }
        say("ack \(key)")
    }
    say("done")

case "ack-loop":
    // Writes PREFIX.n = n for n = 0, 1, 2, ... until killed, acknowledging each.
    let prefix = option("prefix")
    var value = 0
    while true {
        do { try suite.set(value, forKey: "\(prefix).\(value % 200)") } catch { fail("ack-loop: \(error)") }
        say("ack \(value)")
        value += 1
    }

case "invariant-writer":
    // Keeps a + b == 0 and a == version, changing all three in one transaction.
    let count = number("count")
    for _ in 0..<count {
        do {
            let version = try suite.update { tx -> Int in
                let next = (tx.integer(forKey: "version") ?? 0) + 1
                try tx.set(next, forKey: "a")
                try tx.set(-next, forKey: "b")
                try tx.set(next, forKey: "version")
                return next
            }
            say("ack \(version)")
        } catch {
            fail("invariant-writer: \(error)")
        }
    }
    say("done")

case "invariant-reader":
    // Reads until the key "stop" appears; reports torn states and versions going back.
    var reads = 0, torn = 0, regressions = 0, lastVersion = 0
    let floor = options["at-least"].flatMap(Int.init) ?? 0
    while true {
        let values = suite.storedValues()
        reads += 1
        let a = values["a"].flatMap(Int.init(suiteValue:))
        let b = values["b"].flatMap(Int.init(suiteValue:))
        let version = values["version"].flatMap(Int.init(suiteValue:)) ?? 0
        if a.map({ $0 + (b ?? 0) != 0 || version != $0 }) ?? (b != nil || version != 0) { torn += 1 }
        if version < lastVersion || version < floor { regressions += 1 }
        lastVersion = version
        if values["stop"] != nil { break }
    }
    say("reads \(reads) torn \(torn) regressions \(regressions) last \(lastVersion)")

case "pause":
    // Arms a fault-injection point, then writes KEY = VALUE; at the point it reports
    // and waits to be killed.
    guard let point = SuiteFaultInjection.Point.allCases.first(where: { "\($0)" == option("point") }) else {
        fail("unknown point")
    }
    SuiteFaultInjection.arm(point) { reached in
        say("paused \(reached)")
        forever()
    }
    do {
        if options["compact"] != nil {
            try suite.set(option("value"), forKey: option("key"))
            say("set")
            try suite.compact()
        } else {
            try suite.set(option("value"), forKey: option("key"))
        }
        say("finished")
    } catch {
        say(report(error))
    }

case "compact":
    do {
        try suite.compact()
        say("compacted")
    } catch {
        say(report(error))
    }

case "hold-lock":
    holdLockUntilKilled()

case "get":
    let key = option("key")
    say(suite.storedValue(forKey: key).map { "value \($0)" } ?? "absent")

case "try-set":
    // Tries to store a string of SIZE bytes (or VALUE) and reports the outcome.
    let key = option("key")
    let value = options["size"].flatMap(Int.init).map { String(repeating: "x", count: $0) } ?? option("value")
    do {
        try suite.set(value, forKey: key)
        say("ok")
    } catch {
        say(report(error))
    }

case "set-if-absent":
    // Waits for a line on standard input (a start signal), then races to set KEY.
    inputLines.wait()
    do {
        let stored = try suite.setIfAbsent(option("value"), forKey: option("key"))
        say("stored \(stored)")
    } catch {
        say(report(error))
    }

case "units-current":
    // Waits for a start signal, then asks for the shared unit system, detecting it
    // from --lang when nothing is stored.
    inputLines.wait()
    do {
        let system = try UnitSystem.current(in: suite, environment: ["LANG": option("lang")])
        say("current \(system.rawValue)")
    } catch {
        say(report(error))
    }

case "units-set":
    // Waits for a start signal, then stores the user's explicit choice.
    inputLines.wait()
    do {
        guard let system = UnitSystem(rawValue: option("system")) else { fail("bad --system") }
        try UnitSystem.setCurrent(system, in: suite)
        say("set \(system.rawValue)")
    } catch {
        say(report(error))
    }

case "fork-in-transaction":
    // Forks inside a transaction. The child may neither commit the parent's
    // transaction nor hold its lock: its commit is refused, and its own write waits
    // for the parent's lock (and times out while the parent waits for it).
    do {
        try suite.update { tx in
            try tx.set("parent", forKey: "owner")
            let pid = fork()
            if pid == 0 { return }
            var status: Int32 = 0
            _ = waitpid(pid, &status, 0)
            say("parent saw child exit \(status >> 8)")
        }
        say("parent committed")
    } catch {
        // Only the child's copy of the transaction gets here.
        say("child commit: \(report(error))")
        do {
            try suite.set("child", forKey: "child")
            say("child wrote")
        } catch {
            say("child write: \(report(error))")
        }
        _exit(7)
    }

case "fork-observe":
    // Observes, then forks: the child observes for itself and reports the first
    // change of KEY; the parent reports it through its own observation too.
    let key = option("key")
    let parentReceived = DispatchSemaphore(value: 0)
    let parentToken = try suite.observe(keys: [key]) { change in
        say("parent received \(change.newValue?.description ?? "nil")")
        parentReceived.signal()
    }
    let pid = fork()
    if pid == 0 {
        let received = DispatchSemaphore(value: 0)
        let token = try suite.observe(keys: [key]) { change in
            say("child received \(change.newValue?.description ?? "nil")")
            received.signal()
        }
        say("child observing")
        _ = received.wait(timeout: .now() + 60)
        withExtendedLifetime(token) {}
        _exit(0)
    }
    var status: Int32 = 0
    _ = waitpid(pid, &status, 0)
    say("child exited \(status)")
    // The parent's own observation may hear of the change after the child is gone.
    _ = parentReceived.wait(timeout: .now() + 60)
    withExtendedLifetime(parentToken) {}

case "hold-lock-spawn":
    // Inside a transaction (holding the lock), starts a long-lived program, reports
    // its pid, and waits to be killed.
    try? suite.update { tx in
        try tx.set("held", forKey: "holder")
        var pid: pid_t = 0
        let arguments = ["/bin/sleep", "300"]
        var argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        // Its standard streams go to /dev/null, so that the test's pipes end with us.
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for stream in 0...2 { posix_spawn_file_actions_addopen(&actions, Int32(stream), "/dev/null", O_RDWR, 0) }
        guard posix_spawn(&pid, "/bin/sleep", &actions, nil, &argv, environ) == 0 else { fail("posix_spawn failed") }
        say("spawned \(pid)")
        forever()
    }

case "fork-then-hold":
    // Forks a child that never uses the suite and only waits, reports its pid, then
    // takes the suite's lock inside a transaction and keeps it until killed.
    let pid = fork()
    if pid == 0 {
        // Off the test's pipes, so that they end with the parent.
        let null = open("/dev/null", O_RDWR)
        for stream in 0...2 { dup2(null, Int32(stream)) }
        forever()
    }
    say("child \(pid)")
    holdLockUntilKilled()

case "fork-read-while-held":
    // Another thread holds the lock inside a transaction; this one forks, and the
    // child, which cannot get the lock, reads KEY: from what its parent had read.
    let key = option("key")
    _ = suite.storedValue(forKey: key)
    let inside = DispatchSemaphore(value: 0)
    Thread {
        try? suite.update { tx in
            try tx.set("never", forKey: "holder")
            inside.signal()
            forever()
        }
    }.start()
    inside.wait()
    let pid = fork()
    if pid == 0 {
        say("child read \(suite.storedValue(forKey: key)?.description ?? "absent")")
        _exit(0)
    }
    var status: Int32 = 0
    _ = waitpid(pid, &status, 0)
    say("child exited \(status)")
    _exit(0)

case "many-open":
    // Opens COUNT suites, cuts the last one's lock file short, and reads it.
    let count = number("count")
    var files = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &files)
    files.rlim_cur = max(files.rlim_cur, rlim_t(4 * count + 100))
    if files.rlim_max < files.rlim_cur { files.rlim_max = files.rlim_cur }
    guard setrlimit(Int32(RLIMIT_NOFILE.rawValue), &files) == 0 else { fail("cannot raise the descriptor limit") }
    let directory = URL(fileURLWithPath: option("dir"))
    var suites: [Suite] = []
    do {
        for index in 0..<count { suites.append(try Suite(named: "many\(index)", directory: directory)) }
        try suites.last!.set("kept", forKey: "k")
    } catch {
        fail("open: \(error)")
    }
    guard truncate(suites.last!.lockFileURL.path, 0) == 0 else { fail("truncate") }
    say("read \(suites.last!.string(forKey: "k") ?? "absent") of \(suites.count)")

case "hostile-check":
    // Reads KEY (reporting its value), writes KEY2 = VALUE and reads it back.
    let before = suite.storedValue(forKey: option("key"))
    do {
        try suite.set(option("value"), forKey: option("key2"))
        let after = suite.string(forKey: option("key2"))
        say("read \(before?.description ?? "absent") wrote \(after ?? "absent")")
    } catch {
        say("read \(before?.description ?? "absent") \(report(error))")
    }

default:
    fail("unknown command \(command)")
}
withExtendedLifetime(diagnostics) {}
