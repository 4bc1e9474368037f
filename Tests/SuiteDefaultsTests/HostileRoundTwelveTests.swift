import ChildProcess
import Foundation
import Glibc
import Testing
import TestSupport
import ToolSupport
@_spi(Tools) @_spi(Testing) @testable import SuiteDefaults

/// The twelfth hostile round: commit c364c38 (fewer atomic operations on the write
/// paths) attacked.
/// - the registry and the observer hub refer weakly to a `StoreLease`, never to the
///   store; a token holds the lease;
/// - a transaction holds its store `unowned(unsafe)`;
/// - the transaction's block timed with the wall clock;
/// - the lock's wait point taken after a failed try;
/// - a set taken apart outside the lock, the table's entry swapped in place, the key
///   scanned in place.
@Suite("Hostile round twelve", .serialized)
struct HostileRoundTwelveTests: EngineStateTesting {
    let directory = TemporaryDirectory()

    func open(_ name: String, in url: URL? = nil, options: Suite.Options = Suite.Options()) throws -> Suite {
        try Suite(named: name, directory: url ?? directory.url, options: options)
    }

    /// Weak references to stores, leases and hubs, from many threads.
    final class Released: @unchecked Sendable {
        private let lock = NSLock()
        private var checks: [(String, () -> Bool)] = []
        func add(_ suite: Suite, hub: Bool) {
            weak let store = suite.store
            weak let lease = suite.lease
            lock.withLock { checks.append(("store of \(suite.name)", { store == nil })) }
            lock.withLock { checks.append(("lease of \(suite.name)", { lease == nil })) }
            if hub {
                weak let made = ObserverHub.of(suite.lease)
                lock.withLock { checks.append(("hub of \(suite.name)", { made == nil })) }
            }
        }
        var alive: [String] { lock.withLock { checks.filter { !$0.1() }.map(\.0) } }
    }

    // MARK: 1. The lease

