#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Thrown inside the store when a shared lock is not enough: the file needs a repair
/// that only the holder of the exclusive lock may make.
struct NeedsExclusiveLock: Error {}

/// What one process knows of a suite: its open files, the mapped shared header, and
/// the contents as of the last catch-up. One instance per suite per process, and a
/// new one in a forked child (locks belong to open files, which a child shares with
/// its parent until it opens its own).
///
/// `@unchecked Sendable` because it is confined by hand: it is only ever reached
/// through `SuiteStore`'s lock, which hands it to one thread at a time. For the same
/// reason its mutable properties skip the runtime's exclusivity checks
/// (`@exclusivity(unchecked)`): with one thread inside and no property passed inout
/// across a call back into the state, they cannot overlap, and the checks cost a
/// commit a sixth of its instructions.
final class StoreState: @unchecked Sendable {
    let files: SuiteFiles
    // Set when the suite is opened, and again only by the lock code (when the lock
    // file was replaced or cut short under this process).
    /// Nil when this process can open no lock file: it reads without locks. Replace
    /// it only with `adoptLockFile(_:)`.
    @exclusivity(unchecked) private(set) var lockFile: FileDescriptor?
    /// The lock file's registration for a forked child to drop (`InheritedLocks`).
    @exclusivity(unchecked) private var lockRegistration: Int32 = -1
    /// Nil when there is no lock file, or a read-only one too short to map.
    @exclusivity(unchecked) var header: SharedHeader?
    @exclusivity(unchecked) var writable: Bool
    @exclusivity(unchecked) var dataFile: FileDescriptor? {
        didSet { forgetFileWatch(of: .dataFile) }
    }
    /// The watches on the lock file and data file, and what they last said
    /// (`StoreState+FileWatch.swift`).
    @exclusivity(unchecked) var fileWatch = FileWatch()
    /// The committed state as last read. Changed only through `apply(_:)` and
    /// `replaceContents(with:)`, which record the changes while `collectsChanges`.
    @exclusivity(unchecked) private(set) var contents = SuiteContents()
    /// The fork epoch the files were opened in; in a child they are the parent's.
    let epoch = ForkEpoch.current

    /// What `contents` reflects, in the shared header's terms.
    struct View {
        var generation: UInt64 = 0
        var dataFileID: UInt64 = 0
        var length = 0
        /// The header's last sequence number, which stays ahead of the contents' when
        /// a data file disappeared, so that sequence numbers never go back.
        var lastSequence: UInt64 = 0
        var isLoaded = false
        /// Without a lock file: the data file as it was when read.
        var lockless: FileStatus?
    }

    @exclusivity(unchecked) var view = View()
    /// A compaction that failed is not tried again before the file reaches this length.
    @exclusivity(unchecked) var compactionRetryLength = 0
    /// The storage the last commit's record was encoded in, kept for the next one
    /// while it is small.
    @exclusivity(unchecked) var recordBuffer: [UInt8] = []
    /// The storage the last catch-up read the data file into, kept for the next one
    /// while it is small.
    @exclusivity(unchecked) private var readBuffer: [UInt8] = []
    /// The format version of the data file with this ID, once this process wrote or
    /// read it: a commit that needs version 2 checks it first.
    @exclusivity(unchecked) var knownVersion: (fileID: UInt64, version: UInt16)?
    static let keptRecordBufferSize = 4096
    /// The commits applied since the owner last took them, while `collectsChanges`.
    @exclusivity(unchecked) private var applied = AppliedCommits()
    /// What was diagnosed since the owner last took it.
    @exclusivity(unchecked) private var diagnostics: [SuiteDiagnostic] = []
    /// Whether applying a commit records its key changes in `applied`. Off until a
    /// layer above asks: until then, no change is computed.
    @exclusivity(unchecked) var collectsChanges = false
    /// The last refresh failure reported, so a read that keeps failing reports once.
    @exclusivity(unchecked) var lastRefreshFailure: String?

    init(files: SuiteFiles) throws {
        self.files = files
        let opened = try Self.openLock(files)
        (header, writable) = (opened.header, opened.writable)
        adoptLockFile(opened.lockFile)
    }

