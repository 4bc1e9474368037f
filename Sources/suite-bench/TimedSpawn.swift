import Glibc
import ToolSupport

/// One run of a program from `posix_spawn` to its exit, timed with nothing else in the
/// way: no reader threads (ChildProcess has two), only a pipe that takes its output,
/// which is read once it has exited. For start-up rows, whose programs print a line.
struct TimedSpawn {
    /// From just before `posix_spawn` to `waitpid` returning (the child's exit, reaped).
    var microseconds: Double
    var status: Int32
    /// Its standard output and error, together.
    var output: String

    /// Runs `executable` with `arguments` in this process's environment. The output must
    /// fit the pipe (64 KiB), or the child would block before it exits.
    init(_ executable: String, _ arguments: [String]) throws(ToolError) {
        var channel: [Int32] = [0, 0]
        guard pipe(&channel) == 0 else { throw ToolError(status: 1, message: "pipe: \(String(cString: strerror(errno)))") }
        // Only the child's standard output and error are to hold the pipe (the rows run one at a time).
        for descriptor in channel { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        defer { close(channel[0]) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, channel[1], 1)
        posix_spawn_file_actions_adddup2(&actions, channel[1], 2)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid = pid_t()
        let start = monotonicNanoseconds()
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        close(channel[1])
        guard spawned == 0 else { throw ToolError(status: 1, message: "cannot start \(executable): \(String(cString: strerror(spawned)))") }
        var waitStatus: Int32 = 0
        while waitpid(pid, &waitStatus, 0) < 0 && errno == EINTR {}
        microseconds = Double(monotonicNanoseconds() - start) / 1_000
        // WIFEXITED and WEXITSTATUS, which Swift does not import: the low 7 bits are the
        // signal (0 if it exited), the next 8 the exit status.
        status = waitStatus & 0x7F == 0 ? (waitStatus >> 8) & 0xFF : -(waitStatus & 0x7F)
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(channel[0], $0.baseAddress, $0.count) }
            if count > 0 { bytes += buffer[0..<count] } else if count == 0 || errno != EINTR { break }
        }
        output = String(decoding: bytes, as: UTF8.self)
    }
}
