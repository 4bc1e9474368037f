import Glibc

/// A child made with `fork()`, for what only a fresh process state shows: the child
/// has none of the parent's threads, and the library's process-wide state (the change
/// watcher's instance and reader) starts over there, watching only what the child does.
public enum ForkedChild {
    /// Forks; the child runs `body` and exits with what it returns. The parent waits at
    /// most `timeout` (then kills and reaps it): the exit status, or nil when the child
    /// was killed or died of a signal.
    ///
    /// The parent first runs `warmUp`: code the child runs that makes Swift type
    /// metadata the first time (a generic function's, say) takes the runtime's lock,
    /// which another thread of this test process may hold at the fork, and the child
    /// would then wait for it for good.
    public static func run(timeout: Duration = .seconds(60), warmingUp warmUp: () -> Void = {}, _ body: () -> Int32) -> Int32? {
        warmUp()
        let pid = fork()
        if pid == 0 { _exit(body()) }
        guard pid > 0 else { return nil }
        return reap(pid, timeout: timeout)
    }

    /// Waits for child `pid` at most `timeout`, then kills and reaps it: its exit
    /// status, or nil when it was killed or died of a signal.
    public static func reap(_ pid: pid_t, timeout: Duration) -> Int32? {
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
}
