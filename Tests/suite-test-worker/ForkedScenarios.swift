import ChildProcess
import Dispatch
import Foundation
import Glibc
@_spi(Testing) import SuiteDefaults
import TestRecorders
import ToolSupport

// Scenarios that need a forked child (role "forked"), run here rather than in the test
// process: there, other suites' tests run on other threads, any of which may hold a
// lock of the Swift runtime (its metadata lock) or of malloc at the fork, and a child
// that then needs that lock waits for it for good. Here the main thread forks once
// every other thread of this process is asleep. The worker reaps its child (killing
// it after a deadline) and says how it ended: "child status N" (its exit status), or
// "child killed" (killed after the deadline, or dead of a signal).

/// Whether every thread of this process but the calling one is asleep (state S in
/// /proc/self/task/TID/stat): none is inside the Swift runtime, holding its locks.
func otherThreadsAreAsleep() -> Bool {
    // /proc/thread-self links to "PID/task/TID" of the calling thread.
    guard let me = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self").split(separator: "/").last,
          let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")
    else { return false }
    for task in tasks where task != me {
        guard let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
              let end = stat.lastIndex(of: ")")
        else { continue }
        // "TID (NAME) STATE ...": the state follows the name's closing parenthesis.
        let state = stat[stat.index(after: end)...].dropFirst().first
        if state != "S" { return false }
    }
    return true
}

/// Waits, 10 s at most, until every other thread is asleep, three looks in a row.
func waitUntilOtherThreadsAreAsleep() {
    let quiet = ContinuousClock.now + .seconds(10)
    var quietLooks = 0
    while quietLooks < 3 && ContinuousClock.now < quiet {
        quietLooks = otherThreadsAreAsleep() ? quietLooks + 1 : 0
        usleep(1_000)
    }
}

/// Forks once the other threads are asleep: the child runs `body` and exits with what
/// it returns, and is killed if this process dies first. The child's pid, or nil.
func forkChild(_ body: () -> Int32) -> pid_t? {
    // prctl(2), found before the fork (the loader's lock is not for a forked child);
    // Swift does not import C's variadic functions.
    typealias ProcessControl = @convention(c) (CInt, CUnsignedLong, CUnsignedLong, CUnsignedLong, CUnsignedLong) -> CInt
    guard let symbol = dlsym(nil, "prctl") else { return nil }
    let processControl = unsafeBitCast(symbol, to: ProcessControl.self)
    let parent = getpid()
    waitUntilOtherThreadsAreAsleep()
    let pid = fork()
    if pid == 0 {
        // PR_SET_PDEATHSIG (1): killed when this process dies.
        _ = processControl(1, CUnsignedLong(SIGKILL), 0, 0, 0)
        if getppid() != parent { _exit(126) }
        _exit(body())
    }
    return pid > 0 ? pid : nil
}

/// Waits for child `pid` at most `timeout`, then kills and reaps it: its exit status,
/// or nil when it was killed or died of a signal.
func reap(_ pid: pid_t, timeout: Duration) -> Int32? {
    let deadline = ContinuousClock.now + timeout
    var status: Int32 = 0
    while waitpid(pid, &status, WNOHANG) != pid {
        if ContinuousClock.now > deadline {
            kill(pid, SIGKILL)
            _ = waitpid(pid, &status, 0)
            return nil
        }
        usleep(5_000)
    }
    return status & 0x7f == 0 ? (status >> 8) & 0xff : nil
}

/// Reaps the child (see `reap`) and says how it ended.
func reportChild(_ pid: pid_t?, timeout: Duration = .seconds(60)) {
    guard let pid else { return Output.line("child not forked") }
    Output.line(reap(pid, timeout: timeout).map { "child status \($0)" } ?? "child killed")
}

