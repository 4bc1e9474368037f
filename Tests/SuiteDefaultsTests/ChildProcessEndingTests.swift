import ChildProcess
import Foundation
import Glibc
import Testing
import TestSupport

/// A child that does not read its standard input (a server: LocalEtcd's etcd) ends with
/// the process that started it, however that one ends (`endsWithThisProcess`).
@Suite("Children that end with their starter")
struct ChildProcessEndingTests {
    /// `sleep`, started with `endsWithThisProcess` by a worker that is then SIGKILLed
    /// (no deinit, no cleanup of its own), is gone soon after, and so is its watcher.
    @Test func aChildThatNeverReadsItsInputEndsWhenItsStarterIsKilled() throws {
        let directory = TemporaryDirectory()
        let (pid, leftRunning) = try lingeringChild(in: directory, endsWithUs: true, within: .seconds(20))
        #expect(!leftRunning, "process \(pid) (sleep) or its watcher still ran 20 s after its starter was SIGKILLed")
    }

    /// The control: the same child started without it outlives the killed worker,
    /// which is what the option is for (this test kills it afterwards).
    @Test func withoutItTheChildOutlivesItsStarter() throws {
        let directory = TemporaryDirectory()
        let (pid, leftRunning) = try lingeringChild(in: directory, endsWithUs: false, within: .seconds(1))
        #expect(leftRunning, "process \(pid) (sleep) ended within 1 s of its starter although nothing ended it")
    }

    /// In this process: a child started with it is reported as it ended (by itself, or
    /// killed), and its watcher is gone once it has been reaped.
    @Test func itsEndIsReportedAndItsWatcherReaped() throws {
        let exiting = try ChildProcess(executable: "/bin/sh", arguments: ["-c", "echo ready; exit 3"], endsWithThisProcess: true)
        #expect(exiting.nextLine(timeout: .seconds(30)) == "ready")
        #expect(exiting.wait(timeout: .seconds(30)) == .exited(3))
        #expect(Self.watchers(of: exiting.pid).isEmpty)

        let killed = try ChildProcess(executable: "/bin/sleep", arguments: ["300"], endsWithThisProcess: true)
        #expect(Self.watchers(of: killed.pid).count == 1, "sleep's watcher")
        #expect(killed.kill() == .signaled(SIGKILL))
        #expect(Self.watchers(of: killed.pid).isEmpty && !Self.isRunning(killed.pid))
    }

    /// Starts the worker that starts `sleep`, SIGKILLs the worker, and waits up to
    /// `timeout` for `sleep`, and with the option its watcher, to have ended; kills
    /// what is left, and returns whether anything was.
    private func lingeringChild(in directory: TemporaryDirectory, endsWithUs: Bool, within timeout: Duration) throws -> (pid: pid_t, leftRunning: Bool) {
        let worker = try startWorker("spawn-lingering", in: directory, suite: "lingering",
                                     endsWithUs ? [:] : ["ends-with-us": "no"])
        let pid = try #require(worker.expectLine(startingWith: "spawned ").flatMap { pid_t($0.dropFirst("spawned ".count)) })
        let running = { (Self.isRunning(pid) ? [pid] : []) + Self.watchers(of: pid) }
        #expect(running().count == (endsWithUs ? 2 : 1), "sleep, and with the option its watcher")
        worker.kill()
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline && !running().isEmpty { usleep(10_000) }
        let left = running()
        for member in left { _ = Glibc.kill(member, SIGKILL) }
        return (pid, !left.isEmpty)
    }

    /// Whether process `pid` exists and is not a zombie.
    static func isRunning(_ pid: pid_t) -> Bool {
        state(of: pid).map { $0 != "Z" } ?? false
    }

    /// The running watchers of `pid`: `/bin/sh` processes whose arguments end with
    /// `kill -KILL PID` and name them "child-process-watcher".
    static func watchers(of pid: pid_t) -> [pid_t] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap(pid_t.init).filter { candidate in
            guard isRunning(candidate), let arguments = FileManager.default.contents(atPath: "/proc/\(candidate)/cmdline") else {
                return false
            }
            let words = arguments.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            return words.last == "child-process-watcher" && words.contains { $0.hasSuffix("kill -KILL \(pid)") }
        }
    }

    /// A process's state letter, from /proc/PID/stat: "PID (NAME) STATE ...".
    static func state(of pid: pid_t) -> Substring? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let end = stat.lastIndex(of: ")") else {
            return nil
        }
        return stat[stat.index(after: end)...].split(separator: " ").first
    }
}
