import Foundation
import Glibc

/// Thrown inside the store when a shared lock is not enough: the file needs a repair
/// that only the holder of the exclusive lock may make.
struct NeedsExclusiveLock: Error {}

/// What one process knows of a suite: its open files, the mapped shared header, and
/// the contents as of the last catch-up. One instance per suite per process.
///
/// `@unchecked Sendable` because it is confined by hand: it is only ever reached
/// through `SuiteStore`'s mutex, which hands it to one thread at a time.
final class StoreState: @unchecked Sendable {
    let files: SuiteFiles
    private(set) var lockFile: FileDescriptor
    /// Nil only for a read-only suite whose lock file is too short to map.
    private(set) var header: SharedHeader?
    private(set) var writable: Bool
    var dataFile: FileDescriptor?
    /// The committed state as last read. Changed only through `apply(_:)` and
    /// `replaceContents(with:)`, which report the changes to observers.
    private(set) var contents = SuiteContents()

    /// What `contents` reflects, in the shared header's terms.
    struct View {
        var generation: UInt64 = 0
        var dataFileID: UInt64 = 0
        var length = 0
        var isLoaded = false
    }

    var view = View()
    /// A compaction that failed is not tried again before the file reaches this length.
    var compactionRetryLength = 0
    /// Diagnostics found under the lock, reported once it is released.
    var pendingDiagnostics: [SuiteDiagnostic] = []
    /// The last refresh failure reported, so a read that keeps failing reports once.
    var lastRefreshFailure: String?
    /// The observers of this suite in this process. While there are none, no change
    /// is computed: observing costs nothing until someone observes.
    var observers: [UInt64: ObserverSink] = [:]
    /// Changes found under the lock, handed to the observers in this order.
    var pendingChanges: [SuiteChange] = []

    /// Takes ownership of `files.directory`, closing it if the suite cannot be opened.
    init(files: SuiteFiles) throws {
        self.files = files
        do {
            (lockFile, header, writable) = try Self.openLock(files)
        } catch {
            files.directory.close()
            throw error
        }
    }

    /// Opens and maps the lock file.
    private static func openLock(_ files: SuiteFiles) throws -> (FileDescriptor, SharedHeader?, Bool) {
        let (lockFile, writable) = try files.openLockFile()
        var header: SharedHeader?
        if (try? lockFile.status())?.size ?? 0 >= SharedHeader.size {
            let protection = writable ? PROT_READ | PROT_WRITE : PROT_READ
            let address = mmap(nil, SharedHeader.size, protection, MAP_SHARED, lockFile.rawValue, 0)
            if let address, address != MAP_FAILED { header = SharedHeader(base: address) }
        }
        if writable && header == nil {
            lockFile.close()
            throw SuiteError(.ioFailure, suite: files.suite, path: files.lockPath, errno: errno,
                             message: "Could not map the suite's lock file into memory; the file system may not support shared mappings.")
        }
        return (lockFile, header, writable)
    }

    deinit {
        if let header { munmap(header.base, SharedHeader.size) }
        dataFile?.close()
        lockFile.close()
        files.directory.close()
    }

    var suite: String { files.suite }

    func diagnose(_ kind: SuiteDiagnostic.Kind, path: String? = nil, _ message: String) {
        pendingDiagnostics.append(SuiteDiagnostic(kind: kind, suite: suite, directory: files.directory.path,
                                                  path: path, message: message))
    }

    // MARK: Locking

    func withFileLock<R>(_ kind: FileDescriptor.LockKind, _ body: () throws -> R) throws -> R {
        do {
            try lockFile.lock(kind, path: files.lockPath)
            // A lock on a lock file that lost its name excludes no newcomer, who opens
            // the new file by that name: follow the name.
            while try lockFile.status().linkCount == 0 {
                try replaceUnlinkedLockFile()
                try lockFile.lock(kind, path: files.lockPath)
            }
        } catch {
            throw files.error(error, doing: "lock the suite")
        }
        defer { lockFile.unlock() }
        return try body()
    }

