// The worker that multi-process tests spawn as a real child process.
//
//     suite-test-worker COMMAND --dir DIR --suite NAME [OPTIONS]
//
// It reports on standard output, one line per event, written with one write(2) so
// that the parent sees each line the moment it happens. When its standard input is
// a pipe, it exits as soon as the pipe closes, so a crashed test leaves no worker.
import ChildProcess
import Foundation
import Glibc
import Synchronization
@_spi(Testing) import SuiteDefaults
import TestRecorders
import ToolSupport
import UnitPreferences
import WorkerRoles

let syntax = CommandLineSyntax(
    synopsis: ["suite-test-worker COMMAND --dir DIR --suite NAME [OPTIONS]"],
    arguments: [CommandLineArgument("COMMAND", help: """
        increment, write-keys, ack-loop, invariant-writer, invariant-reader, pause, leak-check, compact,
        hold-lock, get, key-bytes, spawn-lingering, try-set, set-if-absent, units-current, units-set, fork-in-transaction,
        fork-observe, hold-lock-spawn, fork-then-hold, fork-read-while-held, many-open,
        hostile-check, units-trials, fork-pids, fork-release-observation, without-inotify, clobber-inotify,
        observe-then-another, clobber-watcher-instance, observe-slow-and-other, hostile20, paced-writer,
        forked, hostile21 or mangle-loop
        """)],
    options: RoleOptions.all + [
        .value("--key2", "KEY", help: "hostile-check: the key written"),
        .value("--value", "VALUE", help: "the value written"),
        .value("--at-least", "V", help: "invariant-reader: a version below V is a regression"),
        .value("--point", "POINT", help: "pause: the fault-injection point, or several: \"a,b\""),
        .value("--compact", "ANY", help: "pause: compact after the write"),
        .value("--resume", "ANY", help: "pause: stop (SIGSTOP) and go on at SIGCONT instead of waiting to be killed"),
        .value("--wait", "ANY", help: "pause: say \"ready\" once the suite is open, and write only after a line on standard input"),
        .value("--system", "SYSTEM", help: "units-set: metric or imperial"),
        .value("--lock-timeout-ms", "MS", help: "the suite's lock timeout"),
        .value("--history-bytes", "BYTES", help: "the suite's changeHistorySize (0: no history files kept)"),
        .value("--report-waiting", "ANY", help: "say \"waiting for the lock\" when a write waits for it"),
        .value("--file-size-limit-strict", "BYTES", help: "RLIMIT_FSIZE, with SIGXFSZ's default action (death)"),
        .value("--as-uid", "UID", help: "become this user first"),
        .value("--trials", "N", help: "units-trials: how many trials (suites SUITE-0 ... SUITE-(N-1))"),
        .value("--other", "NAME", help: "observe-then-another, observe-slow-and-other, hostile20: the second suite observed"),
        .value("--pause-ms", "MS", help: "observe-slow-and-other: how long each callback of SUITE sleeps"),
        .value("--ends-with-us", "no", help: "spawn-lingering: \"no\" starts the program without endsWithThisProcess"),
        .value("--scenario", "NAME", help: "hostile20: inside, inside-watcher, listen, listen-inside, second-store, cancel-restart, churn, lost, fork or race; forked (ForkedScenarios.swift): fionread, fork-while-paused, timer-number, no-standby-thread, no-thread-at-all or no-timer"),
        .value("--other-dir", "DIR", help: "hostile20: a second directory"),
        .value("--suites", "A,B,...", help: "hostile21 threads: the suites written; order-reader: the writers read"),
        .value("--pause-us", "US", help: "hostile21 write: microseconds between commits"),
        .value("--until-told", "ANY", help: "hostile21 threads: go on after COUNT until a line on standard input"),
        .value("--then", "ACTION", help: "without-inotify: set (KEY = VALUE, three times more) or hold (the lock); clobber-inotify: none, close, devnull, inotify or pipe; forked fionread: devnull or emptyFile"),
    ]
)

func fail(_ message: String) -> Never {
    ToolError(status: 3, message: message).exit()
}

let options = syntax.parseCommandLine()
guard let command = options.arguments.first, options.arguments.count == 1 else {
    options.usageError("name one command").exit()
}
func value(_ name: String) -> String? { options.value("--\(name)") }
func option(_ name: String) -> String {
    guard let value = value(name) else { fail("missing --\(name)") }
    return value
}
func number(_ name: String) -> Int {
    guard let number = value(name).flatMap(Int.init) else { fail("missing or bad --\(name)") }
    return number
}

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

if let limit = value("file-size-limit").flatMap(Int.init) {
    signal(SIGXFSZ, SIG_IGN)
    var bound = rlimit(rlim_cur: rlim_t(limit), rlim_max: rlim_t(limit))
    guard setrlimit(Int32(RLIMIT_FSIZE.rawValue), &bound) == 0 else { fail("setrlimit failed") }
}
if let limit = value("file-size-limit-strict").flatMap(Int.init) {
    // As file-size-limit, but SIGXFSZ keeps its default action (death).
    var bound = rlimit(rlim_cur: rlim_t(limit), rlim_max: rlim_t(limit))
    guard setrlimit(Int32(RLIMIT_FSIZE.rawValue), &bound) == 0 else { fail("setrlimit failed") }
}
if let uid = value("as-uid").flatMap(UInt32.init) {
    guard setgroups(0, nil) == 0, setgid(uid) == 0, setuid(uid) == 0 else { fail("cannot become uid \(uid)") }
}

