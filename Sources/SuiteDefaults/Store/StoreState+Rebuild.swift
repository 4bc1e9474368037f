extension StoreState {
    /// Under the exclusive lock: reads the data file from scratch, trusting nothing
    /// but the checksums, and sets the shared header up again from what it found.
    ///
    /// Runs when the header cannot be trusted (the first process after a reboot) or a
    /// writer died inside a commit (odd generation), and when damage was found.
    func rebuild() throws {
        try checkSameProcess()
        guard let header else { throw NeedsExclusiveLock() }
        // What the header said, if it can be believed at all.
        let trusted: SharedHeader.Snapshot? = if case .valid(let snapshot) = header.read() { snapshot } else { nil }
        let interruptedBy = trusted?.isCommitInProgress == true ? header.committerPID : nil
        guard let trusted, header.isWritable else {
            return try rebuildFiles(header, trusted: trusted, interruptedBy: interruptedBy)
        }
        // A change is in progress, as in a commit, under an odd generation that no
        // process can hold (a reader may hold the odd one of a writer that died): an
        // observer that a repaired file's rename wakes must not take what it knows for
        // fresh (the new generation is published only at the end), but wait for the
        // lock and read the new file. A rebuild that fails has changed no file, and
        // puts the header back, so that the next one still names the writer that died,
        // if one did, rather than this process.
        let committer = header.committerPID
        header.committerPID = ProcessIdentity.id
        header.publish(generation: trusted.isCommitInProgress ? trusted.generation &+ 2 : trusted.generation | 1)
        do {
            try rebuildFiles(header, trusted: trusted, interruptedBy: interruptedBy)
        } catch {
            header.committerPID = committer
            header.publish(generation: trusted.generation)
            throw error
        }
    }

    /// `rebuild()`'s work on the files, and the header set up again at the end.
    private func rebuildFiles(_ header: SharedHeader, trusted: SharedHeader.Snapshot?, interruptedBy: Int32?) throws {
        // Numbered on from the highest number known, so that observers' numbers never
        // go back: a header that is not trusted and a data file gone would otherwise
        // start the suite over at 1. What this process saw counts too, and the header's
        // own number even when the header is not trusted (its boot ID or magic may be
        // all that was lost), bounded as a commit bounds it.
        let previousSequence = max(trusted?.lastSequence ?? header.recordedLastSequence, contents.lastSequence, view.lastSequence)
        files.removeStaleTemporaryFiles()

        var bytes: [UInt8] = []
        let opened = try files.openDataFile(writable: true)
        var descriptor = opened?.descriptor
        if let (open, status) = opened {
            do {
                bytes = try readWholeDataFile(open, status: status)
            } catch {
                open.close()
                throw files.error(error, doing: "read the suite file")
            }
            if bytes.isEmpty {
                // An empty file holds nothing to keep; a new one takes its place.
                open.close()
                try? files.directory.removeFile(files.dataName)
                descriptor = nil
            }
        }
        guard let descriptor else {
            if let trusted, trusted.dataFileID != 0 {
                diagnose(.dataFileMissing, path: files.dataPath,
                         "The suite file disappeared or was emptied while its lock file remained; the suite starts empty.")
            }
            dataFile?.close()
            dataFile = nil
            replaceContents(with: SuiteContents())
            header.initialize(dataFileID: 0, committedLength: 0, lastSequence: previousSequence)
            view = View(generation: header.generation, dataFileID: 0, length: 0, lastSequence: previousSequence, isLoaded: true)
            return
        }

        // The committed length describes one file: after a compaction killed between
        // its rename and the header update, the file on disk is the new one.
        let trustedLength = trusted.flatMap { trusted in
            bytes.withUnsafeBytes { DataFileHeader.decode($0) } == .valid(fileID: trusted.dataFileID) ? trusted.committedLength : nil
        }
        var scan: DataFileScan
        do {
            scan = try scanRefusingForeign(bytes, committedLength: trustedLength)
        } catch let error as SuiteError where error.code == .foreignFile && (trusted?.dataFileID ?? 0) != 0 {
            // The shared header proves a suite file was here: what is there now is that
            // file, damaged beyond recognition. Keep it aside and start afresh.
            scan = DataFileScan()
            scan.verdict = .damaged
            scan.unreadableBytes = bytes.count
            scan.firstProblem = FormatError(reason: "nothing in the file can be read as a suite file", offset: 0)
        } catch {
            descriptor.close()
            throw error
        }
        var current = (descriptor: descriptor, fileID: scan.fileID ?? 0, length: bytes.count)
        switch scan.verdict {
        case .intact:
            if let pid = interruptedBy {
                diagnose(.recoveredInterruptedCommit, "Process \(pid) died while committing; the suite file was checked and is intact.")
            }
        case .tornTail:
            do {
                try descriptor.truncate(to: scan.validEnd, path: files.dataPath)
            } catch {
                descriptor.close()
                throw files.error(error, doing: "cut off an unfinished write")
            }
            current.length = scan.validEnd
            diagnose(.discardedTornWrite, "Discarded \(bytes.count - scan.validEnd) bytes of a write that process \(interruptedBy.map(String.init) ?? "(unknown)") did not finish; no write that had returned was lost.")
        case .damaged:
            do {
                current = try replaceDamagedFile(with: scan, read: opened?.status)
            } catch {
                descriptor.close()
                throw error
            }
            descriptor.close()
        }
        dataFile?.close()
        dataFile = current.descriptor
        replaceContents(with: scan.contents)
        let lastSequence = max(scan.contents.lastSequence, previousSequence)
        header.initialize(dataFileID: current.fileID, committedLength: current.length, lastSequence: lastSequence)
        view = View(generation: header.generation, dataFileID: current.fileID, length: current.length,
                    lastSequence: lastSequence, isLoaded: true)
    }

    /// Writes what survived into a new file, and keeps the damaged one aside. `damaged`
    /// is the status of the file that was read: only that file is replaced (see
    /// `replaceDataFile(with:replacing:keptAs:doing:)`).
    private func replaceDamagedFile(with scan: DataFileScan, read damaged: FileStatus?) throws
        -> (descriptor: FileDescriptor, fileID: UInt64, length: Int)
    {
        let snapshot = scan.contents.snapshot(timestamp: WallClock.nanosecondsSince1970(), pid: ProcessIdentity.id)
        // A repair is rare and follows trouble, so it always goes to the disk.
        let new = try files.writeNewDataFile(snapshot: snapshot, durable: true)
        let aside: String
        do {
            aside = try keepAside(files.dataName)
            SuiteFaultInjection.reach(.repairWritten)
            try replaceDataFile(with: new, replacing: damaged, keptAs: aside, doing: "repaired")
            try? files.directory.synchronize()
        } catch {
            discard(new)
            if let error = error as? SuiteError { throw error }
            throw files.error(error, doing: "replace the damaged suite file")
        }
        let problem = scan.firstProblem?.description ?? "unreadable bytes"
        diagnose(.repairedDamage, path: files.directory.pathOf(aside),
                 "The suite file was damaged (\(problem)). \(scan.recordCount) intact records were kept and \(scan.unreadableBytes) unreadable bytes skipped; the damaged file was kept as \(aside).")
        return (new.descriptor, new.fileID, new.length)
    }

    /// Gives the file named `kept` (the damaged data file, or what a compaction could
    /// not give back) a second name of its own, `NAME.suite.damaged-…`, never one that
    /// exists already, so that no kept copy replaces another. `kept` keeps its name too,
    /// where the file system has hard links.
    func keepAside(_ kept: String) throws -> String {
        let now = Int(WallClock.nanosecondsSince1970() / 1_000_000_000)
        for name in files.damagedNames(at: now).prefix(1000) {
            do {
                try files.directory.link(kept, to: name)
                return name
            } catch let failure as SystemCallError where failure.code == .fileExists {
                continue
            } catch let failure as SystemCallError where failure.failed(with: .notPermitted, .notSupported) {
                // No hard links here. Under the exclusive lock, a name found free stays
                // free but for processes outside the protocol.
                guard try files.directory.status(of: name) == nil else { continue }
                try files.directory.rename(kept, to: name)
                return name
            }
        }
        throw SuiteError(.ioFailure, suite: suite, path: files.dataPath,
                         message: "Could not find a free name to keep the damaged suite file aside; nothing was changed.")
    }
}