    /// Someone deleted or replaced the lock file while this process had it open.
    /// Moves every process still on the old file to the new one: a change of the old
    /// generation sends their readers to the slow path, where they see the same.
    private func replaceUnlinkedLockFile() throws {
        if writable, let header { header.publish(generation: header.generation &+ 2) }
        let (newLock, newHeader, newWritable) = try Self.openLock(files)
        lockFile.unlock()
        if let header { munmap(header.base, SharedHeader.size) }
        lockFile.close()
        lockFile = newLock
        header = newHeader
        writable = newWritable
        view.isLoaded = false
    }

    // MARK: Reading

    /// Whether `contents` is current; one atomic load.
    var isFresh: Bool {
        guard let header, view.isLoaded else { return false }
        return header.generation == view.generation
    }

    /// Brings `contents` up to the committed state, taking the shared lock, and the
    /// exclusive lock when a repair turns out to be needed.
    func refresh() throws {
        if isFresh { return }
        var kind = FileDescriptor.LockKind.shared
        while true {
            do {
                try withFileLock(kind) { try catchUp(exclusive: kind == .exclusive) }
                return
            } catch is NeedsExclusiveLock {
                guard writable else {
                    try withFileLock(.shared) { try loadWithoutRepair() }
                    return
                }
                kind = .exclusive
            }
        }
    }

    /// Under the lock: reads whatever was committed since the last catch-up.
    func catchUp(exclusive: Bool) throws {
        guard let header else { throw NeedsExclusiveLock() }
        if !header.isValid || (exclusive && header.generation & 1 == 1) {
            // Never set up since boot, or a writer died inside a commit.
            guard exclusive else { throw NeedsExclusiveLock() }
            try rebuild()
            return
        }
        let generation = header.generation
        let fileID = header.dataFileID
        let length = header.committedLength
        if fileID == 0 {
            if !view.isLoaded || view.dataFileID != 0 {
                dataFile?.close()
                dataFile = nil
                replaceContents(with: SuiteContents())
            }
        } else if fileID != view.dataFileID || length < view.length || dataFile == nil {
            try loadDataFile(expecting: fileID, length: length, exclusive: exclusive)
        } else if length > view.length {
            try readRecords(from: view.length, to: length, exclusive: exclusive)
        }
        // With no commit in progress the file ends exactly at the committed length,
        // and still has its name; anything else was done to it without the lock
        // (bytes appended, the file cut, deleted or replaced).
        if let dataFile, generation & 1 == 0 {
            let status: FileStatus
            do {
                status = try dataFile.status()
            } catch {
                throw files.error(error, doing: "inspect the suite file")
            }
            if status.size != length || status.linkCount == 0 { return try damageFound(exclusive: exclusive) }
        }
        view = View(generation: generation, dataFileID: fileID, length: length, isLoaded: true)
    }

    /// Damage inside the committed part of the file: repaired at once under the
    /// exclusive lock, else the caller retries with it.
    private func damageFound(exclusive: Bool) throws {
        guard exclusive else { throw NeedsExclusiveLock() }
        try rebuild()
    }

    /// Reads a data file that replaced the one this process had (or its first).
    private func loadDataFile(expecting fileID: UInt64, length: Int, exclusive: Bool) throws {
        guard let descriptor = try files.openDataFile(writable: writable) else {
            return try damageFound(exclusive: exclusive)
        }
        let bytes: [UInt8]
        do {
            bytes = try descriptor.read(count: length, at: 0)
        } catch {
            descriptor.close()
            throw files.error(error, doing: "read the suite file")
        }
        let header = bytes.withUnsafeBytes { DataFileHeader.decode($0) }
        guard bytes.count == length, header == .valid(fileID: fileID),
              let records = Self.records(in: bytes, from: DataFileHeader.size, after: nil)
        else {
            descriptor.close()
            return try damageFound(exclusive: exclusive)
        }
        drainReplacedFile()
        dataFile?.close()
        dataFile = descriptor
        // Replay the new file from the state before its first commit: its snapshot,
        // or nothing for a file that was created rather than compacted.
        var replay = SuiteContents()
        var commits = records[...]
        if let first = records.first, first.kind == .snapshot {
            replay.apply(first)
            commits = records.dropFirst()
        }
        if observers.isEmpty {
            for record in commits { replay.apply(record) }
            contents = replay
            return
        }
        // Jump to where the new file starts: nothing when it continues from what this
        // process saw, else the net change (commits it never read were folded into
        // the snapshot). Then report the file's commits one by one.
        if replay.values == contents.values {
            contents = replay
        } else {
            replaceContents(with: replay)
        }
        for record in commits { apply(record) }
    }