SuiteDiagnostics.printsToStandardError = false
let diagnostics = SuiteDiagnostics.observe { diagnostic in
    Output.line("diagnostic \(diagnostic.kind.rawValue)")
}

if value("report-waiting") != nil {
    SuiteFaultInjection.arm(.waitingForLock) { _ in Output.line("waiting for the lock") }
}

if command == "mangle-loop" {
    // A process outside the protocol: takes no lock, opens no suite. Until killed, it
    // cuts the file KEY (a path) short at sizes around its length, writes the bytes
    // of the file VALUE back over it, and appends garbage to it, over and over.
    let target = option("key")
    guard let original = FileManager.default.contents(atPath: option("value")).map(Array.init), !original.isEmpty else { fail("no original") }
    var state: UInt64 = 0x9E37_79B9
    func next() -> Int {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return Int(truncatingIfNeeded: state >> 33)
    }
    Output.line("mangling")
    while true {
        // Opened by name each time: a repair renames a new file into place.
        let descriptor = open(target, O_WRONLY)
        guard descriptor >= 0 else { continue }
        defer { close(descriptor) }
        let cut = [0, 31, 32, 68, 65_536, 65_570, original.count / 2, original.count - 4, original.count - 1][next() % 9]
        _ = ftruncate(descriptor, off_t(max(0, min(cut, original.count))))
        _ = original.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        if next() % 4 == 0 {
            let garbage = (0..<(1 + next() % 100)).map { _ in UInt8(truncatingIfNeeded: next()) }
            _ = garbage.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, off_t(original.count)) }
            _ = ftruncate(descriptor, off_t(original.count))
        }
        // Intact for a moment now and then, so that a reader sometimes gets through.
        if next() % 2 == 0 { usleep(UInt32(next() % 3000)) }
    }
}

if command == "forked" {
    // Opens no suite first: at the fork, this process has only what the scenario made.
    do {
        try runForkedScenario(option("scenario"), suite: option("suite"), in: URL(fileURLWithPath: option("dir")), then: value("then"))
    } catch {
        Output.line(errorReport(error))
    }
    exit(0)
}

let suite: Suite
do {
    var suiteOptions = Suite.Options()
    if let slack = value("compaction-slack").flatMap(Int.init) { suiteOptions.compactionSlack = slack }
    if let timeout = value("lock-timeout-ms").flatMap(Int.init) { suiteOptions.lockTimeout = .milliseconds(timeout) }
    if let history = value("history-bytes").flatMap(Int.init) { suiteOptions.changeHistorySize = history }
    suite = try Suite(named: option("suite"), directory: URL(fileURLWithPath: option("dir")), options: suiteOptions)
} catch {
    Output.line(errorReport(error))
    exit(0)
}
Output.line("opened")

@Sendable func forever() -> Never {
    while true { pause() }
}

/// Takes the exclusive lock inside a transaction, says "holding", and keeps it until killed.
func holdLockUntilKilled() {
    try? suite.update { tx in
        try tx.set("held", forKey: "holder")
        Output.line("holding")
        forever()
    }
}

