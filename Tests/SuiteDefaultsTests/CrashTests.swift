import ChildProcess
import Foundation
import Glibc
import Testing
import ToolSupport
import TestSupport
@_spi(Testing) @testable import SuiteDefaults

/// Writers killed with SIGKILL, at chosen points inside a commit and at random.
@Suite("Processes killed at any instant leave a suite that opens", .serialized)
struct CrashTests {
    let directory = TemporaryDirectory()

    /// Kills a writer stopped at `point` while it stores victim = "v", and checks what
    /// the next process finds.
    func killWriter(at point: SuiteFaultInjection.Point, extra: [String: String] = [:]) throws -> (Suite, [SuiteDiagnostic.Kind]) {
        let recorder = DiagnosticsRecorder(directory)
        let name = "crash-\(point)"
        let suite = try Suite(named: name, directory: directory.url)
        for index in 0..<20 { try suite.set(index, forKey: "acked.\(index)") }

        let writer = try startWorker("pause", in: directory, suite: name,
                                     ["point": "\(point)", "key": "victim", "value": "v"].merging(extra) { $1 })
        writer.expectLine(startingWith: "paused \(point)")
        #expect(writer.kill() == .signaled(SIGKILL))

        // The kernel released the dead writer's lock: this write proceeds.
        try suite.set("after", forKey: "survivor")
        for index in 0..<20 where suite.integer(forKey: "acked.\(index)") != index {
            Issue.record("acknowledged write acked.\(index) lost after a kill at \(point)")
        }
        #expect(suite.string(forKey: "survivor") == "after")
        // A process reading the file from scratch finds it intact and equal.
        let fresh = try startWorker("get", in: directory, suite: name, ["key": "survivor"])
        fresh.expectLine(startingWith: "value \"after\"")
        fresh.expectSuccess()
        #expect(!fresh.lines.contains { $0.hasPrefix("diagnostic") }, "a second look finds nothing to repair: \(fresh.lines)")
        return (suite, recorder.kinds)
    }

    @Test func killedBeforeWritingAnything() throws {
        let (suite, diagnostics) = try killWriter(at: .commitStarted)
        #expect(suite.string(forKey: "victim") == nil)
        #expect(diagnostics == [.recoveredInterruptedCommit])
    }

    @Test func killedHalfWayThroughTheRecord() throws {
        let (suite, diagnostics) = try killWriter(at: .partialRecordWritten)
        #expect(suite.string(forKey: "victim") == nil, "half a record is never applied")
        #expect(diagnostics == [.discardedTornWrite])
    }

    @Test func killedAfterWritingBeforePublishing() throws {
        // The write never returned, so either outcome is allowed; it must be whole.
        let (suite, diagnostics) = try killWriter(at: .recordWritten)
        #expect([nil, "v"].contains(suite.string(forKey: "victim")))
        #expect(diagnostics == [.recoveredInterruptedCommit])
    }

    @Test func killedAfterPublishingWhileHoldingTheLock() throws {
        let (suite, diagnostics) = try killWriter(at: .committed)
        #expect(suite.string(forKey: "victim") == "v", "a published commit is kept")
        #expect(diagnostics.isEmpty)
    }

    @Test func killedInTheMiddleOfACompaction() throws {
        let (suite, diagnostics) = try killWriter(at: .compactionRenamed, extra: ["compact": "yes"])
        #expect(suite.string(forKey: "victim") == "v")
        #expect(diagnostics == [.recoveredInterruptedCommit])
        #expect(!directory.names().contains { $0.contains(".tmp.") })
    }

    @Test func aDeadLockHolderDoesNotBlockOthers() throws {
        let holder = try startWorker("hold-lock", in: directory, suite: "held")
        holder.expectLine(startingWith: "holding")
        // Even opening waits for the lock (it reads under a shared lock): wait until
        // the second worker says it waits for it.
        let waiting = try startWorker("increment", in: directory, suite: "held",
                                      ["threads": "1", "count": "10", "report-waiting": "yes"])
        waiting.expectLine(startingWith: "waiting for the lock")
        #expect(!waiting.lines.contains { $0.hasPrefix("done") })
        holder.kill()
        waiting.expectLine(startingWith: "done 10")
        waiting.expectSuccess()
        let suite = try Suite(named: "held", directory: directory.url)
        #expect(suite.integer(forKey: "counter") == 10)
        #expect(suite.string(forKey: "holder") == nil, "the dead holder's transaction never committed")
    }

    @Test func writersKilledAtRandomInstantsLoseNoAcknowledgedWrite() throws {
        var generator = SplitMix64(seed: UInt64(getpid()))
        for trial in 0..<12 {
            let name = "random\(trial)"
            let writer = try startWorker("write-keys", in: directory, suite: name,
                                         ["prefix": "k", "count": "100000", "compaction-slack": "512"])
            let target = 20 + Int(generator.next() % 400)
            writer.expectLine(startingWith: "ack k.\(target)")
            writer.kill()
            let acked = writer.lines.compactMap { line -> Int? in
                line.hasPrefix("ack k.") ? Int(line.dropFirst("ack k.".count)) : nil
            }
            let stored = try Suite(named: name, directory: directory.url).storedValues()
            let last = acked.max() ?? -1
            for index in 0...last where stored["k.\(index)"] != .integer(index) {
                Issue.record("trial \(trial): acknowledged k.\(index) is \(String(describing: stored["k.\(index)"]))")
            }
            #expect(stored.count <= last + 2, "at most the one unacknowledged write in flight may appear")
        }
    }
}