    /// Closes the lock file this state has, if any, and takes `new` in its place.
    func adoptLockFile(_ new: FileDescriptor?) {
        if let lockFile {
            // Forgotten before it is closed, so that a fork cannot replace another file
            // that takes its number.
            InheritedLocks.remove(lockRegistration)
            lockFile.close()
        }
        lockFile = new
        lockRegistration = new.map(InheritedLocks.add) ?? -1
        forgetFileWatch(of: .lockFile)
    }

    /// A state that takes over from `previous`: after a fork (the child's own files),
    /// or when the suite's directory was made anew. It starts from what `previous`
    /// read, so that a read that cannot refresh answers with that, and the first
    /// catch-up records the difference, if it collects changes.
    convenience init(files: SuiteFiles, continuing previous: StoreState, collectingChanges: Bool) throws {
        try self.init(files: files)
        contents = previous.contents
        collectsChanges = collectingChanges
    }

    /// What was diagnosed since the last call, handed over once.
    func takeDiagnostics() -> [SuiteDiagnostic] {
        guard !diagnostics.isEmpty else { return [] }
        defer { diagnostics = [] }
        return diagnostics
    }

    /// The commits applied since the last `appliedCommitsHandedOver()`.
    var appliedCommits: AppliedCommits { applied }

    /// Forgets the commits applied so far, keeping the lists' storage for the next.
    func appliedCommitsHandedOver() {
        applied.removeAll()
    }

    /// Opens and maps the lock file.
    static func openLock(_ files: SuiteFiles) throws -> (lockFile: FileDescriptor?, header: SharedHeader?, writable: Bool) {
        guard let opened = try files.openLockFile() else { return (nil, nil, false) }
        do {
            let header = try mapHeader(of: opened.descriptor, size: opened.size, writable: opened.writable, files: files)
            return (opened.descriptor, header, opened.writable)
        } catch {
            opened.descriptor.close()
            throw error
        }
    }

    /// Maps the shared header of a lock file of `size` bytes; nil for a read-only one
    /// too short to map (it is read without the header).
    static func mapHeader(of lockFile: FileDescriptor, size: Int, writable: Bool, files: SuiteFiles) throws -> SharedHeader? {
        guard writable || size >= SharedHeader.size else { return nil }
        let page: MappedPage
        do {
            page = try MappedPage(lockFile, writable: writable)
        } catch let failure as SystemCallError {
            guard writable else { return nil }
            throw SuiteError(.ioFailure, suite: files.suite, path: files.lockPath, errno: failure.errno,
                             message: "Could not map the suite's lock file into memory; the file system may not support shared mappings.")
        }
        return SharedHeader(page: page)
    }

    deinit {
        // Closing never releases a lock that a parent process holds through the same
        // open file description: the parent's descriptor keeps it.
        dataFile?.close()
        forgetFileWatch(of: .dataFile)
        adoptLockFile(nil)
    }

    var suite: String { files.suite }

    func diagnose(_ kind: SuiteDiagnostic.Kind, path: String? = nil, _ message: String) {
        diagnostics.append(SuiteDiagnostic(kind: kind, suite: suite, directory: files.directory.path,
                                           path: path, message: message))
    }

    /// Refuses to touch the shared files from a forked child through the parent's
    /// descriptors: their locks are the parent's.
    func checkSameProcess() throws {
        guard epoch == ForkEpoch.current else {
            throw SuiteError(.ioFailure, suite: suite,
                             message: "The process forked inside a transaction of this suite; the child may not finish the parent's transaction, so nothing was written. Use the suite outside the transaction.")
        }
    }

    // MARK: Reading

    /// Whether `contents` is current; one atomic load.
    var isFresh: Bool {
        guard let header, view.isLoaded else { return false }
        return header.generation == view.generation
    }