switch command {
case "increment":
    // THREADS threads, each doing COUNT read-increment-write transactions.
    let threads = number("threads"), count = number("count")
    _ = suite.incrementConcurrently(value("key") ?? "counter", threads: threads, count: count) { fail("increment: \($0)") }
    Output.line("done \(threads * count)")

case "write-keys":
    // Writes PREFIX.0 ... PREFIX.(COUNT-1) = 0 ... COUNT-1, acknowledging each once set
    // returned; with --keys K, the values go to PREFIX.(n % K), so keys are overwritten.
    let count = number("count")
    suite.writeKeys(prefix: option("prefix"), count: count, keys: value("keys").flatMap(Int.init) ?? count,
                    value: { .integer($0) }, written: { key, error in
        if let error { fail("write-keys: \(error)") }
        Output.line("ack \(key)")
    })
    Output.line("done")

case "ack-loop":
    // Writes PREFIX.(n % 200) = n for n = 0, 1, 2, ... until killed, acknowledging each.
    _ = suite.ackLoop(prefix: option("prefix"), keys: 200, until: { false }, acknowledge: { Output.line("ack \($0)") },
                      failed: { fail("ack-loop: \($0)") })

case "invariant-writer":
    // Keeps a + b == 0 and a == version, changing all three in one transaction.
    suite.writeInvariant(times: number("count"), acknowledge: { Output.line("ack \($0)") }, failed: { fail("invariant-writer: \($0)") })
    Output.line("done")

case "invariant-reader":
    // Reads until the key "stop" appears; reports torn states and versions going back.
    let reading = suite.checkInvariant(atLeast: value("at-least").flatMap(Int.init) ?? 0, until: \.stopRequested)
    Output.line("reads \(reading.reads) torn \(reading.torn) regressions \(reading.regressions) last \(reading.last)")

case "pause":
    // Arms fault-injection points (POINT, or several: "a,b"), then writes KEY = VALUE;
    // at a point it reports and waits to be killed.
    let points = option("point").split(separator: ",").map { name in
        SuiteFaultInjection.Point.allCases.first { "\($0)" == name }
    }
    guard !points.isEmpty, !points.contains(where: { $0 == nil }) else { fail("unknown point") }
    let resumes = value("resume") != nil
    for case let point? in points {
        SuiteFaultInjection.arm(point) { reached in
            Output.line("paused \(reached)")
            // With --resume, it stops itself, and goes on at SIGCONT.
            if resumes { raise(SIGSTOP) } else { forever() }
        }
    }
    if value("wait") != nil {
        // Opened and armed: the test changes the files now, then sends a line.
        Output.line("ready")
        inputLines.wait()
    }
    do {
        if value("compact") != nil {
            try suite.set(option("value"), forKey: option("key"))
            Output.line("set")
            try suite.compact()
        } else {
            try suite.set(option("value"), forKey: option("key"))
        }
        Output.line("finished")
    } catch {
        Output.line(errorReport(error))
    }

case "leak-check":
    // Two hundred suites opened, written and let go, and one compacted two hundred
    // times; reports this process's watches and descriptors before and after (its own
    // alone: a test process counts those of the tests that run beside it).
    let directory = option("dir")
    let before = watchesAndDescriptors(under: directory)
    do {
        for index in 0..<200 {
            let leaking = try Suite(named: "leak\(index)", directory: URL(fileURLWithPath: directory))
            try leaking.set(index, forKey: "k")
            try leaking.set(index + 1, forKey: "k")
        }
        let compacted = try Suite(named: "compacted", directory: URL(fileURLWithPath: directory), options: .init(changeHistorySize: 4096))
        for index in 0..<200 {
            try compacted.set(index, forKey: "k")
            try compacted.compact()
        }
        try compacted.set(-1, forKey: "k")
    } catch {
        Output.line(errorReport(error))
    }
    let after = watchesAndDescriptors(under: directory)
    Output.line("watches \(before.watches) \(after.watches) descriptors \(before.descriptors) \(after.descriptors)")

case "compact":
    do {
        try suite.compact()
        Output.line("compacted")
    } catch {
        Output.line(errorReport(error))
    }

case "hold-lock":
    holdLockUntilKilled()

case "get":
    let key = option("key")
    Output.line(suite.storedValue(forKey: key).map { "value \($0)" } ?? "absent")

case "key-bytes":
    // Every stored key as this process holds it, its bytes in hex, sorted; then a count.
    let keys = suite.storedValues().keys.map { $0.utf8.map { String(format: "%02x", $0) }.joined() }.sorted()
    for key in keys { Output.line("key \(key)") }
    Output.line("keys \(keys.count)")

case "try-set":
    // Tries to store a string of SIZE bytes (or VALUE) and reports the outcome.
    let text = value("size").flatMap(Int.init).map { String(repeating: "x", count: $0) } ?? option("value")
    Output.line(suite.trySet(.string(text), forKey: option("key")))

case "set-if-absent":
    // Waits for a line on standard input (a start signal), then races to set KEY.
    inputLines.wait()
    do {
        let stored = try suite.setIfAbsent(option("value"), forKey: option("key"))
        Output.line("stored \(stored)")
    } catch {
        Output.line(errorReport(error))
    }

case "units-current":
    // Waits for a start signal, then asks for the shared unit system, detecting it
    // from --lang when nothing is stored.
    inputLines.wait()
    do {
        Output.line("current \(try suite.currentUnitSystem(lang: option("lang")))")
    } catch {
        Output.line(errorReport(error))
    }

case "units-set":
    // Waits for a start signal, then stores the user's explicit choice.
    inputLines.wait()
    guard let system = UnitSystem(rawValue: option("system")) else { fail("bad --system") }
    do {
        try suite.setUnitSystem(system)
        Output.line("set \(system.rawValue)")
    } catch {
        Output.line(errorReport(error))
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
            Output.line("parent saw child exit \(status >> 8)")
        }
        Output.line("parent committed")
    } catch {
        // Only the child's copy of the transaction gets here.
        Output.line("child commit: \(errorReport(error))")
        do {
            try suite.set("child", forKey: "child")
            Output.line("child wrote")
        } catch {
            Output.line("child write: \(errorReport(error))")
        }
        _exit(7)
    }

case "fork-observe":
    // Observes, then forks (once the observation's threads are asleep, see
    // forkChild): the child observes for itself and reports the first change of KEY,
    // and exits 1 if none came within 60 s; the parent reports it through its own
    // observation too.
    let key = option("key")
    let parentReceived = DispatchSemaphore(value: 0)
    let parentToken = try suite.observe(keys: [key]) { change in
        Output.line("parent received \(change.newValue?.description ?? "nil")")
        parentReceived.signal()
    }
    let child = forkChild {
        let received = DispatchSemaphore(value: 0)
        guard let token = try? suite.observe(keys: [key], onChange: { change in
            Output.line("child received \(change.newValue?.description ?? "nil")")
            received.signal()
        }) else { return 2 }
        Output.line("child observing")
        let heard = received.wait(timeout: .now() + 60) == .success
        withExtendedLifetime(token) {}
        return heard ? 0 : 1
    }
    reportChild(child, timeout: .seconds(90))
    // The parent's own observation may hear of the change after the child is gone.
    _ = parentReceived.wait(timeout: .now() + 60)
    withExtendedLifetime(parentToken) {}

