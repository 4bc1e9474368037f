import ChildProcess
import Foundation
import Glibc
import Testing
import TestSupport
@_spi(Testing) @testable import SuiteDefaults

/// The count of processes waiting for the lock, at offset 68 of the lock file at
/// `path`; nil while the file is too short to hold it.
func waiterCount(ofLockFile path: String) -> UInt32? {
    guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
    defer { try? handle.close() }
    guard (try? handle.seek(toOffset: 68)) != nil, let bytes = try? handle.read(upToCount: 4), bytes.count == 4 else { return nil }
    return bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
}

/// A waiter killed while it counts itself in the shared page used to leave the count
/// above 0 until the header was next set up (a writer dying inside a commit, or a
/// reboot), and every release of the lock a futex wake-up call meanwhile. Releases now
/// clear a count that no waiter has confirmed for `LockWait.staleCountMilliseconds`,
/// and a live waiter whose count was cleared counts itself again.
@Suite("Leftover waiter counts", .serialized)
struct LeftoverWaiterCountTests {
    let directory = TemporaryDirectory()

    /// A holder and one waiter that has counted itself; the waiter is `waiter`.
    func holderAndCountedWaiter(_ name: String) throws -> (holder: ChildProcess, waiter: ChildProcess, lockPath: String) {
        try Suite(named: name, directory: directory.url).set(0, forKey: "k")
        let lockPath = directory.file(name + ".suite.lock").path
        let holder = try startWorker("hold-lock", in: directory, suite: name)
        holder.expectLine(startingWith: "holding")
        let waiter = try startWorker("try-set", in: directory, suite: name, ["key": "w", "value": "set", "lock-timeout-ms": "60000"])
        // It counts itself once it has spun for 100 µs.
        #expect(poll(within: .seconds(30)) { waiterCount(ofLockFile: lockPath) == 1 }, "\(waiterCount(ofLockFile: lockPath).map(String.init) ?? "nil")")
        return (holder, waiter, lockPath)
    }

    @Test func aCountLeftByAKilledWaiterIsClearedByLaterReleases() throws {
        let (holder, waiter, lockPath) = try holderAndCountedWaiter("killed")
        _ = waiter.kill()
        _ = holder.kill()
        #expect(waiterCount(ofLockFile: lockPath) == 1, "nobody takes the killed waiter's count back")
        let suite = try Suite(named: "killed", directory: directory.url)
        var writes = 0
        let cleared = poll(within: .seconds(20)) {
            writes += 1
            try? suite.set(writes, forKey: "k")
            return waiterCount(ofLockFile: lockPath) == 0
        }
        #expect(cleared, "still \(waiterCount(ofLockFile: lockPath).map(String.init) ?? "nil") after \(writes) writes")
        #expect(suite.integer(forKey: "k") == writes)
    }

    /// A waiter stopped (SIGSTOP) for longer than the count is trusted: a release
    /// clears its count; continued while another process holds the lock, it counts
    /// itself again, is woken by that holder's release, writes, and the count ends at 0.
    @Test func aWaiterWhoseCountWasClearedCountsItselfAgainAndIsWoken() throws {
        let (first, waiter, lockPath) = try holderAndCountedWaiter("stopped")
        waiter.signal(SIGSTOP)
        _ = first.kill()
        let suite = try Suite(named: "stopped", directory: directory.url)
        var writes = 0
        #expect(poll(within: .seconds(20)) {
            writes += 1
            try? suite.set(writes, forKey: "k")
            return waiterCount(ofLockFile: lockPath) == 0
        }, "a stopped waiter's count is taken for a leftover after \(LockWait.staleCountMilliseconds) ms")
        let second = try startWorker("hold-lock", in: directory, suite: "stopped")
        defer { _ = second.kill() }
        second.expectLine(startingWith: "holding")
        waiter.signal(SIGCONT)
        #expect(poll(within: .seconds(30)) { waiterCount(ofLockFile: lockPath) == 1 }, "the continued waiter counts itself again")
        _ = second.kill()
        waiter.expectLine(startingWith: "ok", within: .seconds(60))
        waiter.expectSuccess()
        #expect(waiterCount(ofLockFile: lockPath) == 0)
        #expect(try Suite(named: "stopped", directory: directory.url).string(forKey: "w") == "set")
    }
}
