@_spi(Tools) @_spi(Testing) @testable import SuiteDefaults
import Glibc
import Testing
import TestSupport

/// What tests that drive the engine (`StoreState`) in this process, in their own
/// temporary directory, share: opening a state, the catch-up of a process that may only
/// read, a commit of one key, and the changes heard since the last look.
protocol EngineStateTesting {
    var directory: TemporaryDirectory { get }
}

extension EngineStateTesting {
    func openState(_ suite: String) throws -> StoreState {
        let handle = try SuiteFiles.openDirectory(path: directory.path, sharing: .private, suite: suite)
        return try StoreState(files: SuiteFiles(suite: suite, directory: handle, sharing: .private))
    }

    /// The 8 bytes at `offset` of the suite's lock file (the shared header).
    func readHeaderWord(_ suite: String, at offset: off_t) throws -> UInt64 {
        let lock = Glibc.open(directory.file("\(suite).suite.lock").path, O_RDONLY | O_CLOEXEC)
        try #require(lock >= 0)
        defer { close(lock) }
        var value: UInt64 = 0
        #expect(pread(lock, &value, 8, offset) == 8)
        return value
    }

    /// Committed length and data file ID set to 0 (a header the format allows: a suite
    /// not written yet), and the generation moved on so that the process catches up.
    func forgeNoDataFile(_ suite: String) throws {
        let generation = try readHeaderWord(suite, at: 16)
        try writeHeaderWord(suite, at: 24, 0)
        try writeHeaderWord(suite, at: 32, 0)
        try writeHeaderWord(suite, at: 16, generation &+ 2)
    }

    /// Writes 8 bytes at `offset` of the suite's lock file (the shared header), as a
    /// process outside the library could.
    func writeHeaderWord(_ suite: String, at offset: off_t, _ value: UInt64) throws {
        let lock = Glibc.open(directory.file("\(suite).suite.lock").path, O_RDWR | O_CLOEXEC)
        try #require(lock >= 0)
        defer { close(lock) }
        var value = value
        #expect(pwrite(lock, &value, 8, offset) == 8)
    }

    /// What `SuiteStore.refresh` does in a process that may only read: the locked
    /// catch-up, or, when that needs a repair, the read of the whole file (then true).
    @discardableResult
    func catchUpReadOnly(_ state: StoreState) throws -> Bool {
        #expect(try state.tryLockFile(.shared))
        defer { state.unlockFile() }
        do {
            try state.catchUp(exclusive: false)
            return false
        } catch is NeedsExclusiveLock {
            try state.loadWithoutRepair()
            return true
        }
    }

    func commit(_ key: String, _ value: String, in state: StoreState) throws {
        #expect(try state.tryLockFile(.exclusive))
        defer { state.unlockFile() }
        try state.catchUp(exclusive: true)
        let operation = try SuiteDefaults.Operation.validated(.string(value), forKey: key, suite: state.suite, maximumValueSize: 1 << 20)
        try state.commit([operation], durability: .standard, options: Suite.Options())
    }

    /// The changes of the commits applied since the last call, one line per key, and with
    /// `withKinds` the kind of commit each came in.
    func takeChanges(_ state: StoreState, withKinds: Bool = false) -> [String] {
        let applied = state.appliedCommits
        state.appliedCommitsHandedOver()
        return applied.commits.flatMap { commit in
            applied.changes(of: commit).map { change in
                let line = "\(change.key): \(change.oldValue.map { "\($0)" } ?? "-") -> \(change.newValue.map { "\($0)" } ?? "-")"
                return withKinds ? "\(line) \(commit.kind)" : line
            }
        }
    }
}

/// Every stored entry of `suite` as its mark (1 for a default) and its stored bytes:
/// "the same" as an export promises it (Swift's `==` calls -0.0 and 0.0 equal).
func exactEntries(of suite: Suite) throws -> [String: [UInt8]] {
    try suite.storedEntries().mapValues { try [$0.isDefault ? 1 : 0] + storedBytes($0.value) }
}

/// Imports `text` into `suite`, which this fills with a default and a choice first, and
/// expects it refused with a `SuiteError` of one of `codes` that names the suite, and
/// nothing committed.
func expectImportRefused(_ text: String, into suite: Suite, codes: [SuiteError.Code]) throws {
    try suite.removeAll()
    try suite.setIfAbsent("metric", forKey: "units")
    try suite.set("Ann", forKey: "name")
    let before = try exactEntries(of: suite)
    let sequence = suite.lastCommitSequence
    do {
        try suite.importJSON(text)
        Issue.record("imported: \(suite.exportJSON())")
    } catch let error as SuiteError {
        #expect(codes.contains(error.code), "\(error)")
        #expect(error.suite == suite.name, "the error names the suite: \(error)")
    }
    #expect(try exactEntries(of: suite) == before)
    #expect(suite.lastCommitSequence == sequence, "nothing was committed")
}
