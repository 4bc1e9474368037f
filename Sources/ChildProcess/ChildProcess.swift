import Foundation
import Glibc

/// A child process started with `posix_spawn`, whose standard output is read line by
/// line as it arrives, and which is always reaped: waiting for it, or at deinit by
/// SIGKILL and `waitpid`.
///
/// Every wait takes a deadline, so a test waits for events, never for time.
public final class ChildProcess: Sendable {
    /// How a process ended.
    public enum Termination: Equatable, Sendable, CustomStringConvertible {
        case exited(Int32)
        case signaled(Int32)

        public var description: String {
            switch self {
            case .exited(let code): "exited with status \(code)"
            case .signaled(let signal): "killed by signal \(signal)"
            }
        }
    }

    /// What the reader and reaper threads share with the owner. The threads hold only
    /// this, never the `ChildProcess`, so that the owner's deinit (which kills and
    /// reaps) runs as soon as the owner lets go, even while the child still runs.
    private final class Shared: @unchecked Sendable {
        // Everything below is guarded by `condition`.
        let condition = NSCondition()
        var outputLines: [String] = []
        var errorText = ""
        var consumed = 0
        var termination: Termination?
        var outputClosed = false
        var errorClosed = false
        var inputOpen = true

        /// Waits until `ready` holds, or the deadline passes; returns whether it holds.
        func waitUntil(_ timeout: Duration, _ ready: () -> Bool) -> Bool {
            let deadline = Date().addingTimeInterval(timeout.seconds)
            condition.lock()
            defer { condition.unlock() }
            while !ready() {
                if !condition.wait(until: deadline) { return ready() }
            }
            return true
        }

        func locked<R>(_ body: () -> R) -> R {
            condition.lock()
            defer { condition.unlock() }
            return body()
        }
    }

    private static let spawnLock = NSLock()

    public let pid: pid_t
    public let executable: String
    private let standardInput: CInt
    private let shared = Shared()

    /// Starts `executable` with `arguments`; its standard input, output and error are
    /// pipes to this process.
    ///
    /// With `endsWithThisProcess`, the child also ends when this process ends, however
    /// it ends (a crash, SIGKILL), for programs that do not read their standard input
    /// and would otherwise live on (a server such as etcd): a watcher (`/bin/sh`) holds
    /// a pipe whose only writer is this process, and kills the child when the pipe's
    /// writer is gone. The watcher is reaped with the child.
    public init(executable: String, arguments: [String], environment: [String: String]? = nil,
                endsWithThisProcess: Bool = false) throws {
        self.executable = executable
        // Pipes are made and the child spawned under one lock, so that no other
        // child spawned from here at the same moment inherits these pipes' ends
        // (which would keep them open and hide the end of the output).
        Self.spawnLock.lock()
        defer { Self.spawnLock.unlock() }
        let input = try Self.pipeEnds(), output = try Self.pipeEnds(), error = try Self.pipeEnds()
        let spawned = Self.spawn(executable, arguments, environment: environment,
                                 descriptors: (input.read, output.write, error.write))
        close(input.read)
        close(output.write)
        close(error.write)
        let closeOurEnds = {
            close(input.write)
            close(output.read)
            close(error.read)
        }
        let child: pid_t
        switch spawned {
        case .success(let pid): child = pid
        case .failure(let failure):
            closeOurEnds()
            throw failure
        }
        pid = child
        standardInput = input.write
        var watcher: (pid: pid_t, lifeline: CInt)?
        if endsWithThisProcess {
            do {
                watcher = try Self.startWatcher(of: child)
            } catch let failure {
                // Not left running without its watcher: killed and reaped here.
                _ = Glibc.kill(child, SIGKILL)
                var status: CInt = 0
                while waitpid(child, &status, 0) < 0 && errno == EINTR {}
                closeOurEnds()
                throw failure
            }
        }
        Self.startReading(output.read, isOutput: true, shared)
        Self.startReading(error.read, isOutput: false, shared)
        Self.startReaping(child, watcher: watcher, shared)
    }