case "fork-release-observation":
    // Observes a second suite (SUITE.forked, opened only here, so that nothing but the
    // token holds it) with a callback that owns a directory observation, then forks.
    // The child releases the token: the observation stayed with the parent, but what
    // its callback owns must go with the token, and the child's next use of the
    // change watcher (observing a directory) must not hang, though ending what the
    // callback owned takes the watcher's lock. The parent reaps the child, or kills it
    // after 10 s, then releases its own token, which must let go of the same.
    final class Owner: @unchecked Sendable { var directoryToken: SuiteCancellable? }
    // The token in a box: a local variable's value may be kept alive by a copy the
    // compiler made, past the assignment of nil that the test is about.
    final class Held { var token: SuiteCancellable? }
    weak var owned: Owner?
    let held = Held()
    // The directory observed is another one: one observing this directory would
    // open the suite, and so hold the store, the hub and the callback itself.
    let listened = URL(fileURLWithPath: option("dir")).appendingPathComponent("listened")
    try FileManager.default.createDirectory(at: listened, withIntermediateDirectories: true)
    do {
        let owner = Owner()
        owner.directoryToken = try Suite.observeSuites(in: listened) { _ in }
        let observed = try Suite(named: option("suite") + ".forked", directory: URL(fileURLWithPath: option("dir")))
        // Written before the observation starts, and nothing after: no change is
        // delivered, so no job of the observers' queue holds the hub in the child.
        try observed.set(1, forKey: "k")
        // The same kinds of observation started and ended once here first: the
        // child then meets no generic type for the first time. Its first use needs a
        // lock of the Swift runtime, which another thread may have held at the fork.
        try Suite.observeSuites(in: listened) { _ in }.cancel()
        try observed.observe { _ in }.cancel()
        held.token = try observed.observe { [owner] _ in _ = owner }
        owned = owner
    }
    // And no other thread at work at the fork: each asleep, three looks in a row.
    waitUntilOtherThreadsAreAsleep()
    let child = fork()
    if child == 0 {
        held.token = nil
        Output.line("child released, callback's owner \(owned == nil ? "gone" : "alive")")
        let again = try? Suite.observeSuites(in: listened) { _ in }
        Output.line("child observes again: \(again != nil)")
        _exit(0)
    }
    var status: Int32 = 0
    let deadline = ContinuousClock.now + .seconds(10)
    while waitpid(child, &status, WNOHANG) != child {
        guard ContinuousClock.now < deadline else {
            kill(child, SIGKILL)
            _ = waitpid(child, &status, 0)
            Output.line("child hung")
            break
        }
        usleep(1_000)
    }
    Output.line("child status \(status)")
    held.token = nil
    let released = ContinuousClock.now + .seconds(10)
    while owned != nil && ContinuousClock.now < released { usleep(1_000) }
    Output.line("parent released, callback's owner \(owned == nil ? "gone" : "alive")")

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
        Output.line("spawned \(pid)")
        forever()
    }

case "spawn-lingering":
    // Starts a program that never reads its standard input (`sleep`, as etcd), with
    // ChildProcess's endsWithThisProcess unless --ends-with-us is "no", reports its
    // pid, and waits to be killed. The ChildProcess is never let go: its deinit would
    // kill the program.
    guard let lingering = try? ChildProcess(executable: "/bin/sleep", arguments: ["300"], environment: [:],
                                            endsWithThisProcess: value("ends-with-us") != "no")
    else { fail("spawn-lingering: could not start /bin/sleep") }
    Output.line("spawned \(lingering.pid)")
    withExtendedLifetime(lingering) { forever() }

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
    Output.line("child \(pid)")
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
        Output.line("child read \(suite.storedValue(forKey: key)?.description ?? "absent")")
        _exit(0)
    }
    var status: Int32 = 0
    _ = waitpid(pid, &status, 0)
    Output.line("child exited \(status)")
    _exit(0)

case "fork-after-file-deleted":
    // Writes twice (the second commit skips its files' status calls), deletes the
    // suite file as a process outside the library could, and forks a child that
    // writes to another suite, SUITE-other (with an inotify instance, which it must
    // not share with this process); then writes KEY = 3 itself.
    do {
        try suite.set(1, forKey: "first")
        try suite.set(2, forKey: "second")
        guard unlink(option("dir") + "/" + option("suite") + ".suite") == 0 else { fail("unlink: \(errno)") }
        let pid = fork()
        if pid == 0 {
            let other = try? Suite(named: option("suite") + "-other", directory: URL(fileURLWithPath: option("dir")))
            _exit((try? other?.set(9, forKey: "child")) != nil ? 0 : 1)
        }
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
        Output.line("child exited \(status)")
        try suite.set(3, forKey: option("key"))
        Output.line("done")
    } catch {
        Output.line(errorReport(error))
    }

