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
    /// (no deinit, no cleanup of its own), is gone soon after, and so is its watcher:
    /// nothing of its process group runs on.
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
    /// killed), and nothing of its group is left running once it has been reaped.
    @Test func itsEndIsReportedAndItsWatcherReaped() throws {
        let exiting = try ChildProcess(executable: "/bin/sh", arguments: ["-c", "echo ready; exit 3"], endsWithThisProcess: true)
        #expect(exiting.nextLine(timeout: .seconds(30)) == "ready")
        #expect(exiting.wait(timeout: .seconds(30)) == .exited(3))
        #expect(Self.runningMembers(ofGroup: exiting.pid).isEmpty)

        let killed = try ChildProcess(executable: "/bin/sleep", arguments: ["300"], endsWithThisProcess: true)
        #expect(Self.runningMembers(ofGroup: killed.pid).count == 2, "sleep and its watcher, in sleep's group")
        #expect(killed.kill() == .signaled(SIGKILL))
        #expect(Self.runningMembers(ofGroup: killed.pid).isEmpty)
    }

    /// Starts the worker that starts `sleep`, SIGKILLs the worker, and waits up to
    /// `timeout` for `sleep` to have ended, and with the option for its process group (`sleep`
    /// and the watcher) to have nothing running; kills what is left, and returns
    /// whether anything was.
    private func lingeringChild(in directory: TemporaryDirectory, endsWithUs: Bool, within timeout: Duration) throws -> (pid: pid_t, leftRunning: Bool) {
        let worker = try startWorker("spawn-lingering", in: directory, suite: "lingering",
                                     endsWithUs ? [:] : ["ends-with-us": "no"])
        let pid = try #require(worker.expectLine(startingWith: "spawned ").flatMap { pid_t($0.dropFirst("spawned ".count)) })
        // With the option, the child leads a group of its own (without it, it is in
        // this process's group, with every other child of the tests).
        let running = { endsWithUs ? Self.runningMembers(ofGroup: pid) : Self.isRunning(pid) ? [pid] : [] }
        #expect(running().contains(pid))
        worker.kill()
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline && !running().isEmpty { usleep(10_000) }
        let left = running()
        for member in left { _ = Glibc.kill(member, SIGKILL) }
        return (pid, !left.isEmpty)
    }

    /// Whether process `pid` exists and is not a zombie.
    static func isRunning(_ pid: pid_t) -> Bool {
        status(of: pid).map { $0.state != "Z" } ?? false
    }

    /// The processes of process group `group` that run (zombies, which a dead parent
    /// leaves to init to reap, do not).
    static func runningMembers(ofGroup group: pid_t) -> [pid_t] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap(pid_t.init).filter { pid in
            status(of: pid).map { $0.state != "Z" && $0.group == group } ?? false
        }
    }

    /// A process's state letter and group, from /proc/PID/stat: "PID (NAME) STATE PPID PGRP ...".
    static func status(of pid: pid_t) -> (state: Substring, group: pid_t)? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let end = stat.lastIndex(of: ")") else {
            return nil
        }
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        guard fields.count > 2, let group = pid_t(fields[2]) else { return nil }
        return (fields[0], group)
    }
}