    /// Under the lock: reads whatever was committed since the last catch-up.
    func catchUp(exclusive: Bool) throws {
        try checkSameProcess()
        guard let header else { throw NeedsExclusiveLock() }
        let committed: SharedHeader.Snapshot
        switch header.read() {
        case .valid(let snapshot):
            committed = snapshot
        case .uninitialized:
            // Never set up since boot.
            guard exclusive else { throw NeedsExclusiveLock() }
            return try rebuild()
        case .implausible(let reason):
            guard exclusive else { throw NeedsExclusiveLock() }
            diagnose(.rebuiltSharedHeader, path: files.lockPath,
                     "The shared header in the lock file was not written by this library (\(reason)); it was set up again from the suite file.")
            return try rebuild()
        }
        // A writer died inside a commit (under the file lock, nobody else can be in
        // one). Under the exclusive lock, the data file says what is committed. Under
        // the shared lock, the header is trusted only as far as it extends what this
        // process read from the same file: a compaction that died between the
        // committed length and the file ID (`setCommitted`) leaves one without the
        // other, and reading that would go back in time. A process that has read
        // nothing has nothing to check it against.
        if committed.isCommitInProgress {
            if exclusive { return try rebuild() }
            if !view.isLoaded || committed.dataFileID != view.dataFileID || committed.committedLength < view.length {
                throw NeedsExclusiveLock()
            }
        }
        let fileID = committed.dataFileID
        var length = committed.committedLength, lastSequence = committed.lastSequence
        if fileID == 0 {
            // Only a rebuild that found no data file, or an empty one, which it removes,
            // writes a header with none, and a data file is put in place under the
            // exclusive lock together with the header that names it. So a file under
            // the data file's name now, other than an empty one, says that the header
            // lost its fields to something done without the lock (a lock file cut
            // while a process set its header up): trusted, it would drop every value,
            // and the next write would find the file in its way. An empty file holds
            // nothing to drop: a writer's rebuild removes it, to make way for its
            // write, and a reader leaves it (one that the rebuild could not remove
            // would otherwise send every reader into a rebuild at each catch-up).
            if try fileToRebuildFromIsInPlace(countingAnEmptyOne: exclusive) { return try damageFound(exclusive: exclusive) }
            if !view.isLoaded || view.dataFileID != 0 {
                dataFile?.close()
                dataFile = nil
                replaceContents(with: SuiteContents())
            }
        } else {
            let size: Int, hasName: Bool
            if fileID != view.dataFileID || length < view.length || dataFile == nil {
                // Nil when it found damage and repaired it, which set everything up.
                guard let loaded = try loadDataFile(expecting: fileID, length: length, exclusive: exclusive) else { return }
                (size, hasName) = (loaded.size, loaded.linkCount > 0)
            } else {
                (size, hasName) = try dataFileSizeAndName()
                // Bounded by what is there before anything is read, and from the suite's
                // file: one that lost its name may hold what the suite's never had.
                guard length <= size, hasName else { return try damageFound(exclusive: exclusive) }
                if length > view.length { try readRecords(from: view.length, to: length, exclusive: exclusive) }
                // The dead writer may have written its record whole past the committed
                // length. The rebuild under the exclusive lock keeps such a record, and
                // a fresh process reads it, so this one reads it too rather than stay a
                // commit behind them until the next commit (and rather than wait for
                // the exclusive lock, which a stopped reader could keep from it).
                if committed.isCommitInProgress, size > length, readRecordLeftByADeadWriter(from: length, to: size) {
                    length = size
                    lastSequence = contents.lastSequence
                }
            }
            // With no commit in progress the file ends exactly at the committed length,
            // and still has its name; anything else was done to it without the lock
            // (bytes appended, the file cut, deleted or replaced).
            if !committed.isCommitInProgress && (size != length || !hasName) {
                return try damageFound(exclusive: exclusive)
            }
        }
        view = View(generation: committed.generation, dataFileID: fileID, length: length,
                    lastSequence: lastSequence, isLoaded: true)
        if exclusive { fileStatusesVerified() }
    }

    /// What a catch-up without the file lock came to.
    enum UnlockedCatchUp {
        case caughtUp
        /// A writer is inside a commit: trying again in a moment may succeed.
        case changeInProgress
        /// Nothing that can be read without the lock: catch up under it.
        case needsFileLock
    }

    /// The most that a catch-up without the file lock reads; more is read under the
    /// lock, which bounds a read by the file's size before it reads.
    static let longestUnlockedRead = 64 * 1024

