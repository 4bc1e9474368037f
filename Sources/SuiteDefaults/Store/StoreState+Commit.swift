extension StoreState {
    /// Under the exclusive lock, after `catchUp(exclusive: true)`: appends one record
    /// holding `operations` and publishes it.
    ///
    /// The generation is odd from before the first byte is written until the record
    /// is published, so a process killed anywhere in between leaves a sign that the
    /// next writer acts on. A failed write is cut off again, leaving the file as it was.
    ///
    /// `liveBytesAfter` is the live size after the operations, when the caller knows it.
    /// `flags` describe the commit (a mirror's); a commit that needs format version 2
    /// (flags, or a value stored as a default) first rewrites a version 1 file as 2.
    /// `timestamp` stamps the record (the wall clock now, unless the caller read it).
    func commit(_ operations: [Operation], durability: Suite.Durability, options: Suite.Options,
                liveBytesAfter: Int? = nil, flags: Record.Flags = [], timestamp: Int64? = nil) throws {
        guard let start = try beginCommit(empty: operations.isEmpty, liveBytesAfter: liveBytesAfter ?? contents.liveBytes(after: operations),
                                          needsVersion2: Record.needVersion2(operations, flags: flags),
                                          durability: durability, options: options)
        else { return }
        let record = Record(kind: .transaction, sequence: start.sequence, timestamp: timestamp ?? WallClock.nanosecondsSince1970(),
                            pid: ProcessIdentity.id, operations: operations, flags: flags)
        try appendRecord(start, durability: durability) { RecordFormat.encode(record, into: &$0) }
        apply(record)
        compactIfNeeded(options: options, durable: durability == .durable)
    }

    /// `commit(_:durability:options:liveBytesAfter:flags:)` of the single set of
    /// `key`, the most common commit, with the slot of the key that the caller's
    /// `effect(ofSetting:to:size:asDefault:)` found: neither a list of operations nor
    /// a second lookup of the key.
    func commitSet(key: String, value: SuiteValue, size: Int, asDefault: Bool, slot: SuiteContents.Slot,
                   liveBytesAfter: Int, durability: Suite.Durability, options: Suite.Options, flags: Record.Flags = [],
                   timestamp: Int64? = nil) throws {
        guard let start = try beginCommit(empty: false, liveBytesAfter: liveBytesAfter, needsVersion2: Record.needVersion2(storingDefault: asDefault, flags: flags),
                                          durability: durability, options: options)
        else { return }
        let timestamp = timestamp ?? WallClock.nanosecondsSince1970(), pid = ProcessIdentity.id
        try appendRecord(start, durability: durability) { bytes in
            RecordFormat.encodeSet(key: key, value: value, valueSize: size, asDefault: asDefault, sequence: start.sequence,
                                   timestamp: timestamp, pid: pid, flags: flags, into: &bytes)
        }
        applySet(key, value: value, size: size, asDefault: asDefault, at: slot,
                 record: (sequence: start.sequence, timestamp: timestamp, pid: pid, flags: flags))
        compactIfNeeded(options: options, durable: durability == .durable)
    }

    /// Where a commit starts: the shared header and data file it writes, and its
    /// sequence number.
    struct CommitStart {
        let header: SharedHeader
        let dataFile: FileDescriptor
        let sequence: UInt64
    }

    /// Everything a commit checks and prepares before it encodes its record; nil when
    /// there is nothing to write (an empty commit, made durable if asked).
    private func beginCommit(empty: Bool, liveBytesAfter live: Int, needsVersion2: Bool, durability: Suite.Durability,
                             options: Suite.Options) throws -> CommitStart? {
        try checkSameProcess()
        guard writable, let header else {
            throw SuiteError(.readOnly, suite: suite, path: files.dataPath,
                             message: "This process may only read the suite (its files or directory are not writable).")
        }
        guard !empty else {
            if durability == .durable { try synchronizeToDisk() }
            return nil
        }
        let limit = options.effectiveMaximumSuiteSize
        if live > limit && live > contents.liveBytes {
            throw SuiteError(.suiteTooLarge, suite: suite,
                             message: "The write would grow the suite to \(live) bytes, over its limit of \(limit) bytes (Suite.Options.maximumSuiteSize). Remove keys or store less.")
        }
        if dataFile == nil { try createDataFile(durable: durability == .durable, version2: needsVersion2) }
        if needsVersion2, try dataFileVersion() < 2 {
            // Older libraries would take the new record for damage; they refuse a
            // version 2 file as a whole instead, and leave it alone.
            try compact(durable: durability == .durable, historyLimit: options.changeHistorySize, version2: true)
        }
        guard let dataFile else { return nil }

        // Every number below comes from this process's own catch-up, which checked
        // it, never from the shared page again: another process may write that page
        // at any time.
        // The header's number keeps sequence numbers rising when the data file went
        // away; one this library never writes leaves the file's own to decide.
        let fromHeader = FormatLimits.sequenceToNumberAfter(fromHeader: view.lastSequence)
        let sequence = max(fromHeader, contents.lastSequence) + 1
        guard sequence <= FormatLimits.maximumSequence else {
            throw SuiteError(.corruptFile, suite: suite, path: files.dataPath,
                             message: "The suite's sequence numbers are used up: a record numbered \(sequence - 1) was written by something other than this library. Nothing was written; export the suite, remove its files and import it again.")
        }
        return CommitStart(header: header, dataFile: dataFile, sequence: sequence)
    }

    /// Encodes a record with `encode` (into storage kept from the last commit, unless
    /// that grew large), appends it at the committed end and publishes it.
    private func appendRecord(_ commit: CommitStart, durability: Suite.Durability, _ encode: (inout [UInt8]) -> Void) throws {
        var bytes = recordBuffer
        recordBuffer = []
        defer { if bytes.capacity <= Self.keptRecordBufferSize { recordBuffer = bytes } }
        encode(&bytes)
        let start = view.length
        guard start + bytes.count <= FormatLimits.maximumFileSize else {
            throw SuiteError(.suiteTooLarge, suite: suite, path: files.dataPath,
                             message: "The suite file would grow past \(FormatLimits.maximumFileSize) bytes, the most a suite file may have, because compaction keeps failing (see the compactionFailed diagnostics). Nothing was written.")
        }
        let header = commit.header, dataFile = commit.dataFile
        let generation = view.generation
        header.committerPID = ProcessIdentity.id
        header.publish(generation: generation &+ 1)
        SuiteFaultInjection.reach(.commitStarted)
        do {
            try bytes.withUnsafeBytes { raw in
                let path = files.dataPath
                if SuiteFaultInjection.isArmed(.partialRecordWritten) {
                    let half = raw.count / 2
                    try dataFile.write(UnsafeRawBufferPointer(rebasing: raw[..<half]), at: start, path: path)
                    SuiteFaultInjection.reach(.partialRecordWritten)
                    try dataFile.write(UnsafeRawBufferPointer(rebasing: raw[half...]), at: start + half, path: path)
                } else {
                    try dataFile.write(raw, at: start, path: path)
                }
            }
            if durability == .durable { try dataFile.synchronizeData() }
        } catch {
            // Leave the generation odd if the cut fails, so the next writer cleans up.
            if (try? dataFile.truncate(to: start)) != nil { header.publish(generation: generation &+ 2) }
            throw files.error(error, doing: "write to the suite file")
        }
        SuiteFaultInjection.reach(.recordWritten)
        header.setCommitted(length: start + bytes.count, dataFileID: view.dataFileID)
        header.setLastSequence(commit.sequence)
        header.publish(generation: generation &+ 2)
        SuiteFaultInjection.reach(.committed)
        view = View(generation: generation &+ 2, dataFileID: view.dataFileID, length: start + bytes.count,
                    lastSequence: commit.sequence, isLoaded: true)
    }

    /// Creates the data file for the first write: written whole under a temporary
    /// name, then linked into place, so no process ever sees a half-made file.
    private func createDataFile(durable: Bool, version2: Bool) throws {
        guard let header else { return }
        let new = try files.writeNewDataFile(snapshot: nil, durable: durable, version2: version2)
        defer { try? files.directory.removeFile(new.temporaryName) }
        do {
            do {
                try files.directory.link(new.temporaryName, to: files.dataName)
            } catch let failure as SystemCallError where failure.failed(with: .notPermitted, .notSupported) {
                // No hard links on this file system. Under the exclusive lock, with no
                // data file known, a rename is equally safe.
                guard try files.directory.status(of: files.dataName) == nil else { throw SystemCallError(call: "link", path: files.dataName, code: .fileExists) }
                try files.directory.rename(new.temporaryName, to: files.dataName)
            }
        } catch let failure as SystemCallError where failure.code == .fileExists {
            new.descriptor.close()
            // Someone put a file there without taking the lock. Read it now, and let
            // the caller decide again with what it holds.
            try rebuild()
            throw SuiteError(.ioFailure, suite: suite, path: files.dataPath,
                             message: "A suite file appeared that no process wrote under the lock; nothing was written. Try again.")
        } catch {
            new.descriptor.close()
            throw files.error(error, doing: "create the suite file")
        }
        if durable { try? files.directory.synchronize() }
        // Write through a descriptor opened by the file's own name: inotify reports a
        // write under the name its descriptor was opened by, and the temporary name
        // is about to go.
        new.descriptor.close()
        guard let (descriptor, _) = try files.openDataFile(writable: true) else {
            throw SuiteError(.ioFailure, suite: suite, path: files.dataPath,
                             message: "The new suite file disappeared as it was created; nothing was written. Try again.")
        }
        let generation = view.generation
        header.publish(generation: generation &+ 1)
        header.setCommitted(length: new.length, dataFileID: new.fileID)
        header.publish(generation: generation &+ 2)
        dataFile = descriptor
        knownVersion = (new.fileID, new.version)
        view = View(generation: generation &+ 2, dataFileID: new.fileID, length: new.length,
                    lastSequence: view.lastSequence, isLoaded: true)
    }

    /// The format version of the current data file: known when this process wrote
    /// it, else read from its header (two bytes).
    private func dataFileVersion() throws -> UInt16 {
        if let knownVersion, knownVersion.fileID == view.dataFileID { return knownVersion.version }
        guard let dataFile else { return DataFileHeader.version }
        let bytes: [UInt8]
        do {
            bytes = try dataFile.read(count: 2, at: DataFileHeader.versionOffset)
        } catch {
            throw files.error(error, doing: "read the suite file's header")
        }
        guard bytes.count == 2 else { throw NeedsExclusiveLock() }
        let version = UInt16(bytes[0]) | UInt16(bytes[1]) << 8
        knownVersion = (view.dataFileID, version)
        return version
    }

    private func compactIfNeeded(options: Suite.Options, durable: Bool) {
        let length = view.length
        let live = DataFileHeader.size + RecordFormat.overhead + contents.liveBytes
        guard length > max(2 * live, live + options.compactionSlack), length >= compactionRetryLength else { return }
        do {
            try compact(durable: durable, historyLimit: options.changeHistorySize)
        } catch {
            compactionRetryLength = length + options.compactionSlack
            diagnose(.compactionFailed, "Compaction failed and will be tried again later; nothing stored was affected: \(error)")
        }
    }

    /// Under the exclusive lock, caught up: writes the live state to a new file and
    /// renames it over the journal, keeping the replaced journal as history for
    /// processes that collect changes and lag (up to `historyLimit` bytes of such files). Processes
    /// holding the old file notice the new file ID in the shared header and switch.
    func compact(durable: Bool, historyLimit: Int, version2: Bool = false) throws {
        try checkSameProcess()
        guard writable, let header, dataFile != nil else { return }
        files.removeStaleTemporaryFiles()
        let snapshot = contents.snapshot(timestamp: WallClock.nanosecondsSince1970(), pid: ProcessIdentity.id)
        // A version 2 file stays version 2 even when its snapshot no longer needs it:
        // a suite that a mirror writes to would otherwise be compacted again at the
        // mirror's next commit.
        let keepsVersion2 = version2 || (try? dataFileVersion()) == 2
        let new = try files.writeNewDataFile(snapshot: snapshot, durable: durable, version2: keepsVersion2)
        SuiteFaultInjection.reach(.compactionNewFileWritten)
        let kept = historyLimit > 0 && keepAsHistory(endingAt: contents.lastSequence)
        let generation = view.generation
        header.committerPID = ProcessIdentity.id
        header.publish(generation: generation &+ 1)
        SuiteFaultInjection.reach(.compactionWritten)
        do {
            try replaceDataFile(with: new, replacing: try dataFile?.status(path: files.dataPath),
                                keptAs: kept ? files.historyName(endingAt: contents.lastSequence) : nil, doing: "compacted")
        } catch {
            // Each name removed only while it leads to the file this compaction gave it:
            // a refused one may have found another suite's file under either.
            discard(new)
            if kept, let old = try? dataFile?.status(path: files.dataPath) {
                files.removeName(files.historyName(endingAt: contents.lastSequence), leadingTo: old)
            }
            header.publish(generation: generation &+ 2)
            if let error = error as? SuiteError { throw error }
            throw files.error(error, doing: "replace the suite file with its compacted form")
        }
        SuiteFaultInjection.reach(.compactionRenamed)
        if durable { try? files.directory.synchronize() }
        header.setCommitted(length: new.length, dataFileID: new.fileID)
        header.publish(generation: generation &+ 2)
        dataFile?.close()
        dataFile = new.descriptor
        knownVersion = (new.fileID, new.version)
        view = View(generation: generation &+ 2, dataFileID: new.fileID, length: new.length,
                    lastSequence: view.lastSequence, isLoaded: true)
        trimHistory(limit: historyLimit)
    }

    /// Puts `new`, written under its temporary name, in place of `ours`, the file the
    /// data file's name led to when this process took it (the one it writes, or the
    /// damaged one a repair read), and only of that one: a rename over the name would
    /// replace whatever the name leads to by then, such as another suite's file given
    /// this suite's name (the two exchanged), which that suite's writer may still
    /// append to.
    /// The suite's name must lead to `ours` (or to nothing) first, else the change is
    /// refused (`.foreignFile`) before anything moves. Then the names are exchanged,
    /// and the file that comes out is checked: when it is not `ours`, the exchange is
    /// undone and the change refused, and `ours`, if the undoing brought it under the
    /// temporary name, is kept aside (`keepAside`; left under that name when no name is
    /// free for it). Where the file system cannot exchange names, a rename; with no
    /// `ours` to check, too.
    /// `history` is a name that should keep the old file, checked the same way. Before
    /// the exchange, the temporary name must lead to `new` itself: it may have been
    /// given to another file meanwhile (another suite's renamed over it, a directory),
    /// which would otherwise be put in place while this process went on writing to
    /// `new`, a file no name leads to. After the exchange, the suite's name must lead to
    /// `new`; when it does not (another file renamed over the temporary name in the
    /// instant before the exchange, so that `new` lost its only name; or the names
    /// exchanged again), nothing is undone (undoing would give the temporary name to
    /// whatever the suite's name leads to by then, and can scatter two suites' files),
    /// the change is refused and `ours` is kept aside.
    /// `doing` says what was refused, for the error: "compacted" or "repaired".
    func replaceDataFile(with new: SuiteFiles.NewDataFile, replacing ours: FileStatus?, keptAs history: String?,
                         doing: String) throws {
        let temporaryName = new.temporaryName
        let placed = try new.descriptor.status(path: files.directory.pathOf(temporaryName))
        let refusal = SuiteError(.foreignFile, suite: suite, path: files.dataPath,
                                 message: "Another file took the suite file's name, or the new file's temporary name, while the suite was being \(doing) (the suite's file exchanged with another suite's or renamed away, or another file given the temporary name); nothing was put in place, and that file was left where it is. Writes to it are refused until the suite's own file is back under its name.")
        guard files.name(temporaryName, leadsTo: placed) else { throw refusal }
        guard let ours else { return try files.directory.rename(temporaryName, to: files.dataName) }
        // Another file under the suite's name is refused before anything moves: an
        // exchange undone afterwards can meet other exchanges of the names, and two
        // suites' compactions undone that way scattered their files over each other's
        // temporary names (one suite's only copy lost). A name that leads to nothing
        // replaces nobody's file: that replacement goes on.
        if let there = (try? files.directory.status(of: files.dataName)) ?? nil, !there.isSameFile(as: ours) { throw refusal }
        SuiteFaultInjection.reach(.replacementChecked)
        var keepsTemporaryName = false
        defer { if !keepsTemporaryName { files.removeName(temporaryName, leadingTo: ours) } }
        // After an exchange that did not put `new` in place, `ours` under the temporary
        // name may be the suite's only named copy of its records: kept aside (and named
        // in the refusal), or, with no name free for it, left where it is.
        func refusalKeepingOursAside() -> SuiteError {
            guard files.name(temporaryName, leadsTo: ours) else { return refusal }
            guard let aside = try? keepAside(temporaryName) else {
                keepsTemporaryName = true
                return refusal
            }
            return SuiteError(.foreignFile, suite: suite, path: files.dataPath,
                              message: refusal.message + " The suite's own file was found off its name and kept as \(aside).")
        }
        do {
            try files.directory.exchange(temporaryName, with: files.dataName)
        } catch let failure as SystemCallError where failure.failed(with: .invalidArgument, .notImplemented, .noSuchFileOrDirectory) {
            // No exchange here, or nothing under the name to exchange with (nobody's
            // file is replaced then).
            try files.directory.rename(temporaryName, to: files.dataName)
            return
        }
        SuiteFaultInjection.reach(.replacementExchanged)
        guard files.name(temporaryName, leadsTo: ours), history.map({ files.name($0, leadsTo: ours) }) ?? true else {
            do {
                try files.directory.exchange(temporaryName, with: files.dataName)
            } catch {
                // The name could not be given back: what the temporary name holds is
                // not this suite's to remove, so it is given a name of its own.
                _ = try? keepAside(temporaryName)
            }
            // Undone, the temporary name holds what the suite's name led to by then:
            // this suite's own file, when another exchange brought it back there.
            throw refusalKeepingOursAside()
        }
        // The exchange went through, but the suite's name does not lead to the new file
        // when another file was renamed over the temporary name before the exchange
        // (the new file then lost its only name), or another exchange moved it on.
        guard files.name(files.dataName, leadsTo: placed) else { throw refusalKeepingOursAside() }
    }

    /// What a compaction or repair that failed leaves of its new file: the temporary
    /// name is removed only while it still leads to that file (a refused exchange that
    /// could not be undone leaves another suite's file there), and the descriptor closed.
    func discard(_ new: SuiteFiles.NewDataFile) {
        if let made = try? new.descriptor.status(path: files.directory.pathOf(new.temporaryName)) {
            files.removeName(new.temporaryName, leadingTo: made)
        }
        new.descriptor.close()
    }

    /// `fdatasync` of the data file and `fsync` of the directory.
    func synchronizeToDisk() throws {
        do {
            try dataFile?.synchronizeData(path: files.dataPath)
            try files.directory.synchronize()
        } catch {
            throw files.error(error, doing: "flush the suite to disk")
        }
    }
}
