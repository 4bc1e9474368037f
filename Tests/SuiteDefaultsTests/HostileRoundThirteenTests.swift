import ChildProcess
import Foundation
import Glibc
import Testing
import TestSupport
import ToolSupport
@_spi(Tools) @_spi(Testing) @testable import SuiteDefaults

/// The thirteenth hostile round: commit c970e9f attacked.
/// - `Suite.update` is `@inlinable` and keeps the block's result in a local optional
///   that it force-unwraps after a non-generic `update(durability:mirrored:_:)`;
///   `updateAsMirror` the same; `SuiteStore.transaction` is not generic;
/// - a transaction asks a `hasWrites` flag, not its optional write, whether it wrote.
@Suite("Hostile round thirteen", .serialized)
struct HostileRoundThirteenTests: EngineStateTesting {
    let directory = TemporaryDirectory()

    func open(_ name: String, options: Suite.Options = Suite.Options()) throws -> Suite {
        try Suite(named: name, directory: directory.url, options: options)
    }

    // MARK: 1. The block's result, kept by the inlined update

    /// Results of every awkward type come back exactly, both where `R` is known (the
    /// update inlined here, specialized) and where it is not (a generic function of this
    /// module that cannot be specialized): nested optionals keep which level is nil,
    /// `Any` holding a nil stays that, a large struct and a class come back whole and
    /// identical. Each block also increments a counter: every commit happened once.
    @Test func resultsOfEveryShapeComeBackExactly() throws {
        let suite = try open("shapes")
        var commits = 0
        func bump(_ transaction: SuiteTransaction) throws {
            try transaction.set((transaction.integer(forKey: "n") ?? 0) + 1, forKey: "n")
            commits += 1
        }
        // Known R, inlined and specialized here.
        let plainNil: Int? = try suite.update { try bump($0); return nil }
        #expect(plainNil == nil)
        let innerNil: Int?? = try suite.update { try bump($0); return .some(nil) }
        #expect(Self.level(innerNil) == "some(nil)", "\(String(describing: innerNil))")
        let outerNil: Int?? = try suite.update { try bump($0); return nil }
        #expect(Self.level(outerNil) == "nil", "\(String(describing: outerNil))")
        let both: Int?? = try suite.update { try bump($0); return .some(.some(7)) }
        #expect(Self.level(both) == "7")
        let deep: Int??? = try suite.update { try bump($0); return .some(.some(nil)) }
        if case .some(.some(.none)) = deep {} else { Issue.record("Int??? came back as \(String(describing: deep))") }
        let void: Void = try suite.update { try bump($0) }
        _ = void
        let anyNil: Any = try suite.update { transaction -> Any in try bump(transaction); return Int?.none as Any }
        if case .some(.none) = anyNil as? Int? {} else { Issue.record("Any(nil) came back as \(anyNil)") }
        let large: Large = try suite.update { try bump($0); return Large(seed: 3) }
        #expect(large == Large(seed: 3))
        let object = Box(41)
        let same: Box = try suite.update { try bump($0); return object }
        #expect(same === object)
        let result: Result<Int?, Failure> = try suite.update { try bump($0); return .failure(Failure(code: 9)) }
        #expect(result == .failure(Failure(code: 9)))
        // Unknown R: the generic helper runs the update with R given by its metadata.
        #expect(try Self.level(Self.generic(suite, Int??.some(nil), &commits)) == "some(nil)")
        #expect(try Self.level(Self.generic(suite, Int??.none, &commits)) == "nil")
        #expect(try Self.generic(suite, Large(seed: 5), &commits) == Large(seed: 5))
        #expect(try Self.generic(suite, object, &commits) === object)
        let genericVoid: Void = try Self.generic(suite, (), &commits)
        _ = genericVoid
        if case .some(.some(.none)) = try Self.generic(suite, Int???.some(.some(nil)), &commits) {} else {
            Issue.record("Int??? through the generic path lost its level")
        }
        // Through updateAsMirror, generic too.
        #expect(try Self.level(Self.generic(suite, Int??.some(nil), &commits, mirrored: true)) == "some(nil)")
        #expect(try Self.level(Self.generic(suite, Int??.none, &commits, mirrored: true)) == "nil")
        #expect(try Self.generic(suite, Large(seed: 8), &commits, mirrored: true) == Large(seed: 8))
        #expect(suite.integer(forKey: "n") == commits, "\(commits) blocks ran, the counter says \(String(describing: suite.integer(forKey: "n")))")
        #expect(commits == 19)
    }