    /// Catches up without the file lock, trusting the shared header as a fresh read
    /// does: applies the commits appended to the same data file since the last
    /// catch-up, when the header, read between changes, says they are committed, and
    /// they verify, each after the last, up to the header's last sequence number.
    /// Committed bytes of a data file never change while the header names that file,
    /// and a writer appends only past them, so no lock is needed to read them.
    ///
    /// Anything else is left to the locked catch-up, having changed nothing: a
    /// state that is fresh or a header that says nothing new, a lock file that lost
    /// its name (whose header, which other processes no longer write, must not be
    /// taken for current), a data file that lost its name (replaced, say by a copy
    /// of its committed bytes: the file this process has open may hold a dead
    /// writer's record under a sequence number that the suite's file has given to
    /// another commit since), another data file, a header that moved without a
    /// longer file (a repair), more than `longestUnlockedRead`, a short read, a record
    /// that does not verify. The locked catch-up also checks that the data file ends
    /// at the committed length, which this leaves to the next locked catch-up or commit.
    func catchUpWithoutFileLock() -> UnlockedCatchUp {
        guard epoch == ForkEpoch.current, view.isLoaded, let header, let lockFile, let dataFile,
              header.generation != view.generation
        else { return .needsFileLock }
        guard let committed = header.readBetweenChanges() else {
            return header.generation & 1 == 1 ? .changeInProgress : .needsFileLock
        }
        let start = view.length, end = committed.committedLength
        guard committed.generation != view.generation, committed.dataFileID == view.dataFileID, committed.dataFileID != 0,
              end > start, end - start <= Self.longestUnlockedRead,
              // After the header was read: a name lost before it shows here.
              let lock = try? lockFile.status(), lock.linkCount > 0, lock.size >= SharedHeader.size,
              let data = try? dataFile.status(), data.linkCount > 0,
              (try? withBytes(of: dataFile, in: start..<end, { applyCommits(in: $0, endingAt: committed.lastSequence) })) == true
        else { return .needsFileLock }
        view = View(generation: committed.generation, dataFileID: committed.dataFileID, length: end,
                    lastSequence: committed.lastSequence, isLoaded: true)
        return .caughtUp
    }

    /// Whether something has the data file's name that a rebuild would read (anything
    /// but an empty regular file, which it removes), or, `countingAnEmptyOne`, anything
    /// at all. Asked of the directory.
    private func fileToRebuildFromIsInPlace(countingAnEmptyOne: Bool) throws -> Bool {
        do {
            guard let status = try files.directory.status(of: files.dataName) else { return false }
            return countingAnEmptyOne || !(status.isRegularFile && status.size == 0)
        } catch {
            throw files.error(error, doing: "inspect the suite file")
        }
    }

    /// The data file's size, and whether it still has its name: from its status, or,
    /// when the process's file events say that nothing happened to it since it was
    /// verified (`FileWatch.unchangedAtLock`), from `lseek`, and its name from that.
    ///
    /// A writer, checking its files, also asks what the name leads to: a file replaced
    /// by another while a second name keeps it (a hard-link backup, then a copy renamed
    /// over it) keeps a link, and every other process reads the replacement. One
    /// renamed away, with nothing or no file in its place, is still the suite's file:
    /// it may be put back, and a newcomer that writes makes a new one, which the
    /// header then names.
    private func dataFileSizeAndName() throws -> (size: Int, hasName: Bool) {
        guard let dataFile else { throw NeedsExclusiveLock() }
        do {
            if fileWatch.unchangedAtLock { return (try dataFile.endOffset(), true) }
            let status = try dataFile.status()
            guard status.linkCount > 0 else { return (status.size, false) }
            guard fileWatch.checksNames else { return (status.size, true) }
            return (status.size, try target(of: files.dataName, beside: status) != .anotherFile)
        } catch {
            throw files.error(error, doing: "inspect the suite file")
        }
    }

    /// Damage inside the committed part of the file: repaired at once under the
    /// exclusive lock, else the caller retries with it.
    func damageFound(exclusive: Bool) throws {
        guard exclusive else { throw NeedsExclusiveLock() }
        try rebuild()
    }

