import Foundation
import Glibc

/// What /proc/locks says about the flocks on one file: which processes hold them.
/// The kernel shows this nowhere else, so tests and tools that must know whether a
/// child holds a lock (before stopping or killing it) read it here. A line reads
/// "1: FLOCK  ADVISORY  READ 1234 fd:01:123456 0 EOF"; a waiter's line has "->"
/// (suites wait for their lock on a futex, so their waiters do not show here).
public struct ProcessLocks {
    let inode: UInt64

    public init?(file path: String) {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        inode = UInt64(status.st_ino)
    }

    private func holderLines() -> [[Substring]] {
        let text = (try? String(contentsOfFile: "/proc/locks", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").filter { !$0.contains("->") }.map { $0.split(separator: " ") }
            .filter { fields in fields.contains { $0.hasSuffix(":\(inode)") } }
    }

    public func isHeld(by pid: pid_t) -> Bool { holderLines().contains { $0.contains(Substring("\(pid)")) } }
}

/// Polls `condition` until it holds or the deadline passes: for states the kernel
/// shows only in /proc, which sends no event.
public func poll(within timeout: Duration, _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        usleep(1000)
    }
    return condition()
}

extension ChildProcess {
    /// Stops the process (SIGSTOP) at a moment it holds no lock on the file at
    /// `path`, so that no other process is kept waiting for a stopped one.
    public func stopHoldingNoLock(on path: String, within timeout: Duration = .seconds(60)) -> Bool {
        guard let locks = ProcessLocks(file: path) else { return false }
        return poll(within: timeout) {
            signal(SIGSTOP)
            guard poll(within: .seconds(10), { state == "T" }) else { return false }
            if !locks.isHeld(by: pid) { return true }
            signal(SIGCONT)
            return false
        }
    }
}