    /// Which level of an `Int??` is nil.
    static func level(_ value: Int??) -> String {
        switch value {
        case .none: "nil"
        case .some(.none): "some(nil)"
        case .some(.some(let number)): "\(number)"
        }
    }

    /// An increment of "n" returning `value`, in a generic function of this module
    /// that cannot be specialized: `R` is known only by its metadata.
    @inline(never)
    static func generic<T>(_ suite: Suite, _ value: T, _ commits: inout Int, mirrored: Bool = false) throws -> T {
        let body = { (transaction: SuiteTransaction) throws -> T in
            try transaction.set((transaction.integer(forKey: "n") ?? 0) + 1, forKey: "n")
            commits += 1
            return value
        }
        return try mirrored ? suite.updateAsMirror(body) : suite.update(body)
    }

    struct Eight: Equatable { var a, b, c, d, e, f, g, h: UInt64 }
    /// Far larger than the few words a result is returned in.
    struct Large: Equatable {
        var parts: [Eight]
        var inline: (Eight, Eight, Eight, Eight, Eight, Eight, Eight, Eight)
        var text: String
        init(seed: UInt64) {
            func eight(_ base: UInt64) -> Eight { Eight(a: base, b: base &+ 1, c: base &+ 2, d: base &+ 3, e: base &+ 4, f: base &+ 5, g: base &+ 6, h: base &* 7) }
            parts = (0..<4).map { eight(seed &* 100 &+ UInt64($0)) }
            inline = (eight(seed), eight(seed &+ 10), eight(seed &+ 20), eight(seed &+ 30), eight(seed &+ 40), eight(seed &+ 50), eight(seed &+ 60), eight(~seed))
            text = String(repeating: "é", count: 40) + "\(seed)"
        }
        static func == (x: Large, y: Large) -> Bool {
            x.parts == y.parts && x.text == y.text && x.inline.0 == y.inline.0 && x.inline.1 == y.inline.1 && x.inline.2 == y.inline.2
                && x.inline.3 == y.inline.3 && x.inline.4 == y.inline.4 && x.inline.5 == y.inline.5 && x.inline.6 == y.inline.6
                && x.inline.7 == y.inline.7
        }
    }

    final class Box { let value: Int; init(_ value: Int) { self.value = value } }
    struct Failure: Error, Equatable { let code: Int }