    /// Reads a data file that replaced the one this process had (or its first), and
    /// returns its status; nil when it was damaged and has been repaired.
    private func loadDataFile(expecting fileID: UInt64, length: Int, exclusive: Bool) throws -> FileStatus? {
        guard let (descriptor, status) = try files.openDataFile(writable: writable) else {
            try damageFound(exclusive: exclusive)
            return nil
        }
        // Bounded by what is there before anything is read.
        guard length <= status.size else {
            descriptor.close()
            try damageFound(exclusive: exclusive)
            return nil
        }
        if !collectsChanges {
            // Read through a window: opening a large suite holds its table, not its file too.
            var window = RecordWindow(end: length) { buffer, offset in try descriptor.read(into: buffer, at: offset) }
            let replay: SuiteContents?
            do {
                let header = try window.hold(from: 0, count: DataFileHeader.size) ? window.withBytes { buffer, _ in DataFileHeader.decode(buffer) } : .damaged
                replay = header == .valid(fileID: fileID) ? try Self.contents(reading: &window, from: DataFileHeader.size) : nil
            } catch {
                descriptor.close()
                throw files.error(error, doing: "read the suite file")
            }
            guard let replay else {
                descriptor.close()
                try damageFound(exclusive: exclusive)
                return nil
            }
            dataFile?.close()
            dataFile = descriptor
            contents = replay
        } else {
            let bytes: [UInt8]
            do {
                bytes = try descriptor.read(count: length, at: 0)
            } catch {
                descriptor.close()
                throw files.error(error, doing: "read the suite file")
            }
            guard bytes.count == length, bytes.withUnsafeBytes({ DataFileHeader.decode($0) }) == .valid(fileID: fileID),
                  let records = Self.records(in: bytes, from: DataFileHeader.size, after: nil)
            else {
                descriptor.close()
                try damageFound(exclusive: exclusive)
                return nil
            }
            continueCollecting(into: descriptor, records: records)
        }
        return status
    }

    /// Reads and applies the records in `start ..< end` of the current data file: as
    /// they are decoded, unless changes are collected (which keeps the records). A
    /// record that does not verify sends the caller to a repair, which reads the whole
    /// file again, whatever was applied before it.
    private func readRecords(from start: Int, to end: Int, exclusive: Bool) throws {
        guard let dataFile else { return try damageFound(exclusive: exclusive) }
        let applied: Bool
        do {
            applied = try withBytes(of: dataFile, in: start..<end, applyRecords) ?? false
        } catch {
            throw files.error(error, doing: "read the suite file")
        }
        if !applied { try damageFound(exclusive: exclusive) }
    }

    /// Applies what a writer that died inside its commit left past the committed
    /// length, if it is one or more whole records that verify and follow the last one
    /// applied; false, having applied nothing, otherwise (a record cut short, which the
    /// rebuild cuts off, or bytes appended by something else).
    private func readRecordLeftByADeadWriter(from start: Int, to end: Int) -> Bool {
        guard let dataFile, end - start <= FormatLimits.maximumFileSize else { return false }
        return (try? withBytes(of: dataFile, in: start..<end) { applyCommits(in: $0) }) == true
    }

    /// Applies the commits that are all of `bytes` (`readRecords`): as they are
    /// decoded, unless changes are collected; false if one does not verify.
    private func applyRecords(in buffer: UnsafeRawBufferPointer) -> Bool {
        guard !collectsChanges else { return applyCommits(in: buffer) }
        var offset = 0
        while offset < buffer.count {
            guard case .record(_, let next) = RecordFormat.apply(buffer, at: offset, limit: buffer.count, to: &contents,
                                                                 sequenceAfter: contents.lastSequence, onlyTransactions: true)
            else { return false }
            offset = next
        }
        return true
    }

    /// Runs `body` on the bytes of `range` of `file`; nil, without running it, when the
    /// file ends first. A small range is read into storage kept for the next read, so
    /// that the usual catch-up (one commit) allocates nothing for it; a large one into
    /// storage of its own, which nothing has to fill first.
    private func withBytes<R>(of file: FileDescriptor, in range: Range<Int>, _ body: (UnsafeRawBufferPointer) -> R) throws -> R? {
        guard range.count <= Self.keptRecordBufferSize else {
            let bytes = try file.read(count: range.count, at: range.lowerBound)
            return bytes.count == range.count ? bytes.withUnsafeBytes(body) : nil
        }
        var storage = readBuffer
        readBuffer = []
        defer { readBuffer = storage }
        if storage.count < range.count { storage = [UInt8](repeating: 0, count: max(range.count, 512)) }
        return try storage.withUnsafeMutableBytes { whole in
            let buffer = UnsafeMutableRawBufferPointer(rebasing: whole[..<range.count])
            guard try file.read(into: buffer, at: range.lowerBound) == range.count else { return nil }
            return body(UnsafeRawBufferPointer(buffer))
        }
    }