case "without-inotify":
    // Writes once (key "probe") while no descriptor can be opened, so that the
    // process's inotify instance cannot be had, then lifts the limit again and says
    // how many inotify instances it has ("without inotify: N"). At a start signal,
    // --then set: writes KEY = VALUE, says "set" (or the error), then writes three
    // more times (key "more") and says "inotify instances N" again;
    // --then hold: takes the exclusive lock in a transaction and holds it until killed.
    var saved = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &saved)
    // The lowest free number is what the next descriptor would get: a soft limit of
    // that number refuses it.
    let lowest = dup(0)
    guard lowest >= 0 else { fail("dup") }
    close(lowest)
    var tight = saved
    tight.rlim_cur = rlim_t(lowest)
    guard setrlimit(Int32(RLIMIT_NOFILE.rawValue), &tight) == 0 else { fail("setrlimit") }
    let probe = suite.trySet(.integer(1), forKey: "probe")
    guard setrlimit(Int32(RLIMIT_NOFILE.rawValue), &saved) == 0 else { fail("setrlimit back") }
    Output.line("without inotify: \(OpenDescriptors.inotifyInstances().count) probe \(probe)")
    inputLines.wait()
    switch option("then") {
    case "hold":
        holdLockUntilKilled()
    default:
        let text = option("value")
        let report = suite.trySet(Int(text).map(SuiteValue.integer) ?? .string(text), forKey: option("key"))
        Output.line(report == "ok" ? "set" : "set failed: \(report)")
        for round in 0..<3 { _ = suite.trySet(.integer(round), forKey: "more") }
        Output.line("inotify instances \(OpenDescriptors.inotifyInstances().count)")
    }

case "observe-then-another":
    // Observes SUITE alone, with a callback that says "blocked" at the first change
    // and blocks there (until standard input closes, which ends the worker); then
    // observes --other as well, says "watching", and says "heard VALUE" at each
    // change of its KEY.
    let other = try Suite(named: option("other"), directory: URL(fileURLWithPath: option("dir")))
    let key = option("key")
    let blocked = DispatchSemaphore(value: 0)
    let first = try SuiteObservation.allKeys.start(in: suite) { _ in
        blocked.signal()
        forever()
    }
    Output.line("observing")
    guard blocked.wait(timeout: .now() + 60) == .success else { fail("no change of \(suite.name) came") }
    Output.line("blocked")
    let second = try SuiteObservation.keys(named: [key]).start(in: other) { change in
        Output.line("heard \(change.newValue?.description ?? "nil")")
    }
    Output.line("watching")
    withExtendedLifetime((first, second)) { forever() }