    /// An observation started from a `Suite` that is then released keeps the store
    /// through its token alone; a `Suite` of the same name opened meanwhile shares that
    /// store (and lease), and its writes reach the old observation exactly once. Once
    /// the token goes too, the store, the lease and the hub are freed.
    @Test func aTokenAloneKeepsTheStoreAndTheNextSuiteSharesIt() throws {
        let recorder = ChangeRecorder()
        weak var store: SuiteStore?
        weak var lease: StoreLease?
        weak var hub: ObserverHub?
        var token: SuiteCancellable?
        do {
            let suite = try open("kept")
            try suite.set(0, forKey: "k")
            token = try suite.observe(onChange: recorder.handler)
            store = suite.store
            lease = suite.lease
            hub = ObserverHub.of(suite.lease)
        }
        #expect(store != nil && lease != nil && hub != nil, "the token did not keep the store")
        do {
            let again = try open("kept")
            #expect(again.store === store, "a Suite opened while the token lives got another store")
            #expect(again.lease === lease)
            try again.set(1, forKey: "k")
            #expect(recorder.wait(for: "k", toBecome: 1))
            try writeFromAnotherProcess("k", "from another process", in: directory.url, suite: "kept")
            #expect(recorder.wait(for: "k", toBecome: "from another process"))
            ObserverHub.of(again.lease).waitForDelivery()
            #expect(recorder.changes.filter { $0.key == "k" }.count == 2, "\(recorder.changes)")
        }
        #expect(store != nil && token != nil, "the store went while its token lives")
        token = nil
        #expect(eventually { store == nil && lease == nil && hub == nil },
                "store \(store == nil), lease \(lease == nil), hub \(hub == nil) after the token went")
        #expect(eventually { !isWatched(directory.url) })
    }

    /// Suites, second instances and observations of three suites, from four threads,
    /// released in every order (the Suite before its token, after it, the second
    /// instance first, tokens handed to another thread and cancelled or released
    /// there). Two instances alive at once always share one store; at the end every
    /// store, lease and hub is freed and nothing is watched.
    @Test func suitesAndTokensReleasedInEveryOrderOnManyThreadsFreeEverything() throws {
        let url = directory.file("orders")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        let released = Released()
        let problems = LockedBox<[String]>([])
        let handedOver = LockedBox<[SuiteCancellable]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            var random = SplitMix64(seed: UInt64(0x11_0000 + thread))
            for round in 0..<40 {
                let name = "order-\(Int.random(in: 0..<3, using: &random))"
                do {
                    var first: Suite? = try Suite(named: name, directory: url)
                    var second: Suite? = try Suite(named: name, directory: url)
                    if first!.store !== second!.store || first!.lease !== second!.lease {
                        problems.withLock { $0.append("thread \(thread) round \(round): two stores for \(name)") }
                    }
                    let observes = Int.random(in: 0..<4, using: &random) != 0
                    released.add(first!, hub: observes)
                    var token: SuiteCancellable? = observes ? try first!.observe(onChange: { _ in }) : nil
                    try second!.set(round, forKey: "t\(thread)")
                    switch Int.random(in: 0..<6, using: &random) {
                    case 0: first = nil; second = nil; token = nil
                    case 1: token = nil; second = nil; first = nil
                    case 2: second = nil; token?.cancel(); first = nil; token = nil
                    case 3:
                        first = nil; second = nil
                        // The token alone keeps the store: a new instance must share it.
                        if let token, !token.isCancelled {
                            let third = try Suite(named: name, directory: url)
                            if third.integer(forKey: "t\(thread)") != round {
                                problems.withLock { $0.append("thread \(thread) round \(round): the third instance read \(String(describing: third.integer(forKey: "t\(thread)")))") }
                            }
                        }
                        token = nil
                    case 4:
                        if let token { handedOver.withLock { $0.append(token) } }
                        token = nil; first = nil; second = nil
                    default:
                        if let token { handedOver.withLock { $0.append(token) } }
                        token = nil; second = nil; first = nil
                        // Another thread's handed-over tokens, cancelled or dropped here.
                        let taken = handedOver.withLock { tokens in defer { tokens = [] }; return tokens }
                        for (index, other) in taken.enumerated() where index % 2 == 0 { other.cancel() }
                    }
                    _ = (first, second, token)
                } catch {
                    problems.withLock { $0.append("thread \(thread) round \(round): \(error)") }
                }
            }
        }
        handedOver.withLock { $0 = [] }
        #expect(problems.current.isEmpty, "\(problems.current.prefix(5))")
        #expect(eventually { released.alive.isEmpty }, "still alive: \(released.alive.prefix(6))")
        #expect(eventually { !isWatched(url) }, "the directory stayed watched")
    }

    /// The store kept alive by something other than a lease (as a refresh on the
    /// observers' queue keeps it, through `ObserverHub.store`, while the last Suite and
    /// token go): a Suite opened then gets a second store of the same suite in this
    /// process. The two must still exclude each other (two `flock` descriptors of one
    /// file): read-increment-write transactions from both, on several threads, all
    /// count; an observer of the new store hears every increment exactly once.
    @Test func twoStoresOfOneSuiteInOneProcessExcludeEachOtherAndLoseNothing() throws {
        var old: SuiteStore?
        do {
            let suite = try open("two")
            try suite.set(0, forKey: "counter")
            old = suite.store
        }
        let suite = try open("two")
        let oldStore = try #require(old)
        // (Not a requirement: this records that the registry forgot the old store.)
        let twoStores = suite.store !== oldStore
        let recorder = ChangeRecorder()
        let token = try suite.observe(keys: ["counter"], onChange: recorder.handler)
        let perThread = 150
        let failures = LockedBox<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for _ in 0..<perThread {
                do {
                    let body: (SuiteTransaction) throws -> Void = { transaction in
                        try transaction.set((transaction.integer(forKey: "counter") ?? 0) + 1, forKey: "counter")
                    }
                    if thread % 2 == 0 {
                        try oldStore.transaction(durability: .standard, options: suite.options, body)
                    } else {
                        try suite.update(body)
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(failures.current.isEmpty, "\(failures.current.prefix(3))")
        let total = 4 * perThread
        try suite.reload()
        #expect(suite.integer(forKey: "counter") == total, "two stores: \(twoStores); counter \(String(describing: suite.integer(forKey: "counter")))")
        let read = try outcome(ofWorker: "get", suite: "two", ["key": "counter"])
        #expect(read.contains("value \(total)"), "another process read: \(read)")
        #expect(recorder.wait { $0.last?.newValue == .integer(total) }, "the observer stopped at \(String(describing: recorder.changes.last?.newValue))")
        ObserverHub.of(suite.lease).waitForDelivery()
        let values = recorder.changes.compactMap { $0.newValue.flatMap { if case .integer(let n) = $0 { n } else { nil } } }
        let sequences = recorder.changes.map(\.sequence)
        #expect(Set(sequences).count == sequences.count, "a commit was delivered twice")
        #expect(values == Array(1...total) || recorder.changes.contains { $0.kind == .netChange },
                "the observer heard \(values.count) increments, out of order or missing: \(values.prefix(10))…")
        token.cancel()
        withExtendedLifetime(old) {}
    }

    private func outcome(ofWorker command: String, suite: String, _ options: [String: String]) throws -> String {
        let worker = try startWorker(command, in: directory, suite: suite, options)
        // (The worker says "opened" first.)
        let line = worker.waitForLine(timeout: .seconds(60)) { $0.hasPrefix("value") || $0.hasPrefix("absent") } ?? "no answer"
        worker.expectSuccess()
        return line
    }

    /// The race the lease brings: another process writes without pause, so that the
    /// observers' queue keeps catching the store up (holding it), while this process
    /// opens a Suite, observes, and lets both go, over and over, and at once opens the
    /// suite again. Every new instance must read what the writer acknowledged before
    /// it opened, every observation must hear a write, and everything is freed.
    @Test func suitesReopenedWhileTheirObserversCatchUpReadAndHearEverything() throws {
        let name = "reopened"
        try open(name).set(-1, forKey: "w.0")
        let writer = try startWorker("ack-loop", in: directory, suite: name, ["prefix": "w"])
        defer { _ = writer.kill() }
        writer.expectLine(startingWith: "ack 10")
        let released = Released()
        var problems: [String] = []
        for round in 0..<60 {
            let acknowledged = writer.lines.reversed().first { $0.hasPrefix("ack ") }.flatMap { Int($0.dropFirst(4)) } ?? 0
            let suite = try open(name)
            released.add(suite, hub: true)
            // ack-loop writes n under w.(n % 200): the key of the last acknowledged write
            // holds it or, 200 writes later, more.
            let read = suite.integer(forKey: "w.\(acknowledged % 200)") ?? -1
            if read < acknowledged { problems.append("round \(round): read \(read) after ack \(acknowledged)") }
            let recorder = ChangeRecorder()
            let token = try suite.observe(onError: recorder.errorHandler, onChange: recorder.handler)
            if !recorder.wait(timeout: .seconds(20), until: { !$0.isEmpty }) { problems.append("round \(round): heard nothing") }
            if round % 3 == 0 { token.cancel() }
        }
        _ = writer.kill()
        #expect(problems.isEmpty, "\(problems.prefix(5))")
        #expect(eventually { released.alive.isEmpty }, "still alive: \(released.alive.prefix(6))")
    }

    /// A directory observation opens its own Suite of each suite it finds: it must share
    /// the store of this process's Suite of the same name (one hub, one observer), and
    /// free everything once cancelled.
    @Test func aDirectoryObservationSharesTheStoreOfThisProcesssSuites() throws {
        let url = directory.file("watched-directory")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        let released = Released()
        let recorder = ChangeRecorder()
        var observation: SuiteCancellable?
        do {
            let early = try open("early", in: url)
            try early.set(1, forKey: "k")
            observation = try Suite.observeSuites(in: url, onError: recorder.errorHandler, onChange: recorder.handler)
            let late = try open("late", in: url)
            try late.set(2, forKey: "k")
            #expect(recorder.wait { changes in changes.contains { $0.suite == "late" && $0.newValue == 2 } })
            for suite in [early, late] {
                released.add(suite, hub: false)
                #expect(eventually { ObserverHub.of(suite.lease).count == 1 },
                        "\(suite.name): \(ObserverHub.of(suite.lease).count) observers on this process's store (the directory observation's store is another)")
                released.add(suite, hub: true)
            }
            try early.set(3, forKey: "k")
            #expect(recorder.wait { changes in changes.contains { $0.suite == "early" && $0.newValue == 3 } })
        }
        // The Suites are gone: the observation alone keeps the stores; this process opens
        // them again and must share them.
        for name in ["early", "late"] {
            let again = try open(name, in: url)
            #expect(ObserverHub.of(again.lease).count == 1, "\(name) opened again has a store of its own")
        }
        observation?.cancel()
        observation = nil
        #expect(eventually { released.alive.isEmpty }, "still alive: \(released.alive.prefix(6))")
        #expect(eventually { !isWatched(url) })
    }

    // MARK: 3. The block timed with the wall clock

    /// The lock file deleted during a long block, and another process writing through
    /// the new one, for each shape of commit (one set, several, a removal, a clear): the
    /// update writes nothing and says why; the other process's value stands. (The same
    /// as HostileRoundSevenTests' test for the one-set shape.)
    @Test(arguments: ["one set", "two sets", "one removal", "clear and set"])
    func anUpdateOfAnyShapeWhoseLockFileWasReplacedWritesNothing(_ shape: String) throws {
        let name = "replaced-" + shape.replacingOccurrences(of: " ", with: "-")
        let suite = try open(name)
        try suite.set(1, forKey: "k")
        try suite.set(1, forKey: "j")
        let lockPath = directory.file(name + ".suite.lock").path
        var thrown: (any Error)?
        do {
            try suite.update { transaction in
                _ = transaction.integer(forKey: "k")
                #expect(unlink(lockPath) == 0)
                let other = try startWorker("try-set", in: directory, suite: name, ["key": "k", "value": "other"])
                other.expectLine(startingWith: "ok")
                other.expectSuccess()
                switch shape {
                case "one set": try transaction.set(2, forKey: "k")
                case "two sets": try transaction.set(2, forKey: "k"); try transaction.set(2, forKey: "j")
                case "one removal": try transaction.removeValue(forKey: "j")
                default: try transaction.removeAll(); try transaction.set(2, forKey: "n")
                }
            }
        } catch {
            thrown = error
        }
        #expect((thrown as? SuiteError)?.message.contains("lock file was deleted") == true, "\(String(describing: thrown))")
        try suite.reload()
        #expect(suite.string(forKey: "k") == "other")
        #expect(suite.integer(forKey: "j") == 1)
        #expect(suite.storedValue(forKey: "n") == nil)
    }

    /// A commit's record is stamped with the second reading of the wall clock: an
    /// observer's change carries a time of this era, not 0 or the first reading of
    /// another process. (Within a day of now: no timing is asserted.)
    @Test func aTransactionsRecordIsStampedWithTheWallClock() throws {
        let suite = try open("stamped")
        let recorder = ChangeRecorder()
        let token = try suite.observe(onChange: recorder.handler)
        try suite.update { try $0.set(1, forKey: "one") }
        try suite.update { try $0.set(2, forKey: "a"); try $0.set(2, forKey: "b") }
        try suite.set(3, forKey: "plain")
        #expect(recorder.wait { $0.count == 4 })
        for change in recorder.changes {
            #expect(abs(change.timestamp.timeIntervalSinceNow) < 86_400, "\(change.key): \(change.timestamp)")
        }
        token.cancel()
    }

    // MARK: 4. The lock's wait point

    /// Read-increment-write transactions from two processes of two threads each and
    /// from this one, while the lock file is cut short again and again under them:
    /// every increment counts, and no waiter gives up (a 30 s lock timeout, which a
    /// waiter that slept on a stale page past its wake-up would run into).
    @Test func incrementsWhileTheLockFileIsCutShortAgainAndAgainAllCount() throws {
        let name = "cut-contended"
        let suite = try open(name, options: .init(lockTimeout: .seconds(30)))
        try suite.set(0, forKey: "counter")
        let lockPath = directory.file(name + ".suite.lock").path
        let workers = try (0..<2).map { _ in
            try startWorker("increment", in: directory, suite: name, ["threads": "2", "count": "200", "lock-timeout-ms": "30000"])
        }
        let done = LockedBox(false)
        let cutter = Thread {
            var cuts = 0
            while !done.current {
                if truncate(lockPath, cuts % 2 == 0 ? 0 : 20) == 0 { cuts += 1 }
                usleep(2_000)
            }
        }
        cutter.start()
        var failures: [String] = []
        for _ in 0..<200 {
            do {
                try suite.update { try $0.set(($0.integer(forKey: "counter") ?? 0) + 1, forKey: "counter") }
            } catch {
                failures.append("\(error)")
            }
        }
        for worker in workers { worker.expectSuccess(within: .seconds(240)) }
        done.withLock { $0 = true }
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        try suite.reload()
        #expect(suite.integer(forKey: "counter") == 1000)
        let read = try outcome(ofWorker: "get", suite: name, ["key": "counter"])
        #expect(read.contains("value 1000"), "another process read: \(read)")
    }

    /// Writers of other processes waiting on a holder, while the lock file is cut short
    /// and then replaced (deleted, a newcomer's made): each waiter, whose try found the
    /// lock held and whose wait point is now taken after that try, ends well within its
    /// lock timeout once the holders go, and its write is there.
    @Test func waitersOnALockFileCutShortThenReplacedEndAndWrite() throws {
        let name = "waited-replaced"
        try open(name).set(0, forKey: "k")
        let lockPath = directory.file(name + ".suite.lock").path
        let holder = try startWorker("hold-lock", in: directory, suite: name)
        defer { _ = holder.kill() }
        holder.expectLine(startingWith: "holding")
        let waiters = try (0..<4).map { index in
            try startWorker("try-set", in: directory, suite: name, ["key": "w\(index)", "value": "set", "lock-timeout-ms": "60000"])
        }
        defer { for waiter in waiters { _ = waiter.kill() } }
        #expect(eventually(30) { waiterCount(ofLockFile: lockPath) == 4 }, "\(waiterCount(ofLockFile: lockPath).map(String.init) ?? "nil")")
        #expect(truncate(lockPath, 0) == 0)
        #expect(unlink(lockPath) == 0)
        let second = try startWorker("hold-lock", in: directory, suite: name)
        defer { _ = second.kill() }
        second.expectLine(startingWith: "holding")
        holder.kill()
        second.kill()
        for waiter in waiters {
            // Far less than their 60 s timeout: a waiter that waits for it hung.
            waiter.expectLine(startingWith: "ok", within: .seconds(30))
            waiter.expectSuccess(within: .seconds(30))
        }
        let suite = try open(name)
        try suite.reload()
        #expect((0..<4).allSatisfy { suite.string(forKey: "w\($0)") == "set" }, "\(suite.storedValues())")
    }

    // MARK: 5. Sets, removals and transactions against a model

    /// Keys an attacker likes: normal forms of one key, NUL-free lookalikes, non-ASCII,
    /// keys built through Foundation (NSString, NSMutableString, a substring), and the
    /// longest key.
    static let modelKeys: [String] = {
        var keys = ["a", "b", "café", "cafe\u{301}", "Å", "A\u{30A}", "\u{212B}", "ﬁ", "fi", "\u{1F600}", "k\u{0}x".replacingOccurrences(of: "\u{0}", with: "0"),
                    String(repeating: "é", count: 512), String(repeating: "e\u{301}", count: 341) + "e"]
        keys.append(NSString(string: "caf\u{E9}-ns") as String)
        let mutable = NSMutableString(string: "cafe")
        mutable.append("\u{301}-ns")
        keys.append(mutable as String)
        keys.append(String(String(repeating: "x", count: 40).dropFirst(3)))
        keys.append(String(repeating: "z", count: Validation.maximumKeyLength))
        return keys
    }()

    static let modelValues: [SuiteValue] = [0, 1, .double(0.0), .double(-0.0), .double(1), "x", "", "a\u{0}b", "café", "cafe\u{301}",
                                            true, false, .data(Data()), .data(Data([0, 1])), ["café": 1], [.double(-0.0)],
                                            .string(String(repeating: "y", count: 700))]

    /// Random sets (some `setIfAbsent`, which store a default), removals, clears and
    /// transactions of several writes, through one Suite, checked after every step
    /// against a model: the contents, exactly (-0.0 is not 0.0), and `liveBytes`
    /// (the sum of each entry's record size). Every 25 steps, an engine state of its
    /// own reads the file and must agree too.
    @Test func randomWritesAgreeWithAModelAndWithAnotherReader() throws {
        let name = "model"
        let suite = try open(name)
        let reader = try openState(name)
        var random = SplitMix64(seed: 0x11_0005)
        func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &random)] }
        var model: [String: ModelEntry] = [:]
        var problems: [String] = []
        func liveBytes(_ model: [String: ModelEntry]) -> Int {
            model.reduce(0) { $0 + RecordFormat.size(ofSetting: $1.key, valueSize: try! ValueEncoding.measure($1.value.value)) }
        }
        func compare(_ entries: [String: Suite.StoredEntry], liveBytes actual: Int, _ what: String, _ step: Int, _ log: String) {
            let agrees = ModelEntry.same(entries.mapValues { ModelEntry(value: $0.value, isDefault: $0.isDefault) }, model)
            if !agrees { problems.append("step \(step) \(log): \(what) holds \(entries), the model \(model)") }
            if actual != liveBytes(model) { problems.append("step \(step) \(log): \(what) live bytes \(actual), the model's \(liveBytes(model))") }
        }
        for step in 0..<1500 {
            let key = pick(Self.modelKeys), nfc = UTF8Text.normalForm(key).text
            var log = ""
            switch Int.random(in: 0..<12, using: &random) {
            case 0...3:
                let value = pick(Self.modelValues)
                try suite.set(value, forKey: key)
                model[nfc] = ModelEntry(value: value, isDefault: false)
                log = "set \(nfc.prefix(8))=\(value)"
            case 4:
                let value = pick(Self.modelValues)
                _ = try suite.setIfAbsent(value, forKey: key)
                if model[nfc] == nil { model[nfc] = ModelEntry(value: value, isDefault: true) }
                log = "setIfAbsent \(nfc.prefix(8))=\(value)"
            case 5, 6:
                try suite.removeValue(forKey: key)
                model[nfc] = nil
                log = "remove \(nfc.prefix(8))"
            case 7 where Int.random(in: 0..<4, using: &random) == 0:
                try suite.removeAll()
                model = [:]
                log = "removeAll"
            default:
                var staged = model
                var parts: [String] = []
                try suite.update { transaction in
                    for _ in 0..<Int.random(in: 0...5, using: &random) {
                        let key = pick(Self.modelKeys), nfc = UTF8Text.normalForm(key).text
                        switch Int.random(in: 0..<8, using: &random) {
                        case 0...3:
                            let value = pick(Self.modelValues), asDefault = Int.random(in: 0..<4, using: &random) == 0
                            try transaction.setValue(value, forKey: key, asDefault: asDefault)
                            staged[nfc] = ModelEntry(value: value, isDefault: asDefault)
                            parts.append("set \(nfc.prefix(8))=\(value)\(asDefault ? " default" : "")")
                        case 4:
                            // The read and write of one key, as an update does.
                            let now = transaction.storedValue(forKey: key)
                            if !now.isStored(identicallyTo: staged[nfc]?.value) {
                                problems.append("step \(step): the transaction read \(String(describing: now)) for \(nfc.prefix(8)), the model \(String(describing: staged[nfc]?.value))")
                            }
                            let value = pick(Self.modelValues)
                            try transaction.set(value, forKey: key)
                            staged[nfc] = ModelEntry(value: value, isDefault: false)
                            parts.append("update \(nfc.prefix(8))=\(value)")
                        case 5:
                            try transaction.removeValue(forKey: key)
                            staged[nfc] = nil
                            parts.append("remove \(nfc.prefix(8))")
                        case 6 where Int.random(in: 0..<3, using: &random) == 0:
                            try transaction.removeAll()
                            staged = [:]
                            parts.append("removeAll")
                        default:
                            // A registered default is not stored.
                            _ = transaction.registeredDefault(forKey: key)
                        }
                    }
                }
                model = staged
                log = "update [\(parts.joined(separator: ", "))]"
            }
            compare(suite.storedEntries(), liveBytes: suite.store.contentsAsLastRead.liveBytes, "the suite", step, log)
            if step % 25 == 24 {
                try catchUpReadOnly(reader)
                let entries = reader.contents.mapEntries { Suite.StoredEntry(value: $0.value, isDefault: $0.isDefault) }
                compare(entries, liveBytes: reader.contents.liveBytes, "another reader", step, log)
            }
            if problems.count > 5 { break }
        }
        #expect(problems.isEmpty, "\(problems.count) problems: \(problems.prefix(5))")
    }

    /// Keys scanned in place: a key from Foundation (NSString, NSMutableString,
    /// `String(format:)`, decoded from `Data`), a small one and a large one, in each
    /// normal form, with a NUL anywhere, at and over the length limit: each is accepted
    /// or refused exactly as the same text made natively, and names the same entry.
    @Test func keysMadeEveryWayAreScannedAlike() throws {
        let suite = try open("scanned")
        let texts = ["k", "a\u{0}", "\u{0}", "\u{0}é", "café", "cafe\u{301}", "\u{212B}",
                     String(repeating: "q", count: 15), String(repeating: "q", count: 16) + "\u{0}",
                     String(repeating: "é", count: 512), String(repeating: "é", count: 513),
                     String(repeating: "z", count: 1024), String(repeating: "z", count: 1025), String(repeating: "z", count: 1024) + "\u{0}"]
        var problems: [String] = []
        for (index, text) in texts.enumerated() {
            let made: [(String, String)] = [
                ("native", String(decoding: Array(text.utf8), as: UTF8.self)),
                ("NSString", NSString(string: text) as String),
                ("NSMutableString", { let m = NSMutableString(string: ""); m.append(text); return m as String }()),
                ("format", String(format: "%@", text as NSString)),
                ("Data", String(data: Data(text.utf8), encoding: .utf8) ?? ""),
                ("substring", String(("<" + text + ">").dropFirst().dropLast())),
            ]
            let expected: Result<String, SuiteError> = Result { try Validation.normalizedKey(text, suite: "scanned") }
                .mapError { ($0 as? SuiteError) ?? SuiteError(.ioFailure, suite: "scanned", message: "\($0)") }
            for (how, key) in made {
                #expect(key == text && key.utf8.elementsEqual(text.utf8), "\(how) changed the text")
                do {
                    try suite.set(index, forKey: key)
                    guard case .success(let normalized) = expected else {
                        problems.append("\(how) key \(index) was stored; the native one is refused"); continue
                    }
                    if suite.storedEntries()[normalized]?.value != .integer(index) { problems.append("\(how) key \(index) stored elsewhere") }
                    try suite.removeValue(forKey: key)
                    if suite.storedValue(forKey: normalized) != nil { problems.append("\(how) key \(index) not removed") }
                } catch let error as SuiteError {
                    if case .failure(let refusal) = expected, refusal.code == error.code { continue }
                    problems.append("\(how) key \(index) refused with \(error.code); the native one: \(expected)")
                }
            }
        }
        #expect(problems.isEmpty, "\(problems)")
        #expect(suite.storedValues().isEmpty)
    }
}

