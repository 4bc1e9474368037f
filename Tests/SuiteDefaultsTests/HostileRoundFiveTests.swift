import Foundation
import Glibc
import Synchronization
import Testing
import TestSupport
@_spi(Testing) @testable import SuiteDefaults

typealias StoreOperation = SuiteDefaults.Operation

/// Hostile tests of b65435a: catch-ups read into storage kept between them, the
/// applied commits kept as one list of changes with a range per commit, and the
/// watcher matching events to suites by the bytes of their names. Every attack here
/// held on b65435a: they stay as guards of what that change must keep true.
@Suite("Hostile, round five: kept storage and byte names", .serialized)
struct HostileRoundFiveTests {
    let directory = TemporaryDirectory()

    // MARK: Engine helpers

    func openState(_ suite: String = "engine") throws -> StoreState {
        let handle = try SuiteFiles.openDirectory(path: directory.path, sharing: .private, suite: suite)
        return try StoreState(files: SuiteFiles(suite: suite, directory: handle, sharing: .private))
    }

    func exclusively<R>(_ state: StoreState, _ body: (StoreState) throws -> R) throws -> R {
        #expect(try state.tryLockFile(.exclusive))
        defer { state.unlockFile() }
        try state.catchUp(exclusive: true)
        return try body(state)
    }

    func shared(_ state: StoreState) throws {
        #expect(try state.tryLockFile(.shared))
        defer { state.unlockFile() }
        try state.catchUp(exclusive: false)
    }

    func takeCommits(_ state: StoreState) -> [(commit: AppliedCommit, changes: [KeyChange])] {
        let applied = state.appliedCommits
        state.appliedCommitsHandedOver()
        return applied.commits.map { ($0, Array(applied.changes(of: $0))) }
    }

    func commit(_ operations: [StoreOperation], in state: StoreState) throws {
        try exclusively(state) { try $0.commit(operations, durability: .standard, options: Suite.Options()) }
    }

    func setOperation(_ key: String, _ value: SuiteValue) throws -> StoreOperation {
        try StoreOperation.validated(value, forKey: key, suite: "engine", maximumValueSize: 1 << 20)
    }

    /// The encoded size of a record of one set of `key` to a string of `length` bytes.
    func recordSize(_ key: String, length: Int) throws -> Int {
        let operation = try setOperation(key, .string(String(repeating: "x", count: length)))
        return RecordFormat.encode(Record(kind: .transaction, sequence: 1, timestamp: 0, pid: 0, operations: [operation], flags: [])).count
    }

    /// The longest string whose set of `key` encodes in at most `size` bytes.
    func length(of key: String, forRecordOf size: Int) throws -> Int {
        var low = 0, high = size
        while low < high {
            let middle = (low + high + 1) / 2
            if try recordSize(key, length: middle) <= size { low = middle } else { high = middle - 1 }
        }
        return low
    }

    func dataFileSize() -> Int { directory.bytes(of: "engine.suite")?.count ?? 0 }

    func dataFileInode() -> UInt {
        var status = stat()
        return stat(directory.file("engine.suite").path, &status) == 0 ? UInt(status.st_ino) : 0
    }

    // MARK: Catch-ups of every size

