import Foundation
import Glibc

/// A child process started with `posix_spawn`, whose standard output is read line by
/// line as it arrives, and which is always reaped: waiting for it, or at deinit by
/// SIGKILL and `waitpid`.
///
/// Every wait takes a deadline, so a test waits for events, never for time.
public final class ChildProcess: @unchecked Sendable {
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

    private static let spawnLock = NSLock()

    public let pid: pid_t
    public let executable: String
    private let standardInput: CInt
    // Guarded by `condition`.
    private let condition = NSCondition()
    private var outputLines: [String] = []
    private var errorText = ""
    private var consumed = 0
    private var termination: Termination?
    private var outputClosed = false
    private var errorClosed = false
    private var inputOpen = true

    /// Starts `executable` with `arguments`; its standard input, output and error are
    /// pipes to this process.
    public init(executable: String, arguments: [String], environment: [String: String]? = nil) throws {
        self.executable = executable
        // Pipes are made and the child spawned under one lock, so that no other
        // child spawned from here at the same moment inherits these pipes' ends
        // (which would keep them open and hide the end of the output).
        Self.spawnLock.lock()
        defer { Self.spawnLock.unlock() }
        var input: [CInt] = [0, 0], output: [CInt] = [0, 0], error: [CInt] = [0, 0]
        for index in 0..<3 {
            let made = index == 0 ? pipe(&input) : index == 1 ? pipe(&output) : pipe(&error)
            guard made == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        }
        for descriptor in input + output + error { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, input[0], 0)
        posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        posix_spawn_file_actions_adddup2(&actions, error[1], 2)

        let environmentPairs = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environmentPairs.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, executable, &actions, nil, argv, envp)
        close(input[0])
        close(output[1])
        close(error[1])
        guard spawned == 0 else {
            close(input[1])
            close(output[0])
            close(error[0])
            throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO)
        }
        pid = child
        standardInput = input[1]
        startReading(output[0], isOutput: true)
        startReading(error[0], isOutput: false)
        startReaping()
    }

    private func startReading(_ descriptor: CInt, isOutput: Bool) {
        let thread = Thread { [self] in
            var pending = [UInt8]()
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                pending += buffer[0..<count]
                condition.lock()
                if isOutput {
                    while let newline = pending.firstIndex(of: 10) {
                        outputLines.append(String(decoding: pending[..<newline], as: UTF8.self))
                        pending.removeSubrange(...newline)
                    }
                } else {
                    errorText += String(decoding: pending, as: UTF8.self)
                    pending.removeAll()
                }
                condition.broadcast()
                condition.unlock()
            }
            close(descriptor)
            condition.lock()
            if isOutput {
                if !pending.isEmpty { outputLines.append(String(decoding: pending, as: UTF8.self)) }
                outputClosed = true
            } else {
                errorClosed = true
            }
            condition.broadcast()
            condition.unlock()
        }
        thread.start()
    }

    private func startReaping() {
        let thread = Thread { [self] in
            var status: CInt = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            let ended: Termination = status & 0x7F == 0 ? .exited((status >> 8) & 0xFF) : .signaled(status & 0x7F)
            condition.lock()
            termination = ended
            condition.broadcast()
            condition.unlock()
        }
        thread.start()
    }

    /// Waits until `ready` holds for the state, or the deadline passes.
    private func waitUntil(_ timeout: Duration, _ ready: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout.seconds)
        condition.lock()
        defer { condition.unlock() }
        while !ready() {
            if !condition.wait(until: deadline) { return ready() }
        }
        return true
    }

    /// The next line of standard output not yet returned, waiting for it until the
    /// deadline; nil if none came (or the output ended).
    public func nextLine(timeout: Duration) -> String? {
        var line: String?
        _ = waitUntil(timeout) {
            if consumed < outputLines.count {
                line = outputLines[consumed]
                consumed += 1
                return true
            }
            return outputClosed
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

    /// Every line of standard output so far.
    public var lines: [String] {
        condition.lock()
        defer { condition.unlock() }
        return outputLines
    }

    /// Everything written to standard error so far.
    public var standardError: String {
        condition.lock()
        defer { condition.unlock() }
        return errorText
    }

    /// Writes to the child's standard input.
    public func send(_ text: String) {
        condition.lock()
        defer { condition.unlock() }
        guard inputOpen else { return }
        _ = text.withCString { write(standardInput, $0, strlen($0)) }
    }

    /// Closes the child's standard input. Closing twice would close whatever
    /// descriptor reused the number in between, so only the first call closes.
    public func closeInput() {
        condition.lock()
        let open = inputOpen
        inputOpen = false
        condition.unlock()
        if open { close(standardInput) }
    }

    public func signal(_ signal: CInt) {
        condition.lock()
        let running = termination == nil
        condition.unlock()
        if running { _ = Glibc.kill(pid, signal) }
    }

    /// Waits for the process to end and for all of its output and error output to
    /// be read; nil if that has not happened by the deadline.
    @discardableResult
    public func wait(timeout: Duration) -> Termination? {
        var ended: Termination?
        _ = waitUntil(timeout) {
            guard termination != nil && outputClosed && errorClosed else { return false }
            ended = termination
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
        condition.lock()
        let running = termination == nil
        condition.unlock()
        if running {
            _ = Glibc.kill(pid, SIGKILL)
            _ = wait(timeout: .seconds(30))
        }
        closeInput()
    }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