// MARK: 2. A transaction that escapes its block

/// Where a test's block leaves its transaction.
nonisolated(unsafe) private var escapedTransaction: SuiteTransaction?

/// Uses of a `SuiteTransaction` after its block returned, with the Suite and its store
/// gone (freed, and the memory reused): each must stop the process with the
/// precondition's message, before it touches the store. Run as exit tests, in a child
/// process of their own.
@Suite("Hostile round twelve: escaped transactions")
struct HostileRoundTwelveEscapedTransactionTests {
    static let message = "A SuiteTransaction was used after its update block returned."

    /// In the exit test's process: a transaction that escaped its block, in a global,
    /// with its Suite and store freed (checked) and the heap churned. The directory
    /// is named after the test process, which removes it.
    static func escapedFromAFreedStore(_ test: String) -> SuiteTransaction {
        let path = "/tmp/hostile-twelve-\(getppid())-\(test)"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        weak var store: SuiteStore?
        do {
            let suite = try! Suite(named: "escaped", directory: URL(fileURLWithPath: path))
            suite.register(defaults: ["d": 1])
            store = suite.store
            try! suite.update { transaction in
                escapedTransaction = transaction
                try transaction.set(1, forKey: "k")
            }
        }
        precondition(store == nil, "the store outlived its Suite: the test would prove nothing")
        // Reuse the freed memory.
        var junk: [[UInt64]] = []
        for index in 0..<2000 { junk.append([UInt64](repeating: 0xDEAD_BEEF_DEAD_BEEF, count: 4 + index % 64)) }
        withExtendedLifetime(junk) {}
        return escapedTransaction!
    }

