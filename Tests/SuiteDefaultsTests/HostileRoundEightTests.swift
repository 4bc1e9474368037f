import ChildProcess
import Foundation
import Glibc
import Testing
import TestSupport
import ToolSupport
@_spi(Testing) @testable import SuiteDefaults

/// Round eight of attacks (a helper, real processes): a writer that waits for the lock
/// now reads what was published meanwhile before it holds the lock
/// (`catchUpWithoutFileLock` after a busy attempt), and a transaction keeps its one
/// write outside a list (`SuiteTransaction.onlyWrite`, `Commit`). Both held. The round
/// also found that 8 bytes forged in the shared page (a last sequence number just
/// below the limit) stopped every write for good, now fixed
/// (`aForgedLastSequenceJustBelowTheLimitLeavesTheSuiteWritable`), and two older
/// limitations of observers when a data file is cut back to an older copy, marked
/// with `withKnownIssue` (Design.md, "Limitations that remain").
@Suite("Round eight: catching up while waiting for the lock; the one-write transaction", .serialized)
struct HostileRoundEightTests {
    let directory = TemporaryDirectory()

    func scanOnDisk(_ name: String) throws -> DataFileScan {
        let bytes = try #require(directory.bytes(of: name + ".suite"))
        return try bytes.withUnsafeBytes { try DataFileScan.scan($0, committedLength: nil) }
    }

    func contentsOnDisk(_ name: String) throws -> [String: SuiteValue] { try scanOnDisk(name).contents.values }

    /// `allowingTornTail`: for a file that a writer's record cut short ends, which the
    /// next writer cuts off.
    func expectCacheMatchesTheFile(_ suite: Suite, _ name: String, allowingTornTail: Bool = false,
                                   sourceLocation: SourceLocation = #_sourceLocation) throws {
        let scan = try scanOnDisk(name)
        let cached = suite.store.contentsAsLastRead
        #expect(scan.verdict == .intact || (allowingTornTail && scan.verdict == .tornTail), sourceLocation: sourceLocation)
        #expect(cached.values == scan.contents.values, sourceLocation: sourceLocation)
        #expect(cached.liveBytes == scan.contents.liveBytes, sourceLocation: sourceLocation)
        #expect(cached.lastSequence == scan.contents.lastSequence, sourceLocation: sourceLocation)
    }

    /// What breaks these rules: each key's changes form one chain (each old value the
    /// last new one), sequence numbers never go back, and the chains end at `final`.
    static func chainProblems(_ changes: [SuiteChange], from start: [String: SuiteValue] = [:],
                              endAt final: [String: SuiteValue]) -> [String] {
        var last: [String: SuiteValue?] = start.mapValues { $0 }
        var lastSequence: UInt64 = 0
        var problems: [String] = []
        for change in changes where change.kind != .initialValue {
            let previous = last[change.key] ?? nil
            if change.oldValue != previous { problems.append("\(change): old value is not \(previous?.description ?? "(absent)")") }
            if change.sequence < lastSequence { problems.append("\(change): sequence went back from \(lastSequence)") }
            lastSequence = max(lastSequence, change.sequence)
            last[change.key] = change.newValue
        }
        for (key, value) in last where final[key] != value {
            problems.append("\(key): observed last \(value?.description ?? "(absent)"), stored \(final[key]?.description ?? "(absent)")")
        }
        for (key, value) in final where last[key] == nil { problems.append("\(key) = \(value) was never observed") }
        return problems
    }

    static func checkChains(_ changes: [SuiteChange], from start: [String: SuiteValue] = [:], endAt final: [String: SuiteValue],
                            sourceLocation: SourceLocation = #_sourceLocation) {
        let problems = chainProblems(changes, from: start, endAt: final)
        #expect(problems.isEmpty, "\(problems.prefix(10)) (\(problems.count) problems in \(changes.count) changes)", sourceLocation: sourceLocation)
    }

