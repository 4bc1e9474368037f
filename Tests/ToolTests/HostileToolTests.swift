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

    /// Runs a worker to its end and returns its report lines.
    func outcome(_ command: String, suite: String, _ options: [String: String] = [:]) throws -> [String] {
        let worker = try startWorker(command, in: directory, suite: suite, options)
        worker.expectSuccess(within: .seconds(60))
        return worker.lines
    }

    // MARK: fork

    @Test func forkedProcessesLoseNoIncrement() throws {
        // A process forks while another of its threads is inside a transaction; the
        // parent and its children then increment together (suite-stress fork).
        let tool = try ChildProcess(executable: Products.path("suite-stress"),
                                    arguments: ["fork", "--iterations", "3", "--processes", "2", "--threads", "2", "--dir", directory.path])
        #expect(tool.wait(timeout: .seconds(300)) == .exited(0), "\(tool.lines) \(tool.standardError)")
        #expect(tool.lines.contains { $0.hasPrefix("fork: ") && $0.contains(" 0 lost, 0 torn") }, "\(tool.lines)")
    }
    // MARK: A stopped lock holder

    @Test func aStoppedLockHolderTimesOutNamingIt() throws {
        let suite = try Suite(named: "stuck", directory: directory.url, options: .init(lockTimeout: .milliseconds(300)))
        try suite.set("v1", forKey: "k")
        #expect(suite.string(forKey: "k") == "v1")
        let recorder = DiagnosticsRecorder(directory)
        // Another process writes (so that this one's cache is stale), then one stops holding the lock.
        _ = try outcome("try-set", suite: "stuck", ["key": "k", "value": "v2"])
        let holder = try startWorker("hold-lock", in: directory, suite: "stuck")
        holder.expectLine(startingWith: "holding")
        holder.signal(SIGSTOP)
        defer { _ = holder.kill() }

        let writeError = #expect(throws: SuiteError.self) { try suite.set("v3", forKey: "k") }
        #expect(writeError?.code == .lockTimeout)
        #expect(writeError?.lockHolder == holder.pid)
        #expect(writeError?.message.contains("\(holder.pid)") == true)
        let reloadError = #expect(throws: SuiteError.self) { try suite.reload() }
        #expect(reloadError?.code == .lockTimeout)
        // A read answers from what it read before, and says so.
        #expect(suite.string(forKey: "k") == "v1")
        #expect(recorder.kinds.contains(.refreshFailed))
        // A new process cannot even open it in time, and says so too.
        let opener = try outcome("get", suite: "stuck", ["key": "k", "lock-timeout-ms": "200"])
        #expect(opener.contains { $0.hasPrefix("error lockTimeout") }, "\(opener)")

        // The tools give up in their time too, from their start.
        let write = try ChildProcess(executable: Products.path("suite-defaults"),
                                     arguments: ["--dir", directory.path, "--timeout", "0.3", "write", "stuck", "k", "v4"])
        #expect(write.wait(timeout: .seconds(20)) == .exited(3))
        #expect(write.standardError.contains("\(holder.pid)"), "\(write.standardError)")
        let watch = try ChildProcess(executable: Products.path("suite-watch"),
                                     arguments: ["--dir", directory.path, "--count", "1", "--timeout", "0.5", "stuck"])
        #expect(watch.wait(timeout: .seconds(20)) == .exited(1))

        holder.signal(SIGCONT)
        _ = holder.kill()
        try suite.set("v3", forKey: "k")
        #expect(suite.string(forKey: "k") == "v3")
    }
}
