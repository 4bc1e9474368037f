import ChildProcess
import Foundation
import Testing
import TestSupport
@testable import SuiteDefaults

/// Real processes sharing one suite. Bounded: small counts, deadlines on every wait.
@Suite("Several processes share one suite", .serialized)
struct MultiProcessTests {
    let directory = TemporaryDirectory()

    @Test func concurrentCountersLoseNoIncrement() throws {
        let processes = 4, threads = 2, increments = 250
        let workers = try (0..<processes).map { _ in
            try startWorker("increment", in: directory, suite: "counter",
                            ["threads": "\(threads)", "count": "\(increments)", "compaction-slack": "2048"])
        }
        for worker in workers {
            worker.expectLine(startingWith: "done \(threads * increments)")
            worker.expectSuccess()
        }
        let suite = try Suite(named: "counter", directory: directory.url)
        #expect(suite.integer(forKey: "counter") == processes * threads * increments)
    }

    @Test func distinctKeyWritersLoseNoKey() throws {
        let writers = 4, keys = 150
        let workers = try (0..<writers).map { index in
            try startWorker("write-keys", in: directory, suite: "keys",
                            ["prefix": "w\(index)", "count": "\(keys)", "compaction-slack": "1024"])
        }
        for worker in workers {
            worker.expectLine(startingWith: "done")
            worker.expectSuccess()
        }
        let stored = try Suite(named: "keys", directory: directory.url).storedValues()
        #expect(stored.count == writers * keys)
        for writer in 0..<writers {
            for key in 0..<keys where stored["w\(writer).\(key)"] != .integer(key) {
                Issue.record("w\(writer).\(key) is \(String(describing: stored["w\(writer).\(key)"]))")
            }
        }
    }

    @Test func readersNeverSeeATornOrOlderState() throws {
        let readers = try (0..<2).map { _ in try startWorker("invariant-reader", in: directory, suite: "pairs") }
        for reader in readers { reader.expectLine(startingWith: "opened") }
        let writers = try (0..<2).map { _ in
            try startWorker("invariant-writer", in: directory, suite: "pairs", ["count": "300", "compaction-slack": "1024"])
        }
        for writer in writers {
            writer.expectLine(startingWith: "done")
            writer.expectSuccess()
        }
        try Suite(named: "pairs", directory: directory.url).set(true, forKey: "stop")
        for reader in readers {
            let summary = reader.expectLine(startingWith: "reads ")
            reader.expectSuccess()
            let fields = summary?.split(separator: " ") ?? []
            #expect(fields.count == 8)
            if fields.count == 8 {
                #expect(Int(fields[1]) ?? 0 > 0, "the reader read")
                #expect(fields[3] == "0", "torn states seen: \(summary ?? "")")
                #expect(fields[5] == "0", "versions going back: \(summary ?? "")")
                #expect(fields[7] == "600")
            }
        }
    }

    @Test func aReadSeesEveryWriteThatReturnedInAnotherProcess() throws {
        let suite = try Suite(named: "fresh", directory: directory.url)
        #expect(suite.string(forKey: "k") == nil)  // cache the state
        for round in 0..<5 {
            let writer = try startWorker("try-set", in: directory, suite: "fresh", ["key": "k", "value": "v\(round)"])
            writer.expectLine(startingWith: "ok")
            writer.expectSuccess()
            #expect(suite.string(forKey: "k") == "v\(round)", "no synchronize() needed")
            try suite.set("mine\(round)", forKey: "k")
            let reader = try startWorker("get", in: directory, suite: "fresh", ["key": "k"])
            reader.expectLine(startingWith: "value \"mine\(round)\"")
            reader.expectSuccess()
        }
    }

    @Test func setIfAbsentRacesConvergeOnOneValue() throws {
        for trial in 0..<8 {
            let suite = "race\(trial)"
            let racers = try (0..<5).map { index in
                try startWorker("set-if-absent", in: directory, suite: suite, ["key": "units.system", "value": "racer\(index)"])
            }
            for racer in racers { racer.expectLine(startingWith: "opened") }
            for racer in racers { racer.send("go\n") }
            let answers = racers.map { racer -> String? in
                let line = racer.expectLine(startingWith: "stored ")
                racer.expectSuccess()
                return line.map { String($0.dropFirst("stored ".count)) }
            }
            let stored = try Suite(named: suite, directory: directory.url).string(forKey: "units.system")
            #expect(stored != nil)
            #expect(answers.allSatisfy { $0 == stored }, "trial \(trial): \(answers) but \(stored ?? "nothing") stored")
        }
    }

    @Test func aDeletedLockFileIsFollowedByTheNextWrite() throws {
        let suite = try Suite(named: "relocked", directory: directory.url)
        try suite.set("before", forKey: "a")
        #expect(unlink(directory.file("relocked.suite.lock").path) == 0)
        let writer = try startWorker("try-set", in: directory, suite: "relocked", ["key": "b", "value": "other"])
        writer.expectLine(startingWith: "ok")
        writer.expectSuccess()
        try suite.set("after", forKey: "c")
        #expect(suite.storedValues() == ["a": "before", "b": "other", "c": "after"])
    }

    /// A writer that waits for another process's lock reads what was committed
    /// meanwhile while it waits, as far as it can without the lock, not once it holds
    /// the lock: every other writer would wait through that reading too.
    @Test func aWaitingWriterCatchesUpBeforeItHoldsTheLock() throws {
        let suite = try Suite(named: "waiting", directory: directory.url, options: .init(lockTimeout: .seconds(60)))
        try suite.set("mine", forKey: "a")
        try writeFromAnotherProcess("b", "theirs", in: directory.url, suite: "waiting")
        #expect(suite.store.contentsAsLastRead["b"] == nil, "nothing here has read b yet")
        let holder = try startWorker("hold-lock", in: directory, suite: "waiting")
        holder.expectLine(startingWith: "holding")
        let wrote = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            do { try suite.set("waited", forKey: "c") } catch { Issue.record("the waiting write failed: \(error)") }
            wrote.signal()
        }
        let deadline = ContinuousClock.now + .seconds(20)
        while suite.store.contentsAsLastRead["b"] == nil, ContinuousClock.now < deadline { usleep(1_000) }
        let seen = suite.store.contentsAsLastRead
        #expect(seen["b"] == "theirs", "read while the other process held the lock")
        #expect(seen["c"] == nil, "the write still waits for the lock")
        _ = holder.kill()
        #expect(wrote.wait(timeout: .now() + 60) == .success)
        #expect(suite.storedValues() == ["a": "mine", "b": "theirs", "c": "waited"], "the holder's transaction never committed")
    }
}