case "clobber-watcher-instance":
    // Observes SUITE and says "heard VALUE" at each change of KEY (and "error ..." for
    // an error); at a start signal, says how many threads read or stand by for the
    // change watcher ("watcher threads N"), gives the number of its inotify instance
    // to an empty file ("clobbered"); at a second, waits (10 s at most) for at most 2
    // such threads to be left, saying how many are ("watcher threads left N").
    let key = option("key")
    // The change watcher's instance is the one that the observation makes.
    let before = Set(OpenDescriptors.inotifyInstances().map(\.number))
    let token = try SuiteObservation.keys(named: [key]).start(in: suite, onError: { error in
        Output.line("error \(error.code) \(error.message)")
    }) { change in
        Output.line("heard \(change.newValue?.description ?? "nil")")
    }
    func watcherThreads() -> Int { OwnThreads.names().filter { $0 == "suite-watcher" }.count }
    Output.line("observing")
    inputLines.wait()
    Output.line("watcher threads \(watcherThreads())")
    guard let instance = OpenDescriptors.inotifyInstances().first(where: { !before.contains($0.number) })?.number else {
        fail("no inotify instance")
    }
    let empty = Glibc.open(option("dir") + "/empty-file", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard empty >= 0, dup2(empty, instance) == instance else { fail("dup2") }
    close(empty)
    Output.line("clobbered")
    inputLines.wait()
    let deadline = ContinuousClock.now + .seconds(10)
    while watcherThreads() > 2 && ContinuousClock.now < deadline { usleep(2_000) }
    Output.line("watcher threads left \(watcherThreads())")
    withExtendedLifetime(token) { forever() }

case "observe-slow-and-other":
    // Observes SUITE with a callback that says "slow VALUE" at each change of KEY and
    // then sleeps --pause-ms, and --other with one that says "other VALUE"; at each
    // start signal, says how many threads the process has ("threads N").
    let other = try Suite(named: option("other"), directory: URL(fileURLWithPath: option("dir")))
    let key = option("key"), pause = useconds_t(number("pause-ms") * 1000)
    let slow = try SuiteObservation.keys(named: [key]).start(in: suite) { change in
        Output.line("slow \(change.newValue?.description ?? "nil")")
        usleep(pause)
    }
    let second = try SuiteObservation.keys(named: [key]).start(in: other) { change in
        Output.line("other \(change.newValue?.description ?? "nil")")
    }
    Output.line("observing")
    while true {
        inputLines.wait()
        Output.line("threads \(OwnThreads.count)")
    }
    withExtendedLifetime((slow, second)) {}

case "paced-writer":
    // Sets KEY = 0, 1, 2, ... until killed, 0.2 to 1.5 ms apart.
    let key = option("key")
    Output.line("writing")
    var n = 0
    while true {
        do { try suite.set(.integer(n), forKey: key) } catch { fail("paced-writer: \(error)") }
        n += 1
        usleep(UInt32.random(in: 200...1500))
    }

case "hostile20":
    // Observes SUITE alone; its callback says "blocked" at the first change and blocks
    // there (per --scenario), the reading paused with no timer. Then, per --scenario,
    // something else is observed; "watching" says it is; "heard ..." each change of it.
    let scenario = option("scenario")
    let directoryURL = URL(fileURLWithPath: option("dir"))
    let otherName = value("other") ?? "later"
    let otherDirectory = URL(fileURLWithPath: value("other-dir") ?? option("dir"))
    let blocked = DispatchSemaphore(value: 0)
    final class Box<T>: @unchecked Sendable { var value: T; let lock = NSLock(); init(_ v: T) { value = v }
        func with<R>(_ body: (inout T) -> R) -> R { lock.lock(); defer { lock.unlock() }; return body(&value) } }
    let keep = Box<[Any]>([])
    @Sendable func heardHandler(_ label: String) -> @Sendable (SuiteChange) -> Void {
        { change in Output.line("heard \(label) \(change.suite) \(change.key) \(change.newValue?.description ?? "nil")") }
    }
    @Sendable func observeOther(_ name: String, in dir: URL, label: String, delivery: SuiteObservation.Delivery = .suiteQueue) throws -> SuiteCancellable {
        let other = try Suite(named: name, directory: dir)
        return try SuiteObservation.allKeys.delivered(on: delivery).start(in: other, onChange: heardHandler(label))
    }
    @Sendable func listenOther() throws -> SuiteCancellable {
        try Suite.observeSuites(in: otherDirectory, onChange: heardHandler("dir"))
    }
    if scenario == "race" {
        // SUITE's callback checks the order of its values (KEY = 0, 1, 2, ...), and while
        // a round is pending blocks until that round's suite was heard (or 8 s). The main
        // thread, COUNT rounds: observe OTHER-i, say "watching i", wait for its change.
        let heard = Box(-1), pending = Box(-1), last = Box(-1)
        let first = try SuiteObservation.allKeys.start(in: suite) { change in
            if let text = change.newValue?.description, let n = Int(text.trimmingCharacters(in: CharacterSet(charactersIn: "\""))) {
                let previous = last.with { v -> Int in defer { v = n }; return v }
                if n != previous + 1 { Output.line("order \(previous) then \(n)") }
            }
            let round = pending.with { $0 }
            guard round >= 0 else { return }
            let start = DispatchTime.now()
            while heard.with({ $0 }) < round {
                if DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds > 8_000_000_000 {
                    Output.line("stuck \(round)")
                    return
                }
                usleep(500)
            }
        }
        Output.line("observing")
        var token: SuiteCancellable?
        for round in 0..<number("count") {
            token?.cancel()
            pending.with { $0 = round }
            // Jitter: pauses that begin now, with no other suite watched, have no timer.
            usleep(UInt32.random(in: 0...3000))
            let other = try Suite(named: "\(otherName)-\(round)", directory: directoryURL)
            token = try SuiteObservation.allKeys.start(in: other) { _ in
                heard.with { $0 = max($0, round) }
            }
            Output.line("watching \(round)")
            let start = DispatchTime.now()
            while heard.with({ $0 }) < round, DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds < 10_000_000_000 { usleep(1000) }
            Output.line(heard.with { $0 } >= round ? "round \(round)" : "missed \(round)")
        }
        token?.cancel()
        Output.line("done")
        withExtendedLifetime(first) { forever() }
    }
    let first = try SuiteObservation.allKeys.start(in: suite) { _ in
        blocked.signal()
        switch scenario {
        case "inside":
            do { keep.with { $0.append(try! observeOther(otherName, in: directoryURL, label: "other")) } }
            Output.line("watching")
        case "inside-watcher":
            keep.with { $0.append(try! observeOther(otherName, in: directoryURL, label: "other", delivery: .watcherThread)) }
            Output.line("watching")
        case "listen-inside":
            keep.with { $0.append(try! listenOther()) }
            Output.line("watching")
        default: break
        }
        forever()
    }
    Output.line("observing")
    guard blocked.wait(timeout: .now() + 60) == .success else { fail("no change of \(suite.name) came") }
    Output.line("blocked")
    switch scenario {
    case "listen":
        keep.with { $0.append(try! listenOther()) }
        Output.line("watching")
    case "second-store":
        // The test removed and made again the directory; this opens the suite there
        // (another store) and observes it.
        guard inputLines.wait(timeout: .now() + 30) == .success else { fail("no go") }
        keep.with { $0.append(try! observeOther(suite.name, in: directoryURL, label: "second")) }
        Output.line("watching")
    case "lost":
        // The test removed DIR; observes OTHER in --other-dir.
        guard inputLines.wait(timeout: .now() + 30) == .success else { fail("no go") }
        keep.with { $0.append(try! observeOther(otherName, in: otherDirectory, label: "other")) }
        Output.line("watching")
    case "cancel-restart":
        // Observes OTHER-a; after its change, cancels it and observes OTHER-b.
        let a = try observeOther(otherName + "-a", in: directoryURL, label: "a")
        Output.line("watching a")
        guard inputLines.wait(timeout: .now() + 30) == .success else { fail("no go") }
        a.cancel()
        keep.with { $0.append(try! observeOther(otherName + "-b", in: directoryURL, label: "b")) }
        Output.line("watching b")
    case "fork":
        // Forks while the reading is paused with no timer: the child observes OTHER for
        // itself ("child heard ..." at its first change, then ends); the parent observes
        // OTHER too, then reaps the child.
        let pid = fork()
        if pid == 0 {
            let heard = DispatchSemaphore(value: 0)
            let token = try? SuiteObservation.allKeys.start(in: Suite(named: otherName, directory: directoryURL)) { change in
                Output.line("child heard \(change.suite) \(change.key) \(change.newValue?.description ?? "nil")")
                heard.signal()
            }
            Output.line(token == nil ? "child failed" : "child watching")
            _ = heard.wait(timeout: .now() + 20)
            withExtendedLifetime(token) {}
            _exit(0)
        }
        keep.with { $0.append(try! observeOther(otherName, in: directoryURL, label: "other")) }
        Output.line("watching")
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
        Output.line("child exited \(status)")
    case "churn":
        // Threads observe and cancel suites over and over while the callback blocks;
        // then OTHER is observed.
        let group = DispatchGroup()
        for thread in 0..<6 {
            let t = Thread {
                for round in 0..<15 {
                    if let token = try? observeOther("churn-\(thread)-\(round % 3)", in: directoryURL, label: "churn") {
                        if round % 2 == 0 { token.cancel() } else { keep.with { $0.append(token) } }
                    }
                }
                group.leave()
            }
            group.enter()
            t.start()
        }
        guard group.wait(timeout: .now() + 30) == .success else { fail("churn hung") }
        keep.with { $0.append(try! observeOther(otherName, in: directoryURL, label: "other")) }
        let threads = OwnThreads.count
        Output.line("watching threads \(threads)")
    default: break
    }
    withExtendedLifetime(first) { forever() }

case "clobber-inotify":
    // Writes twice (the second commit skips its files' status calls), then, as code
    // outside the library could, does --then MODE to the number of the process's
    // inotify instance (the one with watches): none (nothing), close (only closes it),
    // devnull (/dev/null put at the number), inotify (a new inotify instance with no
    // watch put there), pipe (the read end of a blocking pipe holding 5 bytes put
    // there). Says "clobbered MODE N" (N: the number, -1 if none was found); at each
    // start signal tries to write KEY = VALUE and says "set ok" or "set error ...",
    // "pipe bytes N" (how many the pipe still holds, pipe only) and "inotify instances N".
    _ = suite.trySet(.integer(1), forKey: "first")
    _ = suite.trySet(.integer(2), forKey: "second")
    let mode = option("then")
    let target = OpenDescriptors.inotifyInstances().first { $0.watches > 0 }?.number ?? -1
    var pipeEnds: [Int32] = [-1, -1]
    if target >= 0 {
        switch mode {
        case "close":
            close(target)
        case "devnull":
            let other = open("/dev/null", O_RDONLY)
            dup2(other, target)
            close(other)
        case "inotify":
            let other = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
            dup2(other, target)
            close(other)
        case "pipe":
            guard pipe(&pipeEnds) == 0 else { fail("pipe") }
            dup2(pipeEnds[0], target)
            close(pipeEnds[0])
            _ = write(pipeEnds[1], "hello", 5)
        default:
            break
        }
    }
    Output.line("clobbered \(mode) \(target)")
    while true {
        inputLines.wait()
        let text = option("value")
        let report = suite.trySet(Int(text).map(SuiteValue.integer) ?? .string(text), forKey: option("key"))
        Output.line(report == "ok" ? "set ok" : "set \(report)")
        if mode == "pipe" {
            var available: Int32 = 0
            _ = ioctl(target, UInt(FIONREAD), &available)
            Output.line("pipe bytes \(available)")
        }
        Output.line("inotify instances \(OpenDescriptors.inotifyInstances().count)")
    }

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
    Output.line("read \(suites.last!.string(forKey: "k") ?? "absent") of \(suites.count)")

case "hostile-check":
    // Reads KEY (reporting its value), writes KEY2 = VALUE and reads it back.
    let before = suite.storedValue(forKey: option("key"))
    do {
        try suite.set(option("value"), forKey: option("key2"))
        let after = suite.string(forKey: option("key2"))
        Output.line("read \(before?.description ?? "absent") wrote \(after ?? "absent")")
    } catch {
        Output.line("read \(before?.description ?? "absent") \(errorReport(error))")
    }

case "units-trials":
    // For trial k = 0 ..< TRIALS, on the k-th start signal, in suite SUITE-k of the
    // same directory: stores the explicit --system, or else asks for the shared unit
    // system detecting --lang. Reports "trial k VALUE" (a first-access race per trial).
    let base = option("suite"), directory = URL(fileURLWithPath: option("dir"))
    for trial in 0..<number("trials") {
        inputLines.wait()
        do {
            let trialSuite = try Suite(named: "\(base)-\(trial)", directory: directory)
            if let system = value("system").flatMap(UnitSystem.init(rawValue:)) {
                try trialSuite.setUnitSystem(system)
                Output.line("trial \(trial) \(system.rawValue)")
            } else {
                Output.line("trial \(trial) \(try trialSuite.currentUnitSystem(lang: option("lang")))")
            }
        } catch {
            Output.line("trial \(trial) \(errorReport(error))")
        }
    }
    Output.line("done")

case "fork-pids":
    // Writes KEY-NAME = its own getpid() from processes made in every way a fork can
    // come: a child forked before this process used a process ID, its own child, and a
    // child forked from the main thread after another thread had used it. Each reports
    // "wrote NAME PID header H", H being the shared header's committer (offset 12).
    @Sendable func writeOwnPID(_ name: String) {
        do {
            try suite.set(String(getpid()), forKey: "pid-" + name)
            let lock = open(suite.lockFileURL.path, O_RDONLY)
            var committer: Int32 = 0
            _ = pread(lock, &committer, 4, 12)
            close(lock)
            Output.line("wrote \(name) \(getpid()) header \(Int32(littleEndian: committer))")
        } catch {
            Output.line("\(name): \(errorReport(error))")
        }
    }
    func forkAndWait(_ body: () -> Void) {
        let pid = fork()
        if pid == 0 {
            body()
            _exit(0)
        }
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
    }
    forkAndWait {
        writeOwnPID("early-child")
        forkAndWait { writeOwnPID("grandchild") }
        writeOwnPID("early-child-again")
    }
    let other = Thread { writeOwnPID("thread") }
    other.start()
    while !other.isFinished { usleep(1000) }
    forkAndWait { writeOwnPID("late-child") }
    writeOwnPID("parent")
    Output.line("done")

case "hostile21":
    // Round twenty-one's writers and reader. Every commit of writer W numbered i sets,
    // in one transaction, W.i = i and W.last = i, and says "ack W i START" once it
    // returned (START: CLOCK_MONOTONIC in ns when the commit began), or "err W i CODE"
    // when it threw (the write then counts as not made).
    @Sendable func commit(_ store: Suite, _ who: String, _ index: Int) {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let start = Int(now.tv_sec) * 1_000_000_000 + Int(now.tv_nsec)
        do {
            try store.update { tx in
                try tx.setValue(.integer(index), forKey: "\(who).\(index)")
                try tx.setValue(.integer(index), forKey: "\(who).last")
            }
            Output.line("ack \(who) \(index) \(start)")
        } catch {
            let code = (error as? SuiteError)?.code.rawValue ?? "untyped \(error)"
            Output.line("err \(who) \(index) \(code)")
        }
    }
    let count = value("count").flatMap(Int.init) ?? 100
    let pauseMicroseconds = value("pause-us").flatMap(UInt32.init) ?? 0
    switch option("scenario") {
    case "write":
        // Writer PREFIX commits COUNT times (with COUNT 0: until a line on standard
        // input), PAUSE-US apart; "done" at the end.
        let who = option("prefix")
        Output.line("writing")
        var index = 0
        while count > 0 ? index < count : inputLines.wait(timeout: .now()) == .timedOut {
            commit(suite, who, index)
            index += 1
            if pauseMicroseconds > 0 { usleep(pauseMicroseconds) }
        }
        Output.line("done")
    case "dump":
        // Every stored integer: "kv KEY VALUE", then "end N".
        let values = suite.storedValues()
        for (key, value) in values.sorted(by: { $0.key < $1.key }) {
            if case .integer(let number) = value { Output.line("kv \(key) \(number)") } else { Output.line("kv \(key) other") }
        }
        Output.line("end \(values.count)")
    case "fork":
        // Two commits (the second on the short path), then a fork: the child (writer
        // PREFIX-child) and the parent (PREFIX-parent) each commit COUNT times at once.
        let who = option("prefix")
        commit(suite, who + "-warm", 0)
        commit(suite, who + "-warm", 1)
        let pid = fork()
        if pid == 0 {
            for index in 0..<count { commit(suite, who + "-child", index) }
            _exit(0)
        }
        for index in 0..<count { commit(suite, who + "-parent", index) }
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
        Output.line("child exited \(status)")
        Output.line("done")
    case "threads":
        // THREADS threads; thread t commits COUNT times to suite t % n of SUITES as
        // writer "tT", each through its own Suite instance; "done" at the end. With
        // --until-told, each goes on after COUNT until a line comes on standard input.
        let names = option("suites").split(separator: ",").map(String.init)
        let threads = number("threads")
        final class Told: Sendable { let value = Mutex(false) }
        let told = Told(), untilTold = value("until-told") != nil
        if untilTold {
            Thread {
                inputLines.wait()
                told.value.withLock { $0 = true }
            }.start()
        }
        var threadOptions = Suite.Options()
        threadOptions.lockTimeout = .milliseconds(value("lock-timeout-ms").flatMap(Int.init) ?? 2000)
        let lockOptions = threadOptions, directory = URL(fileURLWithPath: option("dir"))
        let finished = DispatchGroup()
        for thread in 0..<threads {
            finished.enter()
            let name = names[thread % names.count]
            Thread {
                defer { finished.leave() }
                guard let store = try? Suite(named: name, directory: directory, options: lockOptions) else {
                    Output.line("err t\(thread) open")
                    return
                }
                var index = 0
                while index < count || (untilTold && !told.value.withLock { $0 }) {
                    commit(store, "t\(thread)", index)
                    index += 1
                }
            }.start()
        }
        finished.wait()
        Output.line("done")
    case "order-reader":
        // Reads W.last for each writer W of SUITES until the key "stop" is stored:
        // a value going back is a regression, and W.i must be there once W.last is i.
        let writers = option("suites").split(separator: ",").map(String.init)
        var last = [String: Int](), reads = 0, regressions = 0, missing = 0
        Output.line("reading")
        while suite.storedValue(forKey: "stop") == nil {
            for who in writers {
                guard case .integer(let seen)? = suite.storedValue(forKey: "\(who).last") else { continue }
                let index = seen
                if index < last[who, default: -1] { regressions += 1 }
                if suite.storedValue(forKey: "\(who).\(index)") == nil { missing += 1 }
                last[who] = index
                reads += 1
            }
        }
        let ends = writers.map { "\($0)=\(last[$0, default: -1])" }.joined(separator: " ")
        Output.line("reads \(reads) regressions \(regressions) missing \(missing) last \(ends)")
    default:
        fail("unknown scenario")
    }

default:
    fail("unknown command \(command)")
}
withExtendedLifetime(diagnostics) {}