    /// Catch-ups whose sizes go up and down across the sizes the kept storage cares
    /// about (the 512 bytes first made, the 4096 kept, the 64 KiB read without the
    /// lock), one to three commits each, with and without collecting changes, without
    /// the lock and under it: each applies exactly what was written, no byte of an
    /// earlier, longer read.
    @Test(arguments: [(false, false), (false, true), (true, false), (true, true)])
    func catchUpsAcrossTheKeptStorageSizesApplyWhatWasWritten(collecting: Bool, unlocked: Bool) throws {
        let writer = try openState(), reader = try openState()
        reader.collectsChanges = collecting
        try commit([try setOperation("seed", 0)], in: writer)
        try exclusively(reader) { _ in }
        _ = takeCommits(reader)
        let targets = [5000, 511, 512, 513, 300, 4095, 4096, 4097, 200, 65535, 65536, 65537, 100, 4096, 600, 70000, 120]
        var serial = 0
        for target in targets {
            for count in 1...3 {
                let before = dataFileSize(), inodeBefore = dataFileInode()
                var expected: [[KeyChange]] = []
                var remaining = target
                for index in 0..<count {
                    serial += 1
                    let key = "k\(index)"
                    let share = index == count - 1 ? remaining : max(remaining / (count - index), 60)
                    let length = try length(of: key, forRecordOf: share)
                    let value = SuiteValue.string(String(repeating: Character(UnicodeScalar(UInt8(97 + serial % 26))), count: length))
                    let old = writer.contents[key]
                    try commit([try setOperation(key, value)], in: writer)
                    remaining -= try recordSize(key, length: length)
                    expected.append([KeyChange(key: key, oldValue: old, newValue: value)])
                }
                let appended = dataFileSize() - before
                if unlocked {
                    let outcome = reader.catchUpWithoutFileLock()
                    // A compaction by the writer (another file) is read under the lock.
                    if dataFileInode() == inodeBefore {
                        #expect(outcome == (appended <= StoreState.longestUnlockedRead ? .caughtUp : .needsFileLock),
                                "\(appended) bytes in \(count)")
                    }
                    if outcome != .caughtUp { try shared(reader) }
                } else {
                    try shared(reader)
                }
                #expect(reader.contents.values == writer.contents.values, "\(appended) bytes in \(count) commits")
                #expect(reader.contents.lastSequence == writer.contents.lastSequence)
                if collecting {
                    let commits = takeCommits(reader)
                    #expect(commits.map(\.changes) == expected, "\(appended) bytes in \(count) commits")
                    #expect(commits.map(\.commit.kind).allSatisfy { $0 == .commit })
                } else {
                    #expect(takeCommits(reader).isEmpty)
                }
            }
        }
    }

    /// Overwrites 4 bytes at `offset` of the data file in place (the same inode, which
    /// readers keep open).
    func patch(_ bytes: [UInt8], at offset: Int) throws {
        let descriptor = open(directory.file("engine.suite").path, O_WRONLY)
        #expect(descriptor >= 0)
        defer { close(descriptor) }
        let written = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, off_t(offset)) }
        #expect(written == bytes.count)
    }

    /// A record whose payload length lies, after a longer catch-up left a whole valid
    /// record in the kept storage: the lie may point into those stale bytes, but the
    /// catch-up sees only what it read, so it refuses, and the repair drops the record.
    @Test(arguments: [false, true], [-8, 8, 3000, -40])
    func aRecordWhoseLengthLiesIsRefusedWhateverTheKeptStorageHolds(collecting: Bool, lie: Int) throws {
        let writer = try openState(), reader = try openState()
        reader.collectsChanges = collecting
        try commit([try setOperation("seed", 0)], in: writer)
        try exclusively(reader) { _ in }
        // A long catch-up first (kept: under 4096 bytes), of a record the lie could frame again.
        let long = SuiteValue.string(String(repeating: "L", count: 3000))
        try commit([try setOperation("long", long)], in: writer)
        #expect(reader.catchUpWithoutFileLock() == .caughtUp)
        _ = takeCommits(reader)
        let start = dataFileSize()
        try commit([try setOperation("short", "s")], in: writer)
        let bytes = try #require(directory.bytes(of: "engine.suite"))
        let length = Int(UInt32(littleEndian: bytes[(start + 4)..<(start + 8)].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }))
        let lying = UInt32(max(0, length + lie))
        try patch(withUnsafeBytes(of: lying.littleEndian, Array.init), at: start + 4)
        #expect(reader.catchUpWithoutFileLock() == .needsFileLock)
        #expect(reader.contents["short"] == nil)
        #expect(takeCommits(reader).isEmpty)
        #expect(try reader.tryLockFile(.shared))
        #expect(throws: NeedsExclusiveLock.self) { try reader.catchUp(exclusive: false) }
        reader.unlockFile()
        #expect(reader.contents["short"] == nil)
        try exclusively(reader) { _ in }
        #expect(reader.contents.values == ["seed": 0, "long": long])
        // Whatever was collected, nothing says "short" was ever set.
        if collecting {
            #expect(takeCommits(reader).allSatisfy { !$0.changes.contains { $0.key == "short" && $0.newValue != nil } })
        }
    }

    /// A data file cut short after the header committed it: the read comes up short,
    /// the catch-up applies nothing, the storage kept holds no part of the last read.
    @Test func aFileCutShortAfterTheHeaderAppliesNothing() throws {
        let writer = try openState(), reader = try openState()
        reader.collectsChanges = true
        try commit([try setOperation("seed", 0)], in: writer)
        try exclusively(reader) { _ in }
        _ = takeCommits(reader)
        // Fill the kept storage with a record of the same key.
        try commit([try setOperation("k", .string(String(repeating: "A", count: 1000)))], in: writer)
        #expect(reader.catchUpWithoutFileLock() == .caughtUp)
        _ = takeCommits(reader)
        let start = dataFileSize()
        try commit([try setOperation("k", .string(String(repeating: "B", count: 1000)))], in: writer)
        // Cut the new record in half, in place.
        #expect(truncate(directory.file("engine.suite").path, off_t(start + 500)) == 0)
        #expect(reader.catchUpWithoutFileLock() == .needsFileLock)
        #expect(reader.contents["k"] == .string(String(repeating: "A", count: 1000)))
        #expect(takeCommits(reader).isEmpty)
    }

    // MARK: Applied commits

    /// A repair's net change, then commits of many keys (past the 64 kept), then
    /// small ones, all in one hand-over and in later ones: each commit's range names
    /// its own changes, and a hand-over after a large one starts from empty lists.
    @Test func theRangesOfTheAppliedCommitsSurviveRepairsAndLargeCatchUps() throws {
        let writer = try openState(), reader = try openState()
        reader.collectsChanges = true
        try commit([try setOperation("a", 1)], in: writer)
        try commit([try setOperation("b", 2)], in: writer)
        try exclusively(reader) { _ in }
        _ = takeCommits(reader)
        var bytes = try #require(directory.bytes(of: "engine.suite"))
        bytes[bytes.count - 3] ^= 0xFF
        try directory.write(bytes, to: "engine.suite")
        try exclusively(reader) { try $0.rebuild() }
        // Not handed over yet: the writer commits a transaction of 100 keys and then two small ones.
        let many = try (0..<100).map { try setOperation("m\($0)", .integer($0)) }
        try commit([.removeAll] + many, in: writer)
        try commit([try setOperation("c", 3)], in: writer)
        try commit([try setOperation("c", 4), .remove(key: "m7")], in: writer)
        try shared(reader)
        let commits = takeCommits(reader)
        #expect(commits.map(\.commit.kind) == [.netChange, .commit, .commit, .commit])
        #expect(commits.first?.changes == [KeyChange(key: "b", oldValue: 2, newValue: nil)])
        if commits.count == 4 {
            #expect(commits[1].changes.count == 101, "a removed, 100 set")
            #expect(commits[1].changes.first == KeyChange(key: "a", oldValue: 1, newValue: nil))
            #expect(commits[2].changes == [KeyChange(key: "c", oldValue: nil, newValue: 3)])
            #expect(commits[3].changes == [KeyChange(key: "c", oldValue: 3, newValue: 4),
                                           KeyChange(key: "m7", oldValue: 7, newValue: nil)])
        }
        #expect(reader.contents.values == writer.contents.values)
        // The next hand-over starts from empty lists.
        try commit([try setOperation("d", 5)], in: writer)
        #expect(reader.catchUpWithoutFileLock() == .caughtUp)
        let next = takeCommits(reader)
        #expect(next.map(\.changes) == [[KeyChange(key: "d", oldValue: nil, newValue: 5)]])
        #expect(reader.appliedCommits.changes.isEmpty && reader.appliedCommits.commits.isEmpty)
        // A commit that changes nothing adds no commit and no range.
        try commit([try setOperation("d", 5)], in: writer)
        #expect(reader.catchUpWithoutFileLock() == .caughtUp)
        #expect(takeCommits(reader).isEmpty)
    }

    // MARK: The watcher

    /// A writer of `suite` in this process with files of its own (its own lock file
    /// descriptor and shared header mapping): to the watcher, another writer.
    func writer(_ suite: String) throws -> StoreState { try openState(suite) }

    func write(_ key: String, _ value: SuiteValue, with state: StoreState) throws {
        try commit([try StoreOperation.validated(value, forKey: key, suite: state.suite, maximumValueSize: 1 << 20)], in: state)
    }

    /// Suite names whose data file names are prefixes, suffixes and near twins of
    /// one another's, the longest allowed, and multibyte ones; then fillers whose
    /// 200-byte names make every event long, so that a burst takes several reads.
    func overlappingNames(fillers: Int) -> [String] {
        let tricky = ["a", "a.suite", "a.suite.suite", "suite", ".suite", "a.suite.lock", "b.suite.lock.suite", "caf\u{E9}",
                      "\u{1F600}", "x y", "a.", "a.s",
                      String(repeating: "n", count: 223) + "1", String(repeating: "n", count: 223) + "2",
                      String(repeating: "n", count: 223), String(repeating: "\u{E9}", count: 112),
                      String(repeating: "\u{E9}", count: 109) + ".suite"]
        let fill = (0..<fillers).map { String(repeating: "f", count: 200) + "\($0)" }
        return (tricky + fill).filter { (try? Suite.validate(name: $0)) != nil }
    }

    /// A burst of commits to many suites of one directory, whose names overlap: each
    /// observer (on the watcher's thread or the suite's queue) hears exactly its own
    /// suite's commits, and a directory observation hears each under its own name.
    @Test func aBurstOverSuitesWhoseNamesOverlapReachesEachSuitesOwnObservers() throws {
        let names = overlappingNames(fillers: 100)
        let writers = try names.map(writer)
        for (index, state) in writers.enumerated() { try write("k", .string("\(index)-0"), with: state) }
        var recorders: [ChangeRecorder] = [], tokens: [SuiteCancellable] = []
        for (index, name) in names.enumerated() {
            let recorder = ChangeRecorder()
            recorders.append(recorder)
            let observation = index % 2 == 0 ? SuiteObservation.allKeys.delivered(on: .watcherThread) : SuiteObservation.allKeys
            tokens.append(try observation.start(in: Suite(named: name, directory: directory.url), onChange: recorder.handler))
        }
        let all = ChangeRecorder()
        tokens.append(try Suite.observeSuites(in: directory.url, onChange: all.handler))
        let rounds = 1...3
        for round in rounds {
            for (index, state) in writers.enumerated() { try write("k", .string("\(index)-\(round)"), with: state) }
        }
        for (index, name) in names.enumerated() {
            let last = SuiteValue.string("\(index)-\(rounds.upperBound)")
            #expect(recorders[index].wait(for: "k", toBecome: last), "\(name.prefix(20)) (\(name.utf8.count) bytes)")
            #expect(recorders[index].changes.map(\.newValue) == rounds.map { .string("\(index)-\($0)") },
                    "\(name.prefix(20)) (\(name.utf8.count) bytes)")
            #expect(recorders[index].changes.allSatisfy { $0.suite == name })
        }
        #expect(all.wait { changes in names.indices.allSatisfy { index in
            changes.contains { $0.suite == names[index] && $0.newValue == .string("\(index)-\(rounds.upperBound)") }
        } })
        for (index, name) in names.enumerated() {
            let heard = all.changes.filter { $0.suite == name }.map(\.newValue)
            #expect(heard.allSatisfy { value in rounds.contains { value == .string("\(index)-\($0)") } || value == .string("\(index)-0") },
                    "\(name.prefix(20)): \(heard)")
        }
        tokens.forEach { $0.cancel() }
    }

    /// An observer on the watcher's thread that holds the thread for a while (as a
    /// slow callback does) while the writers overflow the inotify queue: every suite
    /// still ends with its last value, in commit order, nothing heard by another suite.
    @Test func aRealQueueOverflowWhileTheWatcherIsHeldLosesNoSuitesLastValue() throws {
        let diagnostics = DiagnosticsRecorder(directory)
        let names = overlappingNames(fillers: 20)
        let writers = try names.map(writer)
        for (index, state) in writers.enumerated() { try write("k", .string("\(index)-0"), with: state) }
        let blocker = try writer("blocker")
        try write("k", "0", with: blocker)
        let held = DispatchSemaphore(value: 0), release = ThreadSemaphore()
        let once = Mutex(false)
        let blockerToken = try SuiteObservation.allKeys.delivered(on: .watcherThread).start(
            in: Suite(named: "blocker", directory: directory.url)) { _ in
                // Only a hold of the watcher's own thread leaves the inotify queue unread.
                // A delivery whose catch-up met a commit under way runs on the suite's
                // queue instead, and is let through.
                guard currentThreadName() == "suite-watcher",
                      once.withLock({ done in defer { done = true }; return !done }) else { return }
                held.signal()
                release.wait()
            }
        var recorders: [ChangeRecorder] = [], tokens: [SuiteCancellable] = [blockerToken]
        // Whatever fails, the process's one watcher thread is let go, or every later
        // observation test of the process would wait behind it.
        defer {
            release.signal()
            tokens.forEach { $0.cancel() }
        }
        for (index, name) in names.enumerated() {
            let recorder = ChangeRecorder()
            recorders.append(recorder)
            let observation = index % 2 == 0 ? SuiteObservation.allKeys.delivered(on: .watcherThread) : SuiteObservation.allKeys
            tokens.append(try observation.start(in: Suite(named: name, directory: directory.url), onChange: recorder.handler))
        }
        var heldOnWatcher = false
        for attempt in 1...50 where !heldOnWatcher {
            try write("k", .string("\(attempt)"), with: blocker)
            heldOnWatcher = held.wait(timeout: .now() + 1) == .success
        }
        try #require(heldOnWatcher, "a delivery to the blocker held the watcher's thread")
        // With the watcher held, more events than the queue holds (16384 by default).
        let limit = (try? String(contentsOfFile: "/proc/sys/fs/inotify/max_queued_events", encoding: .utf8))
            .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 16384
        var round = 0
        while round * names.count < limit + 2000 {
            round += 1
            for (index, state) in writers.enumerated() { try write("k", .string("\(index)-\(round)"), with: state) }
        }
        release.signal()
        for (index, name) in names.enumerated() {
            #expect(recorders[index].wait(for: "k", toBecome: .string("\(index)-\(round)")), "\(name.prefix(20))")
            let values = recorders[index].changes.map(\.newValue)
            #expect(values.allSatisfy { value in (1...round).contains { value == .string("\(index)-\($0)") } }, "\(name.prefix(20))")
            #expect(recorders[index].changes.map(\.sequence) == recorders[index].changes.map(\.sequence).sorted())
        }
        #expect(diagnostics.kinds.contains(.changeEventsLost), "the queue overflowed")
    }

    /// Observers on the watcher's thread that cancel themselves from their callback,
    /// with other suites' events in the same read: the others still hear theirs, the
    /// cancelled ones nothing more.
    @Test func observersCancelledFromTheirCallbackOnTheWatcherThreadLeaveTheOthersTheirEvents() throws {
        let names = overlappingNames(fillers: 10)
        let writers = try names.map(writer)
        for (index, state) in writers.enumerated() { try write("k", .string("\(index)-0"), with: state) }
        final class Box: @unchecked Sendable { var token: SuiteCancellable?; let lock = NSLock() }
        var recorders: [ChangeRecorder] = [], boxes: [Box] = []
        for (index, name) in names.enumerated() {
            let recorder = ChangeRecorder(), box = Box()
            recorders.append(recorder)
            boxes.append(box)
            let cancels = index % 2 == 0
            let token = try SuiteObservation.allKeys.delivered(on: .watcherThread).start(
                in: Suite(named: name, directory: directory.url)) { change in
                    recorder.handler(change)
                    if cancels { box.lock.withLock { box.token }?.cancel() }
                }
            box.lock.withLock { box.token = token }
        }
        for round in 1...3 {
            for (index, state) in writers.enumerated() { try write("k", .string("\(index)-\(round)"), with: state) }
        }
        for (index, name) in names.enumerated() where index % 2 == 1 {
            #expect(recorders[index].wait(for: "k", toBecome: .string("\(index)-3")), "\(name.prefix(20))")
            #expect(recorders[index].changes.map(\.newValue) == (1...3).map { .string("\(index)-\($0)") })
        }
        Thread.sleep(forTimeInterval: 0.3)
        for (index, name) in names.enumerated() where index % 2 == 0 {
            let values = recorders[index].changes.map(\.newValue)
            #expect(!values.isEmpty && values.count <= 3, "\(name.prefix(20)): \(values)")
            #expect(values.first == .string("\(index)-1"), "\(name.prefix(20)): \(values)")
        }
        boxes.forEach { box in box.lock.withLock { box.token }?.cancel() }
    }

    /// Two other processes commit as fast as they can while threads of this one read
    /// (each read a catch-up into the kept storage, without the file lock or under it)
    /// and observers on the watcher's thread and on the queue catch up too: every
    /// observer hears every commit once, in order, with the values written.
    @Test func readersAndObserversRacingTwoWritingProcessesHearEveryCommitOnce() throws {
        let suite = try Suite(named: "race", directory: directory.url)
        try suite.set(0, forKey: "seed")
        let fast = ChangeRecorder(), queued = ChangeRecorder()
        let tokens = [
            try SuiteObservation.allKeys.delivered(on: .watcherThread).start(in: suite, onChange: fast.handler),
            try SuiteObservation.allKeys.start(in: suite, onChange: queued.handler),
        ]
        let count = 3000
        let workers = try ["p", "q"].map { try startWorker("write-keys", at: directory.url, suite: "race", ["prefix": $0, "count": "\(count)", "keys": "7"]) }
        let stop = Atomic<Bool>(false), finished = ThreadSemaphore()
        let readers = (0..<2).map { _ in
            Thread {
                while !stop.load(ordering: .relaxed) { _ = suite.dictionaryRepresentation() }
                finished.signal()
            }
        }
        readers.forEach { $0.start() }
        for worker in workers {
            worker.expectLine(startingWith: "done", within: .seconds(120))
            worker.expectSuccess()
        }
        stop.store(true, ordering: .relaxed)
        readers.forEach { _ in finished.wait() }
        let total = 2 * count
        for recorder in [fast, queued] {
            #expect(recorder.wait { $0.count >= total })
            let changes = recorder.changes
            #expect(changes.count == total)
            #expect(changes.map(\.sequence) == Array(2...UInt64(total + 1)), "every commit once, in order")
            #expect(changes.allSatisfy { $0.kind == .commit })
            // Each value is what its writer wrote at that key: PREFIX.(n % 7) = n.
            for change in changes {
                guard case .integer(let n)? = change.newValue else { Issue.record("\(change)"); continue }
                #expect(change.key.hasSuffix(".\(n % 7)"), "\(change.key) = \(n)")
            }
        }
        withExtendedLifetime(tokens) {}
    }
}