    /// Applies the commits that are all of `bytes`, if each verifies and follows the
    /// one before it (the first follows the contents), and the last is `last` when
    /// given; false, having applied none, otherwise. One commit, the usual catch-up of
    /// an observer, is applied without a list.
    private func applyCommits(in bytes: UnsafeRawBufferPointer, endingAt last: UInt64? = nil) -> Bool {
        if let record = Self.onlyRecord(in: bytes, after: contents.lastSequence) {
            guard last == nil || record.sequence == last else { return false }
            apply(record)
            return true
        }
        guard let records = Self.records(in: bytes, from: 0, after: contents.lastSequence),
              records.allSatisfy({ $0.kind == .transaction }),
              last == nil || records.last?.sequence == last
        else { return false }
        for record in records { apply(record) }
        return true
    }

    /// The contents that the records from `offset` to the window's end make, by the
    /// rules of `records(in:from:after:)`, applied as they are decoded rather than
    /// first collected, and read through the window: the peak memory of opening a
    /// large suite is its table and the window, not its table and every record
    /// besides. Nil when a record does not verify or the file ends early.
    static func contents(reading window: inout RecordWindow, from offset: Int) throws -> SuiteContents? {
        var contents = SuiteContents()
        var offset = offset
        var last: UInt64?
        while offset < window.end {
            guard case .record(let fields, let end) = try RecordFormat.apply(&window, at: offset, to: &contents, sequenceAfter: last),
                  fields.kind == .transaction || last == nil
            else { return nil }
            last = fields.sequence
            offset = end
        }
        return contents
    }

    /// Every record from `offset` to the end, if all of them verify, follow one another
    /// exactly, and have increasing sequence numbers (beyond `after`, if given);
    /// only the first may be a snapshot.
    static func records(in bytes: [UInt8], from offset: Int, after sequence: UInt64?) -> [Record]? {
        bytes.withUnsafeBytes { records(in: $0, from: offset, after: sequence) }
    }

    static func records(in buffer: UnsafeRawBufferPointer, from offset: Int, after sequence: UInt64?) -> [Record]? {
        var records: [Record] = []
        var offset = offset
        var last = sequence
        while offset < buffer.count {
            guard case .record(let record, let end) = RecordFormat.parse(buffer, at: offset, limit: buffer.count),
                  last.map({ record.sequence > $0 }) ?? true,
                  record.kind == .transaction || records.isEmpty
            else { return nil }
            records.append(record)
            last = record.sequence
            offset = end
        }
        return records
    }

    /// The transaction that is all of `bytes`, if it verifies and comes after
    /// `sequence`; nil, without decoding, when the bytes frame more than one record.
    static func onlyRecord(in buffer: UnsafeRawBufferPointer, after sequence: UInt64) -> Record? {
        guard case .record(_, buffer.count) = RecordFormat.framedEnd(buffer, at: 0, limit: buffer.count),
              case .record(let record, buffer.count) = RecordFormat.parse(buffer, at: 0, limit: buffer.count),
              record.sequence > sequence, record.kind == .transaction
        else { return nil }
        return record
    }

    // MARK: Changing the contents

    /// Applies one commit, recording its changes while `collectsChanges`.
    func apply(_ record: Record) {
        guard collectsChanges else { return contents.apply(record) }
        applied.append(.commit, sequence: record.sequence, pid: record.pid,
                       timestamp: Date(timeIntervalSince1970: Double(record.timestamp) / 1e9),
                       isMirrored: record.flags.contains(.mirrored)) { contents.apply(record, changes: &$0) }
    }

    /// Applies a commit of the single set of `key`, at the slot that the commit's
    /// `effect(ofSetting:to:size:asDefault:)` found, recording its change while
    /// `collectsChanges` as `apply(_:)` does a record's.
    func applySet(_ key: String, value: SuiteValue, size: Int, asDefault: Bool, at slot: SuiteContents.Slot,
                  record: (sequence: UInt64, timestamp: Int64, pid: Int32, flags: Record.Flags)) {
        guard !collectsChanges else {
            return apply(Record(kind: .transaction, sequence: record.sequence, timestamp: record.timestamp, pid: record.pid,
                                operations: [.set(key: key, value: value, size: size, asDefault: asDefault)], flags: record.flags))
        }
        contents.set(value, forKey: key, size: size, asDefault: asDefault, at: slot, sequence: record.sequence)
    }