    /// A class result is released exactly when the caller lets it go: after a normal
    /// return, and at once when the block throws after making it or the commit fails
    /// after the block returned it (the local optional that keeps it must not leak it,
    /// nor release it early). A transaction returned as the result is ended.
    @Test func classResultsAreNeitherLeakedNorReleasedEarly() throws {
        let suite = try open("released", options: .init(maximumSuiteSize: 2_000))
        weak var returned: Box?
        do {
            let box = try suite.update { transaction -> Box in
                try transaction.set(1, forKey: "k")
                let made = Box(1)
                returned = made
                return made
            }
            #expect(returned === box && box.value == 1)
        }
        #expect(returned == nil, "the result outlived its last use")
        weak var thrown: Box?
        #expect(throws: Failure(code: 1)) {
            _ = try suite.update { transaction -> Box in
                try transaction.set(2, forKey: "k")
                let made = Box(2)
                thrown = made
                if made.value == 2 { throw Failure(code: 1) }
                return made
            }
        }
        #expect(thrown == nil, "a block's object leaked when the block threw")
        weak var refused: Box?
        do {
            _ = try suite.update { transaction -> Box in
                try transaction.set(String(repeating: "x", count: 3_000), forKey: "big")
                let made = Box(3)
                refused = made
                return made
            }
            Issue.record("a commit over maximumSuiteSize returned")
        } catch let error as SuiteError {
            #expect(error.code == .suiteTooLarge, "\(error)")
        }
        #expect(refused == nil, "the result of a block whose commit failed leaked")
        #expect(suite.integer(forKey: "k") == 1 && suite.storedValue(forKey: "big") == nil)
        // The transaction itself as the result, alone and in a tuple: ended.
        let (escaped, value) = try suite.update { transaction in (transaction, transaction.integer(forKey: "k")) }
        #expect(value == 1)
        let open = Mirror(reflecting: escaped).children.first { $0.label == "isOpen" }?.value as? Bool
        #expect(open == false, "a transaction returned from its block is still open")
    }

    // MARK: 2. Blocks that throw, and commits that fail after the block

    /// A block that throws, whatever its result type, writes nothing: the error
    /// arrives as thrown (a caller's own type, a CancellationError, a SuiteError a
    /// staged write threw and the block rethrew), the thread is no longer inside the
    /// update, and the next update runs and returns.
    @Test func aThrowingBlockWritesNothingAndTheNextUpdateReturns() throws {
        let suite = try open("thrown")
        try suite.set(0, forKey: "k")
        var runs = 0
        #expect(throws: Failure(code: 2)) {
            let _: Int?? = try suite.update { transaction in
                runs += 1
                try transaction.set(1, forKey: "k")
                try transaction.set(1, forKey: "j")
                #expect(suite.isInsideUpdateOnCurrentThread)
                throw Failure(code: 2)
            }
        }
        #expect(throws: CancellationError.self) {
            try suite.update { transaction -> Large in
                runs += 1
                try transaction.removeAll()
                throw CancellationError()
            }
        }
        do {
            try suite.update { transaction -> Void in
                runs += 1
                try transaction.set(5, forKey: "k")
                try transaction.set(String(repeating: "v", count: 5_000_000), forKey: "huge")
            }
            Issue.record("a value over maximumValueSize was staged")
        } catch let error as SuiteError {
            #expect(error.code == .valueTooLarge, "\(error)")
        }
        #expect(runs == 3)
        #expect(!suite.isInsideUpdateOnCurrentThread)
        #expect(suite.storedValues() == ["k": 0], "\(suite.storedValues())")
        let after: Int? = try suite.update { transaction in
            try transaction.set(9, forKey: "k")
            return transaction.integer(forKey: "k")
        }
        #expect(after == 9 && suite.integer(forKey: "k") == 9)
    }

    /// A block that catches the refusal of one staged write (too large, a bad key) and
    /// returns: the refused write left no trace (reads see the committed state, not a
    /// write), the rest commits, and the result comes back.
    @Test func aRefusedWriteCaughtInsideTheBlockLeavesNoTrace() throws {
        let suite = try open("refused-inside", options: .init(maximumValueSize: 100))
        try suite.set("base", forKey: "k")
        let result: String?? = try suite.update { transaction in
            // The refused write is the transaction's first: nothing must count as written.
            #expect(throws: SuiteError.self) { try transaction.set(String(repeating: "x", count: 200), forKey: "k") }
            #expect(throws: SuiteError.self) { try transaction.set(1, forKey: "") }
            #expect(transaction.string(forKey: "k") == "base")
            try transaction.set("one", forKey: "j")
            #expect(throws: SuiteError.self) { try transaction.set(String(repeating: "x", count: 200), forKey: "j") }
            #expect(transaction.string(forKey: "j") == "one" && transaction.string(forKey: "k") == "base")
            return .some(transaction.string(forKey: "absent"))
        }
        #expect(result.map { $0 == nil } == true, "\(String(describing: result))")
        #expect(suite.storedValues() == ["k": "base", "j": "one"], "\(suite.storedValues())")
    }

    // MARK: 3. Reads inside a transaction (the hasWrites flag)

    /// Scripts that walk the flag through each of its changes: the first write a
    /// removal, a clear before and after writes, one key written twice, a second key
    /// (the list), more than eight keys (the table of positions), a clear and the
    /// same again. After each step every key reads as staged, and the commit stores
    /// what the script staged.
    @Test func readsAfterEveryStepOfScriptedTransactionsSeeWhatWasStaged() throws {
        let suite = try open("scripted")
        let keys = ["k", "j", "café"] + (0..<12).map { "m\($0)" }
        enum Step { case set(String, Int), remove(String), clear }
        let scripts: [[Step]] = [
            [.remove("k")],
            [.remove("k"), .set("j", 7)],
            [.set("k", 2), .clear],
            [.set("k", 2), .clear, .set("k", 3)],
            [.clear, .remove("k"), .set("j", 4)],
            [.set("k", 1), .set("k", 2), .set("j", 3), .clear, .set("k", 4)],
            [.set("cafe\u{301}", 5), .remove("café"), .set("k", 6)],
            (0..<12).map { .set("m\($0)", $0) } + [.clear] + (0..<10).map { .set("m\($0)", 100 + $0) } + [.remove("m3"), .set("m3", 33)],
            (0..<12).map { .set("m\($0)", $0) } + (0..<12).map { .remove("m\($0)") } + [.set("m5", 55)],
            [.clear, .clear, .set("k", 1), .clear],
            [.set("k", 2), .remove("k")],
            [.remove("k"), .set("k", 8)],
        ]
        var problems: [String] = []
        for (index, script) in scripts.enumerated() {
            // The same starting contents for each script.
            try suite.removeAll()
            try suite.update { transaction in
                try transaction.set(0, forKey: "k")
                try transaction.set(0, forKey: "j")
                try transaction.set(0, forKey: "m1")
            }
            var staged: [String: Int] = ["k": 0, "j": 0, "m1": 0]
            try suite.update { transaction in
                for (position, step) in script.enumerated() {
                    switch step {
                    case .set(let key, let value): try transaction.set(value, forKey: key); staged[UTF8Text.normalForm(key).text] = value
                    case .remove(let key): try transaction.removeValue(forKey: key); staged[UTF8Text.normalForm(key).text] = nil
                    case .clear: try transaction.removeAll(); staged = [:]
                    }
                    for key in keys where transaction.integer(forKey: key) != staged[key] {
                        problems.append("script \(index) step \(position): \(key) read \(String(describing: transaction.integer(forKey: key))), staged \(String(describing: staged[key]))")
                    }
                }
            }
            let stored = suite.storedValues()
            if stored != staged.mapValues({ SuiteValue.integer($0) }) {
                problems.append("script \(index) committed \(stored), staged \(staged)")
            }
        }
        #expect(problems.isEmpty, "\(problems.prefix(6))")
    }

    /// Long random transactions (up to 40 steps: sets, removals, clears, on a few
    /// keys and their other normal forms, so that the list and its table of positions
    /// come and go), each step followed by reads of several keys, checked against a
    /// model; each commit checked against the model, through the suite and through an
    /// engine state of its own that reads the file.
    @Test func readsInsideLongRandomTransactionsAgreeWithAModel() throws {
        let name = "random-reads"
        let suite = try open(name)
        let reader = try openState(name)
        let keys = ["a", "b", "café", "cafe\u{301}", "Å", "\u{212B}"] + (0..<10).map { "k\($0)" }
        var random = SplitMix64(seed: 0x13_0001)
        func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &random)] }
        var model: [String: SuiteValue] = [:]
        var problems: [String] = []
        for round in 0..<300 {
            var staged = model
            var log: [String] = []
            let commits = Int.random(in: 0..<8, using: &random) != 0
            do {
                let returned: [String: SuiteValue]? = try suite.update { transaction in
                    for _ in 0..<Int.random(in: 0...40, using: &random) {
                        let key = pick(keys), nfc = UTF8Text.normalForm(key).text
                        switch Int.random(in: 0..<20, using: &random) {
                        case 0..<11:
                            let value: SuiteValue = Int.random(in: 0..<3, using: &random) == 0 ? .double(-0.0) : .integer(Int.random(in: 0..<5, using: &random))
                            try transaction.setValue(value, forKey: key)
                            staged[nfc] = value
                            log.append("set \(nfc)=\(value)")
                        case 11..<18:
                            try transaction.removeValue(forKey: key)
                            staged[nfc] = nil
                            log.append("remove \(nfc)")
                        default:
                            try transaction.removeAll()
                            staged = [:]
                            log.append("clear")
                        }
                        for _ in 0..<3 {
                            let read = pick(keys), readNFC = UTF8Text.normalForm(read).text
                            let now = transaction.storedValue(forKey: read)
                            if !now.isStored(identicallyTo: staged[readNFC]) {
                                problems.append("round \(round) after [\(log.suffix(4).joined(separator: ", "))]: \(readNFC) read \(String(describing: now)), staged \(String(describing: staged[readNFC]))")
                            }
                        }
                    }
                    if !commits { throw Failure(code: round) }
                    return staged
                }
                if !ModelEntry.same(returned!.mapValues { ModelEntry(value: $0, isDefault: false) }, staged.mapValues { ModelEntry(value: $0, isDefault: false) }) {
                    problems.append("round \(round): the block's result differs from what it returned")
                }
                model = staged
            } catch let failure as Failure where !commits && failure.code == round {}
            let stored = suite.storedEntries().mapValues { ModelEntry(value: $0.value, isDefault: $0.isDefault) }
            if !ModelEntry.same(stored, model.mapValues { ModelEntry(value: $0, isDefault: false) }) {
                problems.append("round \(round) [\(log.joined(separator: ", "))]: stored \(stored), the model \(model)")
            }
            if round % 20 == 19 {
                try catchUpReadOnly(reader)
                let read = reader.contents.mapEntries { ModelEntry(value: $0.value, isDefault: $0.isDefault) }
                if !ModelEntry.same(read, model.mapValues { ModelEntry(value: $0, isDefault: false) }) {
                    problems.append("round \(round): another reader holds \(read), the model \(model)")
                }
            }
            if problems.count > 5 { break }
        }
        #expect(problems.isEmpty, "\(problems.count) problems: \(problems.prefix(5))")
    }

    // MARK: 4. Threads, other suites, mirrors

    /// Four threads of read-increment-write updates, half through `updateAsMirror`,
    /// each returning what it read (an optional, nil for the first) with its own tag:
    /// every result is its own block's, the values read are nil and 0..<total-1 each
    /// once (none lost, none twice), and the counter ends at total-1.
    @Test func concurrentUpdatesEachReturnTheirOwnBlocksResult() throws {
        let suite = try open("threads")
        let perThread = 150
        let results = LockedBox<[(thread: Int, round: Int, read: Int?, tag: String)]>([])
        let failures = LockedBox<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for round in 0..<perThread {
                do {
                    let body: (SuiteTransaction) throws -> (Int?, String) = { transaction in
                        let read = transaction.integer(forKey: "counter")
                        try transaction.set((read ?? -1) + 1, forKey: "counter")
                        return (read, "\(thread).\(round)")
                    }
                    let (read, tag) = try thread % 2 == 0 ? suite.update(body) : suite.updateAsMirror(body)
                    results.withLock { $0.append((thread, round, read, tag)) }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(failures.current.isEmpty, "\(failures.current.prefix(3))")
        let all = results.current
        let total = 4 * perThread
        #expect(all.allSatisfy { $0.tag == "\($0.thread).\($0.round)" }, "a result reached another block's caller")
        let reads = all.map { $0.read ?? -1 }.sorted()
        #expect(reads == Array(-1..<(total - 1)), "values read: \(reads.count), first \(reads.prefix(5))")
        #expect(suite.integer(forKey: "counter") == total - 1)
    }

    /// A block that uses another suite: a write there that waits for a lock another
    /// process holds and times out (the other suite's lock loop, inside this block),
    /// caught by the block; then an update of the other suite returning its own
    /// result. The outer block runs exactly once and returns its result; the inner
    /// results are their own.
    @Test func aBlockWaitingOnAnotherSuitesLockRunsOnceAndReturns() throws {
        let outer = try open("outer")
        let inner = try open("inner", options: .init(lockTimeout: .milliseconds(300)))
        try inner.set(0, forKey: "x")
        let holder = try startWorker("hold-lock", in: directory, suite: "inner")
        defer { _ = holder.kill() }
        holder.expectLine(startingWith: "holding")
        var runs = 0
        let result: (Int?, String?) = try outer.update { transaction in
            runs += 1
            try transaction.set(runs, forKey: "runs")
            do {
                try inner.set(1, forKey: "x")
                return (nil, "the held suite was written")
            } catch let error as SuiteError {
                return (transaction.integer(forKey: "runs"), "\(error.code)")
            }
        }
        #expect(runs == 1)
        #expect(result.0 == 1 && result.1 == "lockTimeout", "\(result)")
        #expect(outer.integer(forKey: "runs") == 1)
        #expect(holder.kill() != nil, "the lock's holder was not reaped")
        let nested: (Int??, Int?) = try outer.update { transaction in
            let fromInner: Int?? = try inner.update { innerTransaction in
                try innerTransaction.set(2, forKey: "x")
                return .some(nil)
            }
            try transaction.set(2, forKey: "runs")
            return (fromInner, transaction.integer(forKey: "runs"))
        }
        #expect(Self.level(nested.0) == "some(nil)" && nested.1 == 2, "\(nested)")
        #expect(inner.integer(forKey: "x") == 2 && outer.integer(forKey: "runs") == 2)
    }

    /// `updateAsMirror` returns its block's result and marks its commit (and only its
    /// own, not a plain update's); a throwing mirror block writes nothing.
    @Test func updateAsMirrorReturnsItsResultAndMarksOnlyItsCommit() throws {
        let suite = try open("mirrored")
        let before = suite.lastCommitSequence
        let fromMirror: Int?? = try suite.updateAsMirror { transaction in
            try transaction.set(1, forKey: "m")
            try transaction.set(1, forKey: "n")
            return .some(nil)
        }
        #expect(Self.level(fromMirror) == "some(nil)")
        let fromPlain: Int?? = try suite.update { transaction in
            try transaction.set(2, forKey: "p")
            return nil
        }
        #expect(Self.level(fromPlain) == "nil")
        #expect(throws: Failure(code: 3)) {
            try suite.updateAsMirror { transaction -> Int in
                try transaction.set(3, forKey: "q")
                throw Failure(code: 3)
            }
        }
        #expect(try suite.keysOfMirroredCommits(after: before, by: getpid()) == ["m", "n"])
        #expect(suite.storedValues() == ["m": 1, "n": 1, "p": 2], "\(suite.storedValues())")
    }

    // MARK: 5. Commits that cannot be made

    /// The end of an exit test's child whose checks (preconditions) all held: a
    /// marker and exit status 3, so that the parent, expecting a failure, sees the
    /// child's errors whichever way it ended.
    static let passedMarker = "hostile-thirteen: every check held"
    static func passed() -> Never {
        FileHandle.standardError.write(Data((passedMarker + "\n").utf8))
        exit(3)
    }

    static func expectPassed(_ result: ExitTest.Result?, sourceLocation: SourceLocation = #_sourceLocation) {
        let errors = standardErrorText(of: result)
        #expect(result?.exitStatus == .exitCode(3) && errors.contains(passedMarker), "the child's errors: \(errors.prefix(700))",
                sourceLocation: sourceLocation)
    }

    /// A full disk (RLIMIT_FSIZE, SIGXFSZ ignored) under an update whose block has
    /// returned its result: the update throws `.noSpace`, nothing is written, the
    /// result is released, and the next update, small enough, returns its own.
    @Test func aFullDiskAfterTheBlockReturnedThrowsAndTheNextUpdateReturns() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let path = "/tmp/hostile-thirteen-\(getppid())-full"
            try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            let suite = try! Suite(named: "full", directory: URL(fileURLWithPath: path))
            for index in 0..<20 { try! suite.set("value \(index)", forKey: "k\(index)") }
            var status = stat()
            precondition(stat(path + "/full.suite", &status) == 0)
            signal(SIGXFSZ, SIG_IGN)
            var bound = rlimit(rlim_cur: rlim_t(Int(status.st_size) + 300), rlim_max: rlim_t(Int(status.st_size) + 300))
            precondition(setrlimit(Int32(RLIMIT_FSIZE.rawValue), &bound) == 0)
            weak var kept: HostileRoundThirteenTests.Box?
            var runs = 0
            do {
                _ = try suite.update { transaction -> HostileRoundThirteenTests.Box? in
                    runs += 1
                    try transaction.set(String(repeating: "x", count: 4_000), forKey: "big")
                    try transaction.set("changed", forKey: "k0")
                    let box = HostileRoundThirteenTests.Box(1)
                    kept = box
                    return box
                }
                preconditionFailure("an update that could not be written returned")
            } catch let error as SuiteError {
                precondition(error.code == .noSpace, "the full disk threw \(error)")
            } catch {
                preconditionFailure("the full disk threw \(error)")
            }
            precondition(runs == 1, "the block ran \(runs) times")
            precondition(kept == nil, "the result of the refused commit leaked")
            precondition(suite.storedValue(forKey: "big") == nil && suite.string(forKey: "k0") == "value 0", "\(suite.storedValues())")
            let small: Int?? = try! suite.update { transaction in
                try transaction.set(1, forKey: "s")
                return .some(nil)
            }
            guard case .some(.none) = small else { preconditionFailure("the next update returned \(String(describing: small))") }
            precondition(suite.integer(forKey: "s") == 1)
            HostileRoundThirteenTests.passed()
        }
        try? FileManager.default.removeItem(atPath: "/tmp/hostile-thirteen-\(getpid())-full")
        Self.expectPassed(result)
    }

    /// A suite this process may only read: `update` and `updateAsMirror` throw
    /// `.readOnly` without running their blocks (the block's result is never
    /// unwrapped), and the stored value stays.
    @Test(.enabled(if: getuid() == 0, "needs root, to hand the suite's files to nobody and become nobody in the child"))
    func aReadOnlySuiteThrowsWithoutRunningTheBlock() async throws {
        let path = "/tmp/hostile-thirteen-\(getpid())-readonly"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        do {
            let suite = try Suite(named: "frozen", directory: URL(fileURLWithPath: path))
            try suite.set(1, forKey: "k")
        }
        for name in ["frozen.suite", "frozen.suite.lock"] {
            #expect(chown(path + "/" + name, 65534, 65534) == 0)
            #expect(chmod(path + "/" + name, 0o444) == 0)
        }
        // The directory is nobody's (a suite refuses another user's), and not writable.
        #expect(chown(path, 65534, 65534) == 0)
        #expect(chmod(path, 0o555) == 0)
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let path = "/tmp/hostile-thirteen-\(getppid())-readonly"
            precondition(setgroups(0, nil) == 0 && setgid(65534) == 0 && setuid(65534) == 0, "cannot become nobody")
            let suite = try! Suite(named: "frozen", directory: URL(fileURLWithPath: path))
            precondition(suite.integer(forKey: "k") == 1)
            var runs = 0
            for mirrored in [false, true] {
                do {
                    let body: (SuiteTransaction) throws -> Int?? = { transaction in
                        runs += 1
                        try transaction.set(2, forKey: "k")
                        return .some(nil)
                    }
                    let returned = try mirrored ? suite.updateAsMirror(body) : suite.update(body)
                    preconditionFailure("a read-only update returned \(String(describing: returned))")
                } catch let error as SuiteError {
                    precondition(error.code == .readOnly, "a read-only update threw \(error)")
                } catch {
                    preconditionFailure("a read-only update threw \(error)")
                }
            }
            precondition(runs == 0, "the block of a read-only update ran \(runs) times")
            precondition(suite.integer(forKey: "k") == 1)
            HostileRoundThirteenTests.passed()
        }
        Self.expectPassed(result)
    }
}

