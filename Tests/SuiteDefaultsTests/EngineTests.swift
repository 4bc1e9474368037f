import Foundation
@testable import SuiteDefaults
import Testing
import TestSupport

/// The engine alone, without a `SuiteStore` or an observer: what it applies and
/// diagnoses comes back as values.
@Suite("Engine") struct EngineTests {
    let directory = TemporaryDirectory()

    /// A state of the suite "engine", as one process would open it.
    func openState() throws -> StoreState {
        let handle = try SuiteFiles.openDirectory(path: directory.path, sharing: .private, suite: "engine")
        return try StoreState(files: SuiteFiles(suite: "engine", directory: handle, sharing: .private))
    }

    /// Runs `body` under the exclusive lock, caught up, as every write does.
    func exclusively<R>(_ state: StoreState, _ body: (StoreState) throws -> R) throws -> R {
        #expect(try state.tryLockFile(.exclusive))
        defer { state.unlockFile() }
        try state.catchUp(exclusive: true)
        return try body(state)
    }

    /// The commits applied since the last hand-over, each with its changes.
    func takeCommits(_ state: StoreState) -> [(commit: AppliedCommit, changes: [KeyChange])] {
        let applied = state.appliedCommits
        state.appliedCommitsHandedOver()
        return applied.commits.map { ($0, Array(applied.changes(of: $0))) }
    }

    func set(_ key: String, _ value: SuiteValue, in state: StoreState, options: Suite.Options = Suite.Options()) throws {
        let operation = try Operation.validated(value, forKey: key, suite: "engine", maximumValueSize: 1 << 20)
        try exclusively(state) { try $0.commit([operation], durability: .standard, options: options) }
    }

    @Test func nothingIsRecordedUntilAskedFor() throws {
        let state = try openState()
        try set("a", 1, in: state)
        #expect(takeCommits(state).isEmpty)
        #expect(state.contents["a"] == 1)
    }

    @Test func aCommitComesBackAsAnAppliedCommit() throws {
        let state = try openState()
        state.collectsChanges = true
        try set("a", 1, in: state)
        try set("a", 2, in: state)
        let commits = takeCommits(state)
        #expect(commits.map(\.commit.kind) == [.commit, .commit])
        #expect(commits.map(\.commit.pid) == [getpid(), getpid()])
        #expect(commits.map(\.changes) == [[KeyChange(key: "a", oldValue: nil, newValue: 1)],
                                           [KeyChange(key: "a", oldValue: 1, newValue: 2)]])
        #expect(commits[1].commit.sequence == commits[0].commit.sequence + 1)
        #expect(takeCommits(state).isEmpty, "handed over once")
    }

    @Test func aCatchUpReturnsAnotherWritersCommitsInOrder() throws {
        let writer = try openState(), reader = try openState()
        reader.collectsChanges = true
        try exclusively(reader) { _ in }
        for value in 1...3 { try set("n", .integer(value), in: writer) }
        try exclusively(reader) { _ in }
        let commits = takeCommits(reader)
        #expect(commits.map { $0.changes.map(\.newValue) } == [[1], [2], [3]])
        #expect(commits.allSatisfy { $0.commit.kind == .commit })
    }

    /// Catch-ups read into storage kept from one to the next; each sees only the
    /// bytes it read, never what a longer read before it left behind.
    @Test func aCatchUpSeesOnlyTheBytesItRead() throws {
        let writer = try openState(), reader = try openState()
        reader.collectsChanges = true
        try set("k", "v0", in: writer)
        try exclusively(reader) { _ in }
        _ = takeCommits(reader)
        // Longer than the first storage made, then short, then beyond what is kept, then short.
        for value in [String(repeating: "x", count: 700), "y", String(repeating: "z", count: 5000), "w"] {
            try set("k", .string(value), in: writer)
            #expect(reader.catchUpWithoutFileLock() == .caughtUp, "\(value.utf8.count) bytes")
            #expect(reader.contents["k"] == .string(value))
            #expect(takeCommits(reader).map { $0.changes.map(\.newValue) } == [[.string(value)]])
        }
    }

    @Test func aReaderBehindCompactionsStillGetsEveryCommit() throws {
        let writer = try openState(), reader = try openState()
        reader.collectsChanges = true
        try set("n", 0, in: writer)
        try exclusively(reader) { _ in }
        _ = takeCommits(reader)
        for value in 1...3 {
            try set("n", .integer(value), in: writer)
            try exclusively(writer) { try $0.compact(durable: false, historyLimit: 1 << 20) }
        }
        try exclusively(reader) { _ in }
        let commits = takeCommits(reader)
        #expect(commits.map(\.commit.kind) == [.commit, .commit, .commit], "read from the history, not folded")
        #expect(commits.map { $0.changes.map(\.newValue) } == [[1], [2], [3]])
    }

    @Test func aRepairComesBackAsANetChangeAndADiagnostic() throws {
        let state = try openState()
        try set("a", "kept", in: state)
        try set("b", "lost", in: state)
        let fresh = try openState()
        fresh.collectsChanges = true
        try exclusively(fresh) { _ in }
        _ = takeCommits(fresh)
        // Flip a byte in the last record, and read the file from scratch, as the
        // first process after a reboot does.
        var bytes = try #require(directory.bytes(of: "engine.suite"))
        bytes[bytes.count - 3] ^= 0xFF
        try directory.write(bytes, to: "engine.suite")
        let diagnostics = try exclusively(fresh) { state in
            try state.rebuild()
            return state.takeDiagnostics()
        }
        let commits = takeCommits(fresh)
        #expect(diagnostics.map(\.kind).contains(.repairedDamage))
        #expect(commits.map(\.commit.kind) == [.netChange])
        #expect(commits.first?.changes == [KeyChange(key: "b", oldValue: "lost", newValue: nil)])
    }

    /// A catch-up applies another writer's records as it decodes them; one that does
    /// not verify, after one that does, sends the reader to a repair, which reads the
    /// file whole: the good record is kept, the damaged one is not, and a copy is kept.
    @Test(arguments: [false, true])
    func aCatchUpThatMeetsADamagedRecordRepairs(firstWithTheSharedLock: Bool) throws {
        let writer = try openState(), reader = try openState()
        try set("a", 1, in: writer)
        try exclusively(reader) { _ in }
        try set("b", 2, in: writer)
        try set("c", 3, in: writer)
        var bytes = try #require(directory.bytes(of: "engine.suite"))
        bytes[bytes.count - 3] ^= 0xFF
        try directory.write(bytes, to: "engine.suite")
        if firstWithTheSharedLock {
            #expect(try reader.tryLockFile(.shared))
            defer { reader.unlockFile() }
            #expect(throws: NeedsExclusiveLock.self) { try reader.catchUp(exclusive: false) }
        }
        try exclusively(reader) { _ in }
        #expect(reader.contents.values == ["a": 1, "b": 2], "the verified record kept, the damaged one not")
        #expect(directory.names().contains { $0.hasPrefix("engine.suite.damaged-") })
        #expect(reader.takeDiagnostics().map(\.kind).contains(.repairedDamage))
    }
}