    /// Two processes that compact every 2 KiB against two threads here that set and
    /// update, with an observer here: nothing lost, nothing observed twice or out of
    /// order, and the cache ends equal to the file.
    @Test func waitingWritersUnderContentionWithCompactionsLoseAndRepeatNothing() throws {
        let name = "contended"
        let suite = try Suite(named: name, directory: directory.url, options: .init(compactionSlack: 2048, lockTimeout: .seconds(60)))
        let recorder = ChangeRecorder()
        let token = try SuiteObservation.allKeys.start(in: suite, onChange: recorder.handler)
        let workers = try (0..<2).map { index in
            try startWorker("ack-loop", in: directory, suite: name, ["prefix": "p\(index)", "compaction-slack": "2048"])
        }
        for worker in workers { worker.expectLine(startingWith: "ack 50") }
        let threads = 2, rounds = 1500
        let failures = LockedBox<[String]>([])
        let group = DispatchGroup()
        for thread in 0..<threads {
            group.enter()
            Thread {
                for round in 0..<rounds {
                    do {
                        if round % 2 == 0 {
                            try suite.set(round, forKey: "t\(thread).\(round % 16)")
                        } else {
                            try suite.update { tx in try tx.set((tx.integer(forKey: "counter") ?? 0) + 1, forKey: "counter") }
                        }
                    } catch { failures.withLock { $0.append("\(error)") } }
                }
                group.leave()
            }.start()
        }
        #expect(group.wait(timeout: .now() + 120) == .success)
        let acknowledged = workers.map { worker -> Int in
            _ = worker.kill()
            return worker.lines.compactMap { $0.hasPrefix("ack ") ? Int($0.dropFirst(4)) : nil }.max() ?? -1
        }
        #expect(failures.current.isEmpty, "\(failures.current.prefix(3))")
        try suite.reload()
        let disk = try contentsOnDisk(name)
        #expect(suite.storedValues() == disk)
        try expectCacheMatchesTheFile(suite, name)
        #expect(disk["counter"] == .integer(threads * rounds / 2))
        for thread in 0..<threads {
            for key in stride(from: 0, to: 16, by: 2) {
                let last = (0..<rounds).filter { $0 % 2 == 0 && $0 % 16 == key }.max()!
                #expect(disk["t\(thread).\(key)"] == .integer(last))
            }
        }
        for (index, acknowledged) in acknowledged.enumerated() where acknowledged >= 0 {
            let stored = disk["p\(index).\(acknowledged % 200)"].flatMap(Int.init(suiteValue:)) ?? -1
            #expect(stored >= acknowledged, "p\(index).\(acknowledged % 200) is \(stored), acknowledged \(acknowledged)")
        }
        #expect(recorder.wait(timeout: .seconds(30)) { changes in
            var last: [String: SuiteValue?] = [:]
            for change in changes { last[change.key] = change.newValue }
            return disk.allSatisfy { last[$0.key] == $0.value }
        })
        Self.checkChains(recorder.changes, endAt: disk)
        withExtendedLifetime(token) {}
    }

    /// A suite of 20 commits (its values returned), observed here, and another process
    /// holding its lock, stopped at `point` of a commit of `dead` = "x" (or of the
    /// compaction after it).
    func observedSuiteWithAHolderPaused(_ name: String, at point: String, delivery: SuiteObservation.Delivery)
        throws -> (Suite, [String: SuiteValue], ChangeRecorder, SuiteCancellable, ChildProcess) {
        let suite = try Suite(named: name, directory: directory.url, options: .init(lockTimeout: .seconds(60)))
        for index in 0..<20 { try suite.set("v\(index)", forKey: "k\(index % 5)") }
        let start = suite.storedValues()
        let recorder = ChangeRecorder()
        let token = try SuiteObservation.allKeys.delivered(on: delivery).start(in: suite, onChange: recorder.handler)
        var options = ["point": point, "key": "dead", "value": "x"]
        if point == "compactionRenamed" { options["compact"] = "1" }
        let dying = try startWorker("pause", in: directory, suite: name, options)
        dying.expectLine(startingWith: "paused")
        return (suite, start, recorder, token, dying)
    }

    /// The holder stops at each point of a commit or a compaction and is killed while a
    /// writer here waits (and catches up as far as it may): this process, its
    /// observer, the file and another process agree.
    @Test(arguments: ["commitStarted", "partialRecordWritten", "recordWritten", "committed", "compactionRenamed"])
    func aWriterWaitingOnOneThatDiesAgreesWithTheFile(point: String) throws {
        let name = "dies-\(point)"
        let (suite, start, recorder, token, dying) = try observedSuiteWithAHolderPaused(name, at: point, delivery: .watcherThread)
        defer { _ = dying.kill() }
        let wrote = DispatchSemaphore(value: 0)
        let failure = LockedBox<String?>(nil)
        Thread {
            do {
                try suite.set("mine", forKey: "m")
                try suite.update { tx in try tx.set((tx.integer(forKey: "n") ?? 0) + 1, forKey: "n") }
            } catch { failure.withLock { $0 = "\(error)" } }
            wrote.signal()
        }.start()
        // While the holder lives, the write cannot have happened.
        #expect(wrote.wait(timeout: .now() + 0.3) == .timedOut, "the write waits for the holder")
        _ = dying.kill()
        #expect(wrote.wait(timeout: .now() + 60) == .success)
        #expect(failure.current == nil, "\(failure.current ?? "")")
        let disk = try contentsOnDisk(name)
        #expect(disk["m"] == "mine" && disk["n"] == 1)
        if point == "committed" || point == "compactionRenamed" { #expect(disk["dead"] == "x") }
        #expect(suite.storedValues() == disk)
        try expectCacheMatchesTheFile(suite, name)
        let other = try ReplacedDataFile(directory: directory).readInAnotherProcess("dead", suite: name)
        #expect(other.contains(disk["dead"].map { "value \($0)" } ?? "absent"), "\(other)")
        #expect(recorder.wait(for: "n", toBecome: 1))
        Self.checkChains(recorder.changes, from: start, endAt: disk)
        withExtendedLifetime(token) {}
    }

    /// The holder stops at each point of a commit or a compaction and is killed; then
    /// this process, which has read the suite, only reloads. It used to read up to the
    /// header's committed length, where a writer that died after its record was whole
    /// leaves it, and so stayed behind the file (and every fresh process) until the
    /// next commit. CI caught that in the contended test above. (It now also reads a
    /// record left whole past the committed length: `HostileRoundNineTests`.)
    @Test(arguments: ["commitStarted", "partialRecordWritten", "recordWritten", "committed", "compactionRenamed"])
    func aReloadAfterAHolderDiesAgreesWithTheFile(point: String) throws {
        let (suite, start, recorder, token, dying) = try observedSuiteWithAHolderPaused("reload-\(point)", at: point, delivery: .suiteQueue)
        let name = suite.name
        defer { _ = dying.kill() }
        _ = dying.kill()
        try suite.reload()
        let disk = try contentsOnDisk(name)
        if point == "recordWritten" || point == "committed" || point == "compactionRenamed" { #expect(disk["dead"] == "x") }
        #expect(suite.storedValues() == disk)
        #expect(suite.string(forKey: "dead") == disk["dead"].flatMap(String.init(suiteValue:)))
        try expectCacheMatchesTheFile(suite, name, allowingTornTail: point == "partialRecordWritten")
        let other = try ReplacedDataFile(directory: directory).readInAnotherProcess("dead", suite: name)
        #expect(other.contains(disk["dead"].map { "value \($0)" } ?? "absent"), "\(other)")
        if disk["dead"] != nil { #expect(recorder.wait(for: "dead", toBecome: "x")) }
        Self.checkChains(recorder.changes, from: start, endAt: disk)
        withExtendedLifetime(token) {}
    }

    /// Writes `sequence` as the shared header's last sequence number, published under a
    /// later even generation, as a process that may write the lock file can.
    func forgeLastSequence(_ name: String, _ sequence: UInt64) {
        let descriptor = open(directory.file(name + ".suite.lock").path, O_RDWR)
        #expect(descriptor >= 0)
        var value = sequence, generation: UInt64 = 0
        _ = pread(descriptor, &generation, 8, 16)
        _ = pwrite(descriptor, &value, 8, 40)
        generation = (generation | 1) &+ 1
        _ = pwrite(descriptor, &generation, 8, 16)
        close(descriptor)
    }

    /// It used to number the next commit at the limit, after which every process
    /// failed every write with `.corruptFile`.
    @Test func aForgedLastSequenceJustBelowTheLimitLeavesTheSuiteWritable() throws {
        let name = "near-limit"
        let suite = try Suite(named: name, directory: directory.url)
        try suite.set(1, forKey: "a")
        forgeLastSequence(name, FormatLimits.maximumSequence - 1)
        try suite.set(2, forKey: "a")
        #expect(throws: Never.self, "this process can still write") { try suite.set(3, forKey: "a") }
        let other = try startWorker("try-set", in: directory, suite: name, ["key": "b", "value": "other"])
        other.expectSuccess()
        #expect(other.lines.contains("ok"), "a fresh process can still write: \(other.lines)")
        #expect(try contentsOnDisk(name) == ["a": 3, "b": "other"])
        #expect(try scanOnDisk(name).contents.lastSequence < FormatLimits.maximumSequence / 2)
    }

    /// Twenty commits observed, then the data file cut back to what it held after ten
    /// (`meddle` first), then one more write from another process.
    func observeTheDataFileCutBack(_ name: String, meddle: () -> Void) throws -> [String] {
        let suite = try Suite(named: name, directory: directory.url)
        let recorder = ChangeRecorder()
        let token = try SuiteObservation.allKeys.delivered(on: .watcherThread).start(in: suite, onChange: recorder.handler)
        for index in 0..<10 { try suite.set(index, forKey: "k\(index)") }
        let copySize = try #require(directory.bytes(of: name + ".suite")).count
        for index in 10..<20 { try suite.set(index, forKey: "k\(index)") }
        #expect(recorder.wait(for: "k19", toBecome: 19))
        meddle()
        #expect(truncate(directory.file(name + ".suite").path, off_t(copySize)) == 0)
        try ReplacedDataFile(directory: directory).set("after", "x", suite: name)
        #expect(recorder.wait(for: "after", toBecome: "x"))
        // A net change is delivered key by key in the keys' order, "after" before the
        // removals of k10 ... k19 that the cut made: wait for the last of them too.
        #expect(recorder.wait(for: "k19", toBecome: nil))
        var highest: UInt64 = 0, seen: Set<UInt64> = [], problems: [String] = []
        for change in recorder.changes {
            if change.sequence < highest { problems.append("\(change) after sequence \(highest)") }
            highest = max(highest, change.sequence)
            if change.kind == .commit, !seen.insert(change.sequence).inserted { problems.append("commit \(change.sequence) delivered twice: \(change)") }
        }
        problems += Self.chainProblems(recorder.changes, endAt: try contentsOnDisk(name))
        withExtendedLifetime(token) {}
        return problems
    }

    @Test func anObserverOfADataFileCutBack() throws {
        let problems = try observeTheDataFileCutBack("cut-back") {}
        #expect(problems.isEmpty, "\(problems.count) problems: \(problems.prefix(4))")
    }

    /// The observer reads the file again from its start: the commits it already held
    /// (and one numbered among them by a writer that knew only the older copy) come as
    /// a net change, not again as commits (a known issue until the fourteenth pass).
    @Test func anObserverOfADataFileCutBackAfterTheLockFileWasDeleted() throws {
        let problems = try observeTheDataFileCutBack("cut-back-unlinked") {
            #expect(unlink(directory.file("cut-back-unlinked.suite.lock").path) == 0)
        }
        #expect(problems.isEmpty, "\(problems.count) problems: \(problems.prefix(4))")
    }

    /// The writer that repairs the file numbers on from what it saw itself, not from
    /// the forged number (a known issue until the start-over took the highest number known).
    @Test func anObserverOfADataFileCutBackUnderAForgedLowLastSequence() throws {
        let problems = try observeTheDataFileCutBack("cut-back-forged") { forgeLastSequence("cut-back-forged", 0) }
        #expect(problems.isEmpty, "\(problems.count) problems: \(problems.prefix(4))")
    }
}

/// The one-write transaction against a model: random blocks of writes, removals,
/// clears and reads, in every Unicode form of a few keys and with values that differ
/// only as stored, their `finish()` applied as the store applies it.
@Suite("Round eight: the one-write transaction against a model")
struct HostileRoundEightTransactionTests {
    let directory = TemporaryDirectory()
    static let keys = ["a", "b", "café", "cafe\u{301}", "Å", "A\u{30A}", "\u{212B}"] + (0..<11).map { "k\($0)" }
    static let values: [SuiteValue] = [0, 1, .double(1), .double(0), .double(-0.0), "x", "café", "cafe\u{301}", true,
                                       .data(Data([1, 2])), ["café": 1], .string(String(repeating: "y", count: 300))]
    static func size(_ value: SuiteValue) -> Int { try! ValueEncoding.measure(value) }
    static func model(of contents: SuiteContents) -> [String: ModelEntry] { contents.mapEntries { ModelEntry(value: $0.value, isDefault: $0.isDefault) } }

    @Test func finishAppliedAsTheStoreDoesMakesTheModelsTable() throws {
        var random = SplitMix64(seed: 0x8_0001)
        func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &random)] }
        // The transactions' store, for its name and registered defaults: the table
        // each one starts from is made here.
        let suite = try Suite(named: "model", directory: directory.url)
        var problems: [String] = []
        for trial in 0..<4000 {
            var base = SuiteContents()
            var sequence: UInt64 = 0
            for _ in 0..<Int.random(in: 0...8, using: &random) {
                let value = pick(Self.values)
                sequence += 1
                base.apply(Record(kind: .transaction, sequence: sequence, timestamp: 0, pid: 0,
                                  operations: [.set(key: UTF8Text.normalForm(pick(Self.keys)).text, value: value, size: Self.size(value),
                                                    asDefault: Bool.random(using: &random))]))
            }
            var model = Self.model(of: base)
            let transaction = SuiteTransaction(store: suite.store, base: base, maximumValueSize: 1 << 20)
            var log: [String] = []
            for _ in 0..<Int.random(in: 0...14, using: &random) {
                let key = pick(Self.keys), nfc = UTF8Text.normalForm(key).text
                switch Int.random(in: 0..<10, using: &random) {
                case 0, 1, 2:
                    let value = pick(Self.values), asDefault = Int.random(in: 0..<4, using: &random) == 0
                    try transaction.setValue(value, forKey: key, asDefault: asDefault)
                    model[nfc] = ModelEntry(value: value, isDefault: asDefault)
                    log.append("set \(key)=\(value)\(asDefault ? " default" : "")")
                case 3:
                    try transaction.removeValue(forKey: key)
                    model[nfc] = nil
                    log.append("remove \(key)")
                case 4 where Int.random(in: 0..<3, using: &random) == 0:
                    try transaction.removeAll()
                    model = [:]
                    log.append("removeAll")
                case 5:
                    if let now = model[nfc] {
                        let asDefault = Bool.random(using: &random)
                        try transaction.setValue(now.value, forKey: key, asDefault: asDefault)
                        model[nfc] = ModelEntry(value: now.value, isDefault: asDefault)
                        log.append("reset \(key)\(asDefault ? " default" : "")")
                    }
                default:
                    let read = transaction.storedValue(forKey: key)
                    log.append("read \(key)")
                    if !read.isStored(identicallyTo: model[nfc]?.value) {
                        problems.append("trial \(trial) \(log): read \(String(describing: read)), model \(String(describing: model[nfc]?.value))")
                    }
                }
            }
            let commit = transaction.finish()
            var after = base
            let announced: Int
            switch commit {
            case .set(let key, let value, let size, let asDefault, let slot, let liveBytesAfter):
                after.set(value, forKey: key, size: size, asDefault: asDefault, at: slot, sequence: sequence + 1)
                announced = liveBytesAfter
            case .operations(let operations, let liveBytesAfter):
                if !operations.isEmpty {
                    after.apply(Record(kind: .transaction, sequence: sequence + 1, timestamp: 0, pid: 0, operations: operations))
                }
                for operation in operations
                where operation != .removeAll && !operations.contains(.removeAll) && !base.effect(of: operation).changes {
                    problems.append("trial \(trial) \(log): \(operation) changes nothing and is written")
                }
                announced = liveBytesAfter
            }
            if !ModelEntry.same(Self.model(of: after), model) { problems.append("trial \(trial) \(log): committed \(after.values), model \(model)") }
            if announced != after.liveBytes { problems.append("trial \(trial) \(log): announced \(announced), applied \(after.liveBytes)") }
            if !log.contains("removeAll"), commit.isEmpty != ModelEntry.same(Self.model(of: base), model) {
                problems.append("trial \(trial) \(log): empty \(commit.isEmpty)")
            }
        }
        withExtendedLifetime(suite) {}  // the transactions hold its store unretained
        #expect(problems.isEmpty, "\(problems.count) problems: \(problems.prefix(5))")
    }
}
