import ChildProcess
import Foundation
import Glibc
import Testing
import TestSupport
@testable import SuiteDefaults

/// The hostile cases that the tools take part in (Tests/SuiteDefaultsTests/HostileTests.swift
/// has the rest): a suite-stress run over forking processes, and the tools facing a
/// stopped lock holder.
@Suite("Hostile input and unlucky deployments, with the tools")
struct HostileToolTests {
    let directory = TemporaryDirectory()

    // MARK: fork

    @Test func forkedProcessesLoseNoIncrement() throws {
        // A process forks while another of its threads is inside a transaction; the
        // parent and its children then increment together (suite-stress fork).
        let tool = try run(program: "suite-stress",
                           ["fork", "--iterations", "3", "--processes", "2", "--threads", "2", "--dir", directory.path],
                           within: .seconds(300))
        #expect(tool.status == .exited(0), "\(tool.lines) \(tool.errors)")
        #expect(tool.lines.contains { $0.hasPrefix("fork: ") && $0.contains(" 0 lost, 0 torn") }, "\(tool.lines)")
    }

    // MARK: A stopped lock holder

    @Test func aStoppedLockHolderTimesOutNamingIt() throws {
        let suite = try Suite(named: "stuck", directory: directory.url, options: .init(lockTimeout: .milliseconds(300)))
        try suite.set("v1", forKey: "k")
        #expect(suite.string(forKey: "k") == "v1")
        let recorder = DiagnosticsRecorder(directory)
        // Another process writes (so that this one's cache is stale), then one stops holding the lock.
        try startWorker("try-set", in: directory, suite: "stuck", ["key": "k", "value": "v2"]).expectSuccess(within: .seconds(60))
        let holder = try startWorker("hold-lock", in: directory, suite: "stuck")
        holder.expectLine(startingWith: "holding")
        holder.signal(SIGSTOP)
        defer { _ = holder.kill() }

        let writeError = #expect(throws: SuiteError.self) { try suite.set("v3", forKey: "k") }
        #expect(writeError?.code == .lockTimeout)
        #expect(writeError?.lockHolder == holder.pid)
        #expect(writeError?.message.contains("\(holder.pid)") == true)
        // A read waits for no lock holder between commits: the shared header and the
        // file give the last commit.
        try suite.reload()
        #expect(suite.string(forKey: "k") == "v2")
        #expect(!recorder.kinds.contains(.refreshFailed))
        // A new process cannot even open it in time, and says so too.
        let opener = try startWorker("get", in: directory, suite: "stuck", ["key": "k", "lock-timeout-ms": "200"])
        opener.expectSuccess(within: .seconds(60))
        #expect(opener.lines.contains { $0.hasPrefix("error lockTimeout") }, "\(opener.lines)")

        // The tools give up in their time too, from their start.
        let write = try run(program: "suite-defaults", ["--dir", directory.path, "--timeout", "0.3", "write", "stuck", "k", "v4"],
                            within: .seconds(20))
        #expect(write.status == .exited(3))
        #expect(write.errors.contains("\(holder.pid)"), "\(write.errors)")
        let watch = try run(program: "suite-watch", ["--dir", directory.path, "--count", "1", "--timeout", "0.5", "stuck"],
                            within: .seconds(20))
        #expect(watch.status == .exited(1))

        holder.signal(SIGCONT)
        _ = holder.kill()
        try suite.set("v3", forKey: "k")
        #expect(suite.string(forKey: "k") == "v3")
    }

    @Test func aWriterStoppedInsideItsCommitHoldsReadsToTheirTimeout() throws {
        let suite = try Suite(named: "stuck", directory: directory.url, options: .init(lockTimeout: .milliseconds(300)))
        try suite.set("v1", forKey: "k")
        let recorder = DiagnosticsRecorder(directory)
        // Another process writes (so that this one's cache is stale), then one stops
        // inside a commit: what the header says is not settled.
        try startWorker("try-set", in: directory, suite: "stuck", ["key": "k", "value": "v2"]).expectSuccess(within: .seconds(60))
        let writer = try startWorker("pause", in: directory, suite: "stuck", ["point": "commitStarted", "key": "k", "value": "v3"])
        writer.expectLine(startingWith: "paused")
        defer { _ = writer.kill() }

        let reloadError = #expect(throws: SuiteError.self) { try suite.reload() }
        #expect(reloadError?.code == .lockTimeout)
        #expect(reloadError?.lockHolder == writer.pid)
        // A read answers from what it read before, and says so.
        #expect(suite.string(forKey: "k") == "v1")
        #expect(recorder.kinds.contains(.refreshFailed))

        // Once the writer is gone, its commit is found unfinished and v2 stands.
        _ = writer.kill()
        try suite.reload()
        #expect(suite.string(forKey: "k") == "v2")
    }
}