    /// The watcher of `endsWithThisProcess`: `/bin/sh`, reading a pipe that only this
    /// process writes (its end closes on exec), which kills the child once the read
    /// ends. The child is not reaped until the watcher is (`startReaping`), so the
    /// number the watcher kills is the child's, alive or a zombie, never another's.
    private static func startWatcher(of child: pid_t) throws -> (pid: pid_t, lifeline: CInt) {
        let lifeline = try pipeEnds()
        let nothing = open("/dev/null", O_RDWR | O_CLOEXEC)
        guard nothing >= 0 else {
            close(lifeline.read)
            close(lifeline.write)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        let spawned = spawn("/bin/sh", ["-c", "read -r _; kill -KILL \(child)", "child-process-watcher"], environment: [:],
                            descriptors: (lifeline.read, nothing, nothing))
        close(lifeline.read)
        close(nothing)
        switch spawned {
        case .success(let pid): return (pid, lifeline.write)
        case .failure(let failure):
            close(lifeline.write)
            throw failure
        }
    }

    /// A pipe whose ends close on exec (a child gets the ends it needs by `dup2`).
    private static func pipeEnds() throws -> (read: CInt, write: CInt) {
        var ends: [CInt] = [0, 0]
        guard pipe(&ends) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return (ends[0], ends[1])
    }

    /// `posix_spawn` of `executable` with `descriptors` as its standard input, output and
    /// error.
    private static func spawn(_ executable: String, _ arguments: [String], environment: [String: String]?,
                              descriptors: (input: CInt, output: CInt, error: CInt)) -> Result<pid_t, POSIXError> {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, descriptors.input, 0)
        posix_spawn_file_actions_adddup2(&actions, descriptors.output, 1)
        posix_spawn_file_actions_adddup2(&actions, descriptors.error, 2)

        let environmentPairs = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environmentPairs.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        // A clean signal state: the blocked mask and ignored signals of the spawning
        // thread would otherwise carry over, and a child that cannot see SIGTERM
        // cannot be stopped politely.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t(), allSignals = sigset_t()
        sigemptyset(&noSignals)
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var child: pid_t = 0
        let spawned = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
        return spawned == 0 ? .success(child) : .failure(POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO))
    }

    private static func startReading(_ descriptor: CInt, isOutput: Bool, _ shared: Shared) {
        let thread = Thread {
            var pending = [UInt8]()
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                pending += buffer[0..<count]
                shared.locked {
                    if isOutput {
                        while let newline = pending.firstIndex(of: 10) {
                            shared.outputLines.append(String(decoding: pending[..<newline], as: UTF8.self))
                            pending.removeSubrange(...newline)
                        }
                    } else {
                        shared.errorText += String(decoding: pending, as: UTF8.self)
                        pending.removeAll()
                    }
                    shared.condition.broadcast()
                }
            }
            close(descriptor)
            shared.locked {
                if isOutput {
                    if !pending.isEmpty { shared.outputLines.append(String(decoding: pending, as: UTF8.self)) }
                    shared.outputClosed = true
                } else {
                    shared.errorClosed = true
                }
                shared.condition.broadcast()
            }
        }
        thread.start()
    }

    /// Reaps the child, and first, when it has a watcher, waits for it to end without
    /// reaping it, closes the watcher's pipe (which ends the watcher: its kill then
    /// finds the child a zombie) and reaps the watcher; only then records how the
    /// child ended.
    private static func startReaping(_ pid: pid_t, watcher: (pid: pid_t, lifeline: CInt)?, _ shared: Shared) {
        let thread = Thread {
            if let watcher {
                var info = siginfo_t()
                while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
                close(watcher.lifeline)
                var watcherStatus: CInt = 0
                while waitpid(watcher.pid, &watcherStatus, 0) < 0 && errno == EINTR {}
            }
            var status: CInt = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            let ended: Termination = status & 0x7F == 0 ? .exited((status >> 8) & 0xFF) : .signaled(status & 0x7F)
            shared.locked {
                shared.termination = ended
                shared.condition.broadcast()
            }
        }
        thread.start()
    }

    /// The next line of standard output not yet returned, waiting for it until the
    /// deadline; nil if none came (or the output ended).
    public func nextLine(timeout: Duration) -> String? {
        var line: String?
        _ = shared.waitUntil(timeout) {
            if shared.consumed < shared.outputLines.count {
                line = shared.outputLines[shared.consumed]
                shared.consumed += 1
                return true
            }
            return shared.outputClosed
        }
        return line
    }

    /// Skips lines until one satisfies `predicate`, and returns it; nil at the deadline.
    public func waitForLine(timeout: Duration, where predicate: (String) -> Bool) -> String? {
        let deadline = ContinuousClock.now + timeout
        while case let remaining = deadline - ContinuousClock.now, remaining > .zero {
            guard let line = nextLine(timeout: remaining) else { return nil }
            if predicate(line) { return line }
        }
        return nil
    }

    /// Waits until the lines of standard output so far satisfy `condition`; false at
    /// the deadline, or when the output ended without satisfying it.
    public func waitForLines(timeout: Duration, until condition: ([String]) -> Bool) -> Bool {
        shared.waitUntil(timeout) { condition(shared.outputLines) || shared.outputClosed } && condition(lines)
    }

    /// Waits until standard error contains `text`; false at the deadline.
    public func waitForError(containing text: String, timeout: Duration) -> Bool {
        shared.waitUntil(timeout) {
            shared.errorText.contains(text) || (shared.errorClosed && shared.termination != nil)
        } && standardError.contains(text)
    }

    /// Every line of standard output so far.
    public var lines: [String] { shared.locked { shared.outputLines } }

    /// Everything written to standard error so far.
    public var standardError: String { shared.locked { shared.errorText } }

    /// Writes to the child's standard input.
    public func send(_ text: String) {
        shared.locked {
            guard shared.inputOpen else { return }
            _ = text.withCString { write(standardInput, $0, strlen($0)) }
        }
    }

    /// Closes the child's standard input. Closing twice would close whatever
    /// descriptor reused the number in between, so only the first call closes.
    public func closeInput() {
        let open = shared.locked {
            defer { shared.inputOpen = false }
            return shared.inputOpen
        }
        if open { close(standardInput) }
    }

    /// Sends a signal, unless the process was already reaped (its pid may be reused).
    public func signal(_ signal: CInt) {
        shared.locked {
            if shared.termination == nil { _ = Glibc.kill(pid, signal) }
        }
    }

    /// The process's state letter from /proc (R running, S sleeping, T stopped, ...).
    public var state: Character? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")")
        else { return nil }
        return stat[close...].dropFirst(2).first
    }

    /// Waits for the process to end and for all of its output and error output to
    /// be read; nil if that has not happened by the deadline.
    @discardableResult
    public func wait(timeout: Duration) -> Termination? {
        var ended: Termination?
        _ = shared.waitUntil(timeout) {
            guard shared.termination != nil && shared.outputClosed && shared.errorClosed else { return false }
            ended = shared.termination
            return true
        }
        return ended
    }

    /// Kills the process with SIGKILL and reaps it.
    @discardableResult
    public func kill() -> Termination? {
        signal(SIGKILL)
        return wait(timeout: .seconds(30))
    }

    deinit {
        kill()
        closeInput()
    }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
