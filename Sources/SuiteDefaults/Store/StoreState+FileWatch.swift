extension StoreState {
    /// What the process's `FileChangeCounter` says of this state's lock file and data
    /// file. A writer checks both with status calls under the exclusive lock; once
    /// it found them as they should be while both were watched, later commits skip
    /// those calls for as long as the count does not move.
    struct FileWatch {
        var lockFile: FileChangeCounter.Watch?
        var dataFile: FileChangeCounter.Watch?
        /// The count at which both files were last found as they should be, by status
        /// calls made after the count was read, with both watched; nil until then, and
        /// from when either file is replaced.
        var verifiedAt: UInt64?
        /// The count read under the exclusive lock now held; nil under any other.
        var countAtLock: UInt64?
        /// Whether that count is `verifiedAt`: nothing has happened to either file
        /// since they were verified, so neither file's status is asked for.
        var unchangedAtLock = false
        /// Under the exclusive lock of a writer: the checks of the files also ask what
        /// their names lead to (whether or not the process watches them, so that every
        /// writer follows a lock file's name alike).
        var checksNames = false
        /// Whether both names were found leading to this state's files in this
        /// attempt: only then are the files verified. A name that leads to nothing or
        /// to something that is not a file may come to lead to another file with no
        /// event on this state's files, so while it does, every commit checks.
        var namesLeadHere = true
    }

    /// Stops watching `file`, which was replaced or closed; both must be verified again.
    func forgetFileWatch(of file: FileChangeCounter.File) {
        switch file {
        case .lockFile:
            if let watch = fileWatch.lockFile { FileChangeCounter.unwatch(watch) }
            fileWatch.lockFile = nil
        case .dataFile:
            if let watch = fileWatch.dataFile { FileChangeCounter.unwatch(watch) }
            fileWatch.dataFile = nil
        }
        fileWatch.verifiedAt = nil
        fileWatch.unchangedAtLock = false
    }

    /// Just after the exclusive lock was taken: reads the count, both files watched
    /// (watching them first when they are not), and returns whether nothing happened
    /// to either since they were verified.
    func readFileEventsAtLock() -> Bool {
        fileWatch.checksNames = true
        fileWatch.namesLeadHere = true
        fileWatch.countAtLock = currentFileEventCount()
        fileWatch.unchangedAtLock = fileWatch.countAtLock != nil && fileWatch.countAtLock == fileWatch.verifiedAt
        return fileWatch.unchangedAtLock
    }

    /// Under any lock but the exclusive one, and once a lock is released: nothing is
    /// known of the files.
    func clearFileEventsAtLock() {
        fileWatch.countAtLock = nil
        fileWatch.unchangedAtLock = false
        fileWatch.checksNames = false
    }

    /// Under the exclusive lock of a writer, checking its files: what `name` leads to,
    /// beside the file of `status`; notes one that does not lead to it.
    func target(of name: String, beside status: FileStatus) throws -> SuiteFiles.NameTarget {
        let target = try files.target(of: name, beside: status)
        if target != .thisFile {
            fileWatch.namesLeadHere = false
            fileWatch.verifiedAt = nil
        }
        return target
    }

    /// At the end of a catch-up under the exclusive lock that found both files as
    /// they should be (when nothing was known, by status calls made after the count
    /// was read): they count as verified at that count, if both were watched then,
    /// neither has been replaced since, and both names led to them.
    func fileStatusesVerified() {
        guard let count = fileWatch.countAtLock, fileWatch.namesLeadHere, fileWatch.lockFile != nil,
              (dataFile == nil) == (fileWatch.dataFile == nil)
        else { return }
        fileWatch.verifiedAt = count
    }

    private func currentFileEventCount() -> UInt64? {
        guard let lockFile else { return nil }
        if fileWatch.lockFile == nil { fileWatch.lockFile = FileChangeCounter.watch(lockFile, as: .lockFile) }
        if fileWatch.dataFile == nil, let dataFile { fileWatch.dataFile = FileChangeCounter.watch(dataFile, as: .dataFile) }
        // A watch not had is asked for again at the next commit; the other is kept.
        guard let lock = fileWatch.lockFile, dataFile == nil || fileWatch.dataFile != nil else { return nil }
        guard let count = FileChangeCounter.count(),
              count == fileWatch.verifiedAt || FileChangeCounter.areInPlace(lock, fileWatch.dataFile)
        else {
            // Watches that are gone (or whose instance was given up) are asked for again.
            forgetFileWatch(of: .lockFile)
            forgetFileWatch(of: .dataFile)
            return nil
        }
        return count
    }
}