/// Runs the forked scenario `scenario` on the suite `name` in `dir` (see the role's help).
func runForkedScenario(_ scenario: String, suite name: String, in dir: URL, then mode: String?) throws {
    switch scenario {
    case "fionread":
        // HostileRoundNineteenTests.theInstanceNumberGivenToAnEmptyFileThenTheDataFileReplaced:
        // the child writes twice, gives the writers' inotify instance's number to
        // /dev/null or to an empty file (--then devnull or emptyFile), replaces the
        // data file by a copy (a hard link keeps the old one as backup-MODE) and
        // writes "third" = 3.
        let mode = mode ?? "devnull"
        let data = dir.appendingPathComponent(name + ".suite").path
        let backup = dir.appendingPathComponent("backup-\(mode)").path
        let copy = dir.appendingPathComponent("copy-\(mode)").path, empty = dir.appendingPathComponent("empty-\(mode)").path
        reportChild(forkChild {
            let before = Set(OpenDescriptors.inotifyInstances().map(\.number))
            guard let suite = try? Suite(named: name, directory: dir),
                  (try? suite.set(1, forKey: "first")) != nil, (try? suite.set(2, forKey: "second")) != nil
            else { return 10 }
            guard SuiteTestingProbes.skipsFileStatusWhileUnchanged(suite) else { return 11 }
            guard let target = OpenDescriptors.inotifyInstances().first(where: { !before.contains($0.number) && $0.watches > 0 })?.number
            else { return 12 }
            let other = mode == "devnull" ? Glibc.open("/dev/null", O_RDONLY) : Glibc.open(empty, O_RDWR | O_CREAT | O_TRUNC, 0o600)
            guard other >= 0, dup2(other, target) == target else { return 13 }
            close(other)
            guard link(data, backup) == 0, copyFile(data, copy), rename(copy, data) == 0 else { return 14 }
            guard (try? suite.set(3, forKey: "third")) != nil else { return 15 }
            return 0
        })

    case "fork-while-paused":
        // HostileRoundNineteenTests.aForkWhileTheReaderIsPaused: observes SUITE with a
        // callback that blocks at its first change ("observing", then "blocked"), and
        // forks while the reader is paused in it. The child observes fork-child-slow
        // (its callback blocks), fork-child-seen and SUITE: says "child observing",
        // then "child blocked" once its slow callback blocks, and ends once it heard
        // fork-child-seen's k = "seen" and SUITE's k = "from-child-view". Then the
        // parent lets its callback go on and says "parent heard from-child-view" (or
        // "parent missed from-child-view").
        let parentSuite = try Suite(named: name, directory: dir)
        let gate = BlockingObserver()
        let token = try SuiteObservation.allKeys.start(in: parentSuite, onChange: gate.handler)
        Output.line("observing")
        guard gate.entered.wait(timeout: .now() + 60) == .success else { return Output.line("no change of \(name) came") }
        Output.line("blocked")
        reportChild(forkChild {
            guard let slow = try? Suite(named: "fork-child-slow", directory: dir),
                  let seen = try? Suite(named: "fork-child-seen", directory: dir),
                  let parentAgain = try? Suite(named: name, directory: dir)
            else { return 10 }
            let childGate = BlockingObserver(), recorder = ChangeRecorder(), parentRecorder = ChangeRecorder()
            guard let one = try? SuiteObservation.allKeys.start(in: slow, onChange: childGate.handler),
                  let two = try? SuiteObservation.allKeys.start(in: seen, onChange: recorder.handler),
                  let three = try? SuiteObservation.allKeys.start(in: parentAgain, onChange: parentRecorder.handler)
            else { return 11 }
            defer { childGate.open(4); withExtendedLifetime([one, two, three]) {} }
            Output.line("child observing")
            guard childGate.entered.wait(timeout: .now() + 20) == .success else { return 12 }
            Output.line("child blocked")
            guard recorder.wait(for: "k", toBecome: "seen", timeout: .seconds(20)) else { return 13 }
            guard parentRecorder.wait(for: "k", toBecome: "from-child-view", timeout: .seconds(20)) else { return 14 }
            return 0
        })
        // The parent goes on.
        gate.open(4)
        let heard = gate.recorder.wait(for: "k", toBecome: "from-child-view", timeout: .seconds(10))
        Output.line(heard ? "parent heard from-child-view" : "parent missed from-child-view")
        withExtendedLifetime(token) {}

    case "timer-number":
        // HostileRoundNineteenTests.aForkedChildsOwnFileAtTheParentsTimerNumber: observes
        // SUITE ("observing"), says "parent heard 1" at its k = "1" (or "parent missed 1"
        // after 10 s), then forks. The child closes the change watcher's timers it
        // inherited, opens the file child-own-file at their numbers, and observes
        // timer-child: status 20 when the library closed a number that is the child's
        // file now.
        let parentSuite = try Suite(named: name, directory: dir), recorder = ChangeRecorder()
        let token = try SuiteObservation.allKeys.start(in: parentSuite, onChange: recorder.handler)
        Output.line("observing")
        Output.line(recorder.wait(for: "k", toBecome: "1", timeout: .seconds(10)) ? "parent heard 1" : "parent missed 1")
        let file = dir.appendingPathComponent("child-own-file").path
        reportChild(forkChild {
            let timers = OpenDescriptors.leading(to: "anon_inode:[timerfd]")
            guard !timers.isEmpty else { return 10 }
            // The child closes what it inherited and opens files of its own at those numbers.
            for number in timers {
                close(number)
                let own = Glibc.open(file, O_RDWR | O_CREAT | O_APPEND, 0o600)
                guard own >= 0 else { return 11 }
                if own != number {
                    guard dup2(own, number) == number else { return 12 }
                    close(own)
                }
            }
            guard timers.allSatisfy({ fcntl($0, F_GETFD) >= 0 }) else { return 14 }
            guard let suite = try? Suite(named: "timer-child", directory: dir),
                  let child = try? SuiteObservation.allKeys.start(in: suite, onChange: { _ in }) else { return 13 }
            defer { withExtendedLifetime(child) {} }
            // Still the child's file (a number closed may have been given to the new timer).
            var own = stat()
            guard stat(file, &own) == 0 else { return 15 }
            let closed = timers.filter { number in
                var status = stat()
                return fstat(number, &status) != 0 || status.st_ino != own.st_ino || status.st_dev != own.st_dev
            }
            return closed.isEmpty ? 0 : 20
        })
        withExtendedLifetime(token) {}

    case "no-standby-thread":
        // HostileRoundNineteenTests.noStandbyThreadCanBeStarted: the child observes
        // nothread-slow (its callback blocks at each "block") and nothread-seen, makes
        // every new thread fail, and checks that nothread-seen still hears while the
        // slow callback blocks, twice.
        let worker = ownExecutable()
        reportChild(forkChild {
            guard let slow = try? Suite(named: "nothread-slow", directory: dir),
                  let seen = try? Suite(named: "nothread-seen", directory: dir) else { return 10 }
            let gate = DispatchSemaphore(value: 0), entered = DispatchSemaphore(value: 0)
            let slowRecorder = ChangeRecorder(), recorder = ChangeRecorder(), names = LockedBox<[String]>([])
            guard let one = try? SuiteObservation.allKeys.start(in: slow, onChange: { change in
                slowRecorder.handler(change)
                guard change.newValue == "block" else { return }
                names.withLock { $0.append(currentThreadName()) }
                entered.signal()
                _ = gate.wait(timeout: .now() + 60)
            }), let two = try? SuiteObservation.allKeys.start(in: seen, onChange: recorder.handler) else { return 11 }
            defer { gate.signal(); withExtendedLifetime([one, two]) {} }
            // Both queues made (and the thread standing by started) while threads can be.
            guard writeInWorker(worker, "nothread-slow", "k", "warm", dir),
                  writeInWorker(worker, "nothread-seen", "k", "warm", dir),
                  slowRecorder.wait(for: "k", toBecome: "warm", timeout: .seconds(20)),
                  recorder.wait(for: "k", toBecome: "warm", timeout: .seconds(20))
            else { return 12 }
            // Every later pthread_create fails.
            if let failed = makeEveryNewThreadFail() { return failed }
            // Two slow changes: the first may be handed to the thread standing by
            // (started while threads could be), the second finds none to start.
            for round in 0..<2 {
                guard writeInWorker(worker, "nothread-slow", "k", "block", dir) else { return 16 }
                guard entered.wait(timeout: .now() + 20) == .success else { return 17 }
                guard writeInWorker(worker, "nothread-seen", "k", "\(round)", dir) else { return 18 }
                guard recorder.wait(for: "k", toBecome: .string("\(round)"), timeout: .seconds(20)) else { return 19 }
                gate.signal()
                guard writeInWorker(worker, "nothread-slow", "k", "after-\(round)", dir),
                      slowRecorder.wait(for: "k", toBecome: .string("after-\(round)"), timeout: .seconds(20))
                else { return 20 }
            }
            return 0
        })

    case "no-thread-at-all":
        // HostileRoundNineteenTests.anObservationWithNoThreadToStartThrows: in the child,
        // with every new thread failing, observing SUITE or DIR throws ioFailure (20-23
        // otherwise), SUITE is still written and read (24), and nothing is watched (25).
        reportChild(forkChild {
            guard let suite = try? Suite(named: name, directory: dir) else { return 10 }
            if let failed = makeEveryNewThreadFail() { return failed }
            do {
                _ = try SuiteObservation.allKeys.start(in: suite) { _ in }
                return 20
            } catch let error as SuiteError where error.code == .ioFailure {
            } catch {
                return 21
            }
            do {
                _ = try Suite.observeSuites(in: dir) { _ in }
                return 22
            } catch let error as SuiteError where error.code == .ioFailure {
            } catch {
                return 23
            }
            guard (try? suite.set("still", forKey: "k")) != nil, suite.string(forKey: "k") == "still" else { return 24 }
            return SuiteTestingProbes.watchedDirectories.isEmpty ? 0 : 25
        })

    case "no-timer":
        // HostileRoundNineteenTests.noTimerCanBeMade: in the child, descriptors run out
        // right after the inotify instance as SUITE's observation starts (no timer can
        // be made); three changes from another process still arrive, on the queue's
        // own thread ("suite-observers").
        let worker = ownExecutable()
        reportChild(forkChild {
            guard let suite = try? Suite(named: name, directory: dir) else { return 10 }
            _ = suite.storedValue(forKey: "k")
            // The parent's instance and timer, inherited, are closed now, not at the watch.
            SuiteTestingProbes.forgetStateInheritedByFork()
            let recorder = ChangeRecorder(), names = LockedBox<[String]>([])
            var saved = rlimit()
            getrlimit(Int32(RLIMIT_NOFILE.rawValue), &saved)
            let lowest = dup(0)
            guard lowest >= 0 else { return 11 }
            close(lowest)
            let before = OpenDescriptors.inotifyInstances().count
            var bound = rlimit(rlim_cur: rlim_t(lowest + 1), rlim_max: saved.rlim_max)
            guard setrlimit(Int32(RLIMIT_NOFILE.rawValue), &bound) == 0 else { return 12 }
            let token = try? SuiteObservation.allKeys.start(in: suite) { change in
                names.withLock { $0.append(currentThreadName()) }
                recorder.handler(change)
            }
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &saved)
            guard let token else { return 13 }
            defer { withExtendedLifetime(token) {} }
            guard OpenDescriptors.inotifyInstances().count == before + 1 else { return 14 }
            for index in 0..<3 {
                guard writeInWorker(worker, name, "k", "\(index)", dir) else { return 15 }
                guard recorder.wait(for: "k", toBecome: .string("\(index)"), timeout: .seconds(20)) else { return 16 }
            }
            guard names.current.allSatisfy({ $0 == "suite-observers" }) else { return 17 }
            return 0
        })

    default:
        Output.line("unknown scenario \(scenario)")
    }
}