    static func removeDirectory(_ test: String) {
        try? FileManager.default.removeItem(atPath: "/tmp/hostile-twelve-\(getpid())-\(test)")
    }

    static func expectStopped(_ result: ExitTest.Result?, _ test: String, sourceLocation: SourceLocation = #_sourceLocation) {
        removeDirectory(test)
        expectChildStopped(result, saying: message, sourceLocation: sourceLocation)
    }

    @Test func registeredDefaultAfterTheBlockStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = HostileRoundTwelveEscapedTransactionTests.escapedFromAFreedStore("default").registeredDefault(forKey: "d")
        }
        Self.expectStopped(result, "default")
    }

    @Test func valueAfterTheBlockStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = HostileRoundTwelveEscapedTransactionTests.escapedFromAFreedStore("value").value(forKey: "d")
        }
        Self.expectStopped(result, "value")
    }

    @Test func setAfterTheBlockStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            try? HostileRoundTwelveEscapedTransactionTests.escapedFromAFreedStore("set").set(2, forKey: "k")
        }
        Self.expectStopped(result, "set")
    }

    @Test func removeAllAfterTheBlockStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            try? HostileRoundTwelveEscapedTransactionTests.escapedFromAFreedStore("clear").removeAll()
        }
        Self.expectStopped(result, "clear")
    }

    /// From another thread, after the block returned and the store went.
    @Test func aReadFromAnotherThreadAfterTheBlockStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let transaction = HostileRoundTwelveEscapedTransactionTests.escapedFromAFreedStore("thread")
            nonisolated(unsafe) let escaped = transaction
            let thread = Thread { _ = escaped.registeredDefault(forKey: "d") }
            thread.start()
            sleep(30)  // the thread stops the process; a deadline if it does not
        }
        Self.expectStopped(result, "thread")
    }

    /// Reflection (`dump`, a debugger's or a logger's `Mirror`) of an ended transaction
    /// whose store is gone reads each stored property, the store included: it must not
    /// reach the freed store.
    @Test func dumpingAnEndedTransactionWhoseStoreIsGoneIsSafe() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let transaction = HostileRoundTwelveEscapedTransactionTests.escapedFromAFreedStore("dump")
            var text = ""
            for _ in 0..<50 { text = ""; dump(transaction, to: &text) }
            precondition(!text.isEmpty)
        }
        Self.removeDirectory("dump")
        _ = result
    }
}