// MARK: 6. Nested updates

/// An update inside an update of the same suite stops the process with the message,
/// as before the change (the check is now beneath an inlined, non-generic layer).
/// Run as exit tests, each in a child process of its own, in a directory named after
/// the test process.
@Suite("Hostile round thirteen: nested updates")
struct HostileRoundThirteenNestedUpdateTests {
    static let message = "was used inside its own update block; use the transaction passed to the block instead."

    static func suite(_ test: String) -> Suite {
        let path = "/tmp/hostile-thirteen-\(getppid())-\(test)"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return try! Suite(named: "nested", directory: URL(fileURLWithPath: path))
    }

    static func expectStopped(_ result: ExitTest.Result?, _ test: String, sourceLocation: SourceLocation = #_sourceLocation) {
        try? FileManager.default.removeItem(atPath: "/tmp/hostile-thirteen-\(getpid())-\(test)")
        expectChildStopped(result, saying: message, sourceLocation: sourceLocation)
    }

    /// The same instance, with an optional result inside and out.
    @Test func anUpdateInsideAnUpdateStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let suite = HostileRoundThirteenNestedUpdateTests.suite("same")
            _ = try? suite.update { transaction -> Int?? in
                try transaction.set(1, forKey: "k")
                let inner: Int? = try suite.update { _ in nil }
                return .some(inner)
            }
            // Only reached if the nested update returned.
            exit(0)
        }
        Self.expectStopped(result, "same")
    }

    /// Another instance of the same suite, through updateAsMirror, inside updateAsMirror.
    @Test func aMirrorUpdateThroughAnotherInstanceInsideAMirrorUpdateStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let suite = HostileRoundThirteenNestedUpdateTests.suite("other")
            let other = try! Suite(named: "nested", directory: URL(fileURLWithPath: "/tmp/hostile-thirteen-\(getppid())-other"))
            _ = try? suite.updateAsMirror { transaction -> Int in
                try transaction.set(1, forKey: "k")
                try other.updateAsMirror { try $0.set(2, forKey: "k") }
                return 1
            }
            exit(0)
        }
        Self.expectStopped(result, "other")
    }
}