    /// Replaces the contents with a state read whole, recording the net change of
    /// every key while `collectsChanges`.
    func replaceContents(with new: SuiteContents) {
        if collectsChanges {
            // Numbered after what was seen: a state that starts over (a repair that
            // found the file missing) or goes back (a restored copy) is later all the same.
            applied.append(.netChange, sequence: max(new.lastSequence, contents.lastSequence), pid: 0, timestamp: Date()) {
                $0 += contents.changes(to: new).sorted(by: { $0.key < $1.key })
            }
        }
        contents = new
    }

    /// For a suite this process may only read: reads the whole file without repairing
    /// anything, keeping every record that verifies. Without a lock file, the file is
    /// read again only when it changed (another inode or size), which a `stat` tells.
    ///
    /// Like a locked load, it keeps the file open and notes its ID and how far it was
    /// read, so that the next locked catch-up reads on from there: taking the file for
    /// a new one, it would hand every key removed and every commit again to observers.
    func loadWithoutRepair() throws {
        guard let (descriptor, status) = try files.openDataFile(writable: false) else {
            dataFile?.close()
            dataFile = nil
            replaceContents(with: SuiteContents())
            view = View(generation: header?.generation ?? 0, isLoaded: header != nil)
            return
        }
        if lockFile == nil, let last = view.lockless, last == status {
            descriptor.close()
            return
        }
        let scan: DataFileScan
        do {
            let bytes = try readWholeDataFile(descriptor, status: status)
            // Without the lock, a writer may be appending: what is cut short at the end is
            // a commit still in progress, not damage.
            scan = try scanRefusingForeign(bytes, committedLength: nil)
        } catch {
            descriptor.close()
            throw error
        }
        if scan.verdict == .damaged {
            diagnose(.repairedDamage, "The suite file is damaged (\(scan.firstProblem?.description ?? "unreadable bytes")); it is read-only here, so \(scan.recordCount) intact records were read and the file was left as it is.")
        }
        replaceContents(with: scan.contents)
        dataFile?.close()
        dataFile = descriptor
        // Only as far as the records follow one another from the start: a writer cuts a
        // record cut short off there and appends in its place, and a read on from damage
        // does not verify, so it comes back here.
        view = View(generation: header?.generation ?? 0, dataFileID: scan.fileID ?? 0, length: scan.validEnd,
                    isLoaded: header != nil, lockless: lockFile == nil ? status : nil)
    }

    /// Reads a whole data file, refusing one larger than the format allows before
    /// reading it: with its magic it is a suite too large, without it not a suite.
    func readWholeDataFile(_ descriptor: FileDescriptor, status: FileStatus) throws -> [UInt8] {
        do {
            if status.size > FormatLimits.maximumFileSize {
                let start = try descriptor.read(count: DataFileHeader.magic.count, at: 0)
                if start == DataFileHeader.magic {
                    throw SuiteError(.suiteTooLarge, suite: suite, path: files.dataPath,
                                     message: "The suite file is \(status.size) bytes, over the \(FormatLimits.maximumFileSize) bytes a suite file may have; it was left as it is.")
                }
                throw SuiteError(.foreignFile, suite: suite, path: files.dataPath,
                                 message: "This file is not a suite file (and at \(status.size) bytes, far larger than one), so it was left untouched. Move it away, or choose another suite name.")
            }
            return try descriptor.read(count: status.size, at: 0)
        } catch {
            throw files.error(error, doing: "read the suite file")
        }
    }

    func scanRefusingForeign(_ bytes: [UInt8], committedLength: Int?) throws -> DataFileScan {
        do {
            return try bytes.withUnsafeBytes { try DataFileScan.scan($0, committedLength: committedLength) }
        } catch DataFileScan.Refusal.foreign {
            throw SuiteError(.foreignFile, suite: suite, path: files.dataPath,
                             message: "This file is not a suite file, so it was left untouched. Move it away, or choose another suite name.")
        } catch DataFileScan.Refusal.unsupported(let version) {
            throw SuiteError(.unsupportedVersion, suite: suite, path: files.dataPath,
                             message: "The suite file has format version \(version), newer than this library's \(DataFileHeader.version); update the library that reads it.")
        }
    }
}