/// This program's path, for a child to run it again.
private func ownExecutable() -> String {
    (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
}

/// A byte-for-byte copy with plain calls (safe in a forked child).
private func copyFile(_ from: String, _ to: String) -> Bool {
    let source = Glibc.open(from, O_RDONLY)
    guard source >= 0 else { return false }
    defer { close(source) }
    let target = Glibc.open(to, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    guard target >= 0 else { return false }
    defer { close(target) }
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = buffer.withUnsafeMutableBytes { Glibc.read(source, $0.baseAddress, 65536) }
        if count == 0 { return true }
        if count < 0 { return false }
        guard buffer.withUnsafeBytes({ write(target, $0.baseAddress, count) }) == count else { return false }
    }
}

/// In a forked child: makes every later `pthread_create` fail (each new thread's
/// default stack too large to map; RLIMIT_NPROC does not bind root). Nil when it
/// does, else the child's exit status saying which step did not work.
private func makeEveryNewThreadFail() -> Int32? {
    typealias SetDefault = @convention(c) (UnsafePointer<pthread_attr_t>) -> CInt
    guard let symbol = dlsym(nil, "pthread_setattr_default_np") else { return 13 }
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    pthread_attr_setstacksize(&attributes, 1 << 46)
    guard unsafeBitCast(symbol, to: SetDefault.self)(&attributes) == 0 else { return 14 }
    var probe = pthread_t()
    return pthread_create(&probe, nil, { _ in nil }, nil) != 0 ? nil : 15
}

/// A write from another process (this program's role try-set), made with fork and
/// exec, so that no thread is needed: whether it ended with status 0 within 30 s.
private func writeInWorker(_ worker: String, _ suite: String, _ key: String, _ value: String, _ dir: URL) -> Bool {
    let arguments = [worker, "try-set", "--dir", dir.path, "--suite", suite, "--key", key, "--value", value]
    let pid = fork()
    if pid == 0 {
        let devnull = Glibc.open("/dev/null", O_RDWR)
        dup2(devnull, 0); dup2(devnull, 1)
        var argv = arguments.map { strdup($0) } + [nil]
        execv(arguments[0], &argv)
        _exit(127)
    }
    return pid > 0 && reap(pid, timeout: .seconds(30)) == 0
}