    /// Before moving to a compacted file, reads the commits this process had not yet
    /// seen from the old one, which no one writes to any more: so that observers get
    /// every commit, not just the net change.
    private func drainReplacedFile() {
        guard !observers.isEmpty, let dataFile, view.isLoaded,
              let size = try? dataFile.status().size, size > view.length,
              let bytes = try? dataFile.read(count: size - view.length, at: view.length)
        else { return }
        var offset = 0
        bytes.withUnsafeBytes { buffer in
            while case .record(let record, let end) = RecordFormat.parse(buffer, at: offset, limit: buffer.count),
                  record.kind == .transaction, record.sequence > contents.lastSequence {
                apply(record)
                offset = end
            }
        }
    }

    /// Reads and applies the records in `start ..< end` of the current data file.
    private func readRecords(from start: Int, to end: Int, exclusive: Bool) throws {
        guard let dataFile else { return try damageFound(exclusive: exclusive) }
        let bytes: [UInt8]
        do {
            bytes = try dataFile.read(count: end - start, at: start)
        } catch {
            throw files.error(error, doing: "read the suite file")
        }
        guard bytes.count == end - start, let records = Self.records(in: bytes, from: 0, after: contents.lastSequence),
              records.allSatisfy({ $0.kind == .transaction })
        else { return try damageFound(exclusive: exclusive) }
        for record in records { apply(record) }
    }

    /// Every record from `offset` to the end, if all of them verify, follow one another
    /// exactly, and have increasing sequence numbers (beyond `after`, if given);
    /// only the first may be a snapshot.
    static func records(in bytes: [UInt8], from offset: Int, after sequence: UInt64?) -> [Record]? {
        bytes.withUnsafeBytes { buffer -> [Record]? in
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
    }

    // MARK: Changing the contents

    /// Applies one commit, reporting its changes to the observers, if any.
    func apply(_ record: Record) {
        guard !observers.isEmpty else { return contents.apply(record) }
        var changes: [KeyChange]? = []
        contents.apply(record, changes: &changes)
        let timestamp = Date(timeIntervalSince1970: Double(record.timestamp) / 1e9)
        let ours = record.pid == getpid()
        for change in changes ?? [] {
            pendingChanges.append(SuiteChange(suite: suite, key: change.key, oldValue: change.oldValue, newValue: change.newValue,
                                              sequence: record.sequence, pid: record.pid, isFromThisProcess: ours,
                                              kind: .commit, timestamp: timestamp))
        }
    }

    /// Replaces the contents with a state read whole, reporting the net change of
    /// every key to the observers, if any.
    func replaceContents(with new: SuiteContents) {
        if !observers.isEmpty {
            let now = Date()
            for change in contents.changes(to: new).sorted(by: { $0.key < $1.key }) {
                pendingChanges.append(SuiteChange(suite: suite, key: change.key, oldValue: change.oldValue, newValue: change.newValue,
                                                  sequence: new.lastSequence, pid: 0, isFromThisProcess: false,
                                                  kind: .netChange, timestamp: now))
            }
        }
        contents = new
    }

    /// For a suite this process may only read: reads the whole file without repairing
    /// anything, keeping every record that verifies.
    private func loadWithoutRepair() throws {
        guard let descriptor = try files.openDataFile(writable: false) else {
            replaceContents(with: SuiteContents())
            view = View(generation: header?.generation ?? 0, isLoaded: header != nil)
            return
        }
        defer { descriptor.close() }
        let bytes: [UInt8]
        do {
            bytes = try descriptor.read(count: try descriptor.status().size, at: 0)
        } catch {
            throw files.error(error, doing: "read the suite file")
        }
        let scan = try scanRefusingForeign(bytes, committedLength: nil)
        if scan.verdict == .damaged {
            diagnose(.repairedDamage, "The suite file is damaged (\(scan.firstProblem?.description ?? "unreadable bytes")); it is read-only here, so \(scan.recordCount) intact records were read and the file was left as it is.")
        }
        replaceContents(with: scan.contents)
        // Without a mapped header there is nothing cheap to compare, so read again next time.
        view = View(generation: header?.generation ?? 0, isLoaded: header != nil)
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
