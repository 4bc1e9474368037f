/// History for processes that collect changes and lag behind compactions.
///
/// A compaction replaces the journal with a snapshot, and the commits in the old
/// journal would be folded into it for a process that had not read them yet. So
/// the compactor keeps the replaced journal under a second name,
/// `NAME.suite.h.SEQ` (SEQ: its last sequence number), and removes the oldest such
/// files beyond `Suite.Options.changeHistorySize` bytes. A process collecting
/// changes that finds a new data file first reads the rest of the file it had
/// open, then the history files in order, then the new file: every commit, one by
/// one. Only beyond the history (or after a repair of damage) does it record net
/// changes.
extension StoreState {
    /// Links the current data file to its history name; false when it was not kept
    /// (a file with that name exists: no commit since it was kept; or no /proc).
    func keepAsHistory(endingAt sequence: UInt64) -> Bool {
        // The file this process writes, by its descriptor: the data file's name may
        // lead to another file by now (another suite's, the two exchanged), whose
        // history this is not.
        guard let dataFile else { return false }
        return (try? files.directory.link(dataFile, to: files.historyName(endingAt: sequence))) != nil
    }

    /// Removes the oldest history files beyond `limit` bytes in all.
    func trimHistory(limit: Int) {
        var total = 0
        for file in files.historyFiles().reversed() {
            total += (try? files.directory.status(of: file.name))??.size ?? 0
            if total > limit || limit == 0 { try? files.directory.removeFile(file.name) }
        }
    }

    /// Collecting changes, moving to a new data file (already read whole into `records`):
    /// delivers every commit this process had not read, from the old file, the
    /// history and the new file, in order; net changes only for what none of them hold.
    func continueCollecting(into descriptor: FileDescriptor, records: [Record]) {
        drainReplacedFile()
        dataFile?.close()
        dataFile = descriptor
        // The new file starts from its snapshot, or from nothing when it was created
        // rather than compacted.
        var start = SuiteContents()
        var commits = records[...]
        var startSequence: UInt64?
        if let first = records.first, first.kind == .snapshot {
            start.apply(first)
            commits = records.dropFirst()
            startSequence = first.sequence
        }
        if let startSequence, view.isLoaded, contents.lastSequence < startSequence {
            readHistory(until: startSequence)
        }
        // A snapshot at the sequence this process holds is usually a compaction of the
        // same state, but a repair that dropped a record in the middle makes one too:
        // the states are compared either way, and what differs is a net change.
        // Commits numbered at or below what this process holds are no news to it, even
        // when this file holds them anew (an older copy of the file put back, or a suite
        // started over by a process that knew less): they go into the net change too,
        // so that no commit is delivered twice and no number goes back.
        let held = contents.lastSequence
        let firstNew = commits.firstIndex { $0.sequence > held } ?? commits.endIndex
        for record in commits[..<firstNew] { start.apply(record) }
        replaceContents(with: start)
        for record in commits[firstNew...] { apply(record) }
    }

    /// Before moving to a compacted file, reads the commits this process had not yet
    /// seen from the old one, which no one writes to any more.
    private func drainReplacedFile() {
        guard let dataFile, view.isLoaded,
              let size = try? dataFile.status().size, size > view.length, size <= FormatLimits.maximumFileSize,
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

    /// Applies the commits after `contents.lastSequence` from the history files, in
    /// order, up to `target` (`historyCommits`).
    private func readHistory(until target: UInt64) {
        historyCommits(after: contents.lastSequence, through: target) { apply($0) }
    }

    /// Runs `body` on each transaction after `sequence` from the history files that
    /// end by `last`, in order (one file held at a time), and returns the sequence
    /// number they reach: a file that does not verify is passed over, and the reading
    /// stops at a gap.
    @discardableResult
    private func historyCommits(after sequence: UInt64, through last: UInt64, _ body: (Record) -> Void) -> UInt64 {
        var reached = sequence
        for file in files.historyFiles() where file.lastSequence > reached && file.lastSequence <= last {
            guard let records = readHistoryFile(file.name) else { continue }
            // The file must start at or before what was reached: a later one cannot fill a gap.
            let first = records.first
            let startsAt = first.map { $0.kind == .snapshot ? $0.sequence : max($0.sequence, 1) - 1 } ?? .max
            guard startsAt <= reached else { break }
            for record in records where record.kind == .transaction && record.sequence > reached {
                body(record)
                reached = record.sequence
            }
        }
        return reached
    }

    /// Runs `body` on every commit after `sequence`, in order: from the history files,
    /// where a compaction replaced the data file since (one file held at a time), then
    /// from the data file. False when they no longer hold every one (history trimmed or
    /// never kept, a repair) or a record does not verify; `body` may have seen some by
    /// then. What a mirror asks to learn whether a change it wrote ahead reached the
    /// suite (`Suite.keysOfMirroredCommits`): visited rather than returned, since the
    /// commits since may span every history file a writer's options keep.
    func forEachCommit(after sequence: UInt64, _ body: (Record) -> Void) -> Bool {
        guard let records = dataFileRecords() else { return false }
        // Only an unbroken run from `sequence` on: a repair may have dropped commits.
        var reached = sequence
        var unbroken = true
        func visit(_ record: Record) {
            unbroken = unbroken && record.sequence == reached + 1
            reached = record.sequence
            if unbroken { body(record) }
        }
        var transactions = records[...]
        if let first = records.first, first.kind == .snapshot {
            transactions = records.dropFirst()
            if first.sequence > sequence {
                guard historyCommits(after: sequence, through: first.sequence, visit) == first.sequence, unbroken else { return false }
            }
        }
        for record in transactions where record.sequence > sequence { visit(record) }
        return unbroken
    }

    /// The records of the data file up to the committed length, if every one verifies.
    private func dataFileRecords() -> [Record]? {
        guard view.isLoaded, let dataFile, view.length >= DataFileHeader.size, view.length <= FormatLimits.maximumFileSize,
              let bytes = try? dataFile.read(count: view.length, at: 0), bytes.count == view.length
        else { return nil }
        return Self.records(in: bytes, from: DataFileHeader.size, after: nil)
    }

    /// The records of one history file, if it is a regular file of ours whose header
    /// verifies (read first, before anything large) and carries no other suite's tag
    /// (another suite's file given the name is not this suite's history), within the
    /// size limit, and every record verifies.
    private func readHistoryFile(_ name: String) -> [Record]? {
        guard let descriptor = try? files.open(name, .readOnly) else { return nil }
        defer { descriptor.close() }
        guard let status = try? files.checkFile(descriptor, name: name), status.size <= FormatLimits.maximumFileSize,
              let header = try? descriptor.read(count: DataFileHeader.size, at: 0),
              case .valid = header.withUnsafeBytes({ DataFileHeader.decode($0) }), !files.isAnotherSuites(header: header),
              let bytes = try? descriptor.read(count: status.size, at: 0), bytes.count == status.size
        else { return nil }
        return Self.records(in: bytes, from: DataFileHeader.size, after: nil)
    }
}
