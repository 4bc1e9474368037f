extension StoreState {
    /// Tries to take the suite's `flock` without waiting; true when it is held now (or
    /// the suite has no lock file). A lock file that lost its name is followed to
    /// the new one, at most `followingNames` times: a name that keeps losing its file
    /// (someone deleting it in a loop) counts as a lock held, which the caller waits
    /// for within its timeout. One cut short is mapped again.
    func tryLockFile(_ kind: FileDescriptor.LockKind, followingNames: Int = 8) throws -> Bool {
        try checkSameProcess()
        guard let lockFile else { return true }
        do {
            guard try lockFile.tryLock(kind, path: files.lockPath) else { return false }
            do {
                return try checkLockedFile(kind, followingNames: followingNames)
            } catch {
                // Not left locked by an attempt that failed (its caller unlocks only what
                // it was given). A lock file replaced meanwhile was unlocked and closed
                // then, and its successor's attempt unlocked its own.
                if self.lockFile == lockFile { lockFile.unlock() }
                throw error
            }
        } catch let error as SuiteError {
            throw error
        } catch {
            throw files.error(error, doing: "lock the suite")
        }
    }

    /// `tryLockFile`'s checks of the lock file it has just locked, and of the data
    /// file when the process's file events vouch for both.
    private func checkLockedFile(_ kind: FileDescriptor.LockKind, followingNames: Int) throws -> Bool {
        guard let lockFile else { return true }
        do {
            // Nothing happened to either file since this writer found them as they
            // should be: one read of the process's file events stands in for the status
            // of both (`catchUp` then takes the data file's size from `lseek`).
            if kind == .exclusive && writable {
                if readFileEventsAtLock() && header?.page.wasCutShort != true { return true }
            } else {
                clearFileEventsAtLock()
            }
            // A lock on a lock file that lost its name excludes no newcomer, who opens
            // the new file by that name: follow the name. One that was cut short leaves
            // the mapped page without a file under it: map it again.
            let status = try lockFile.status(path: files.lockPath)
            // A writer also asks what the name leads to: a lock file renamed away, or
            // replaced while another name keeps it, keeps a link, but newcomers lock the
            // file by the name, or make one. (Something there that is not a file, no
            // process can lock: this one goes on with its own.)
            var lostName = status.linkCount == 0
            if !lostName && fileWatch.checksNames {
                lostName = [.anotherFile, .nothing].contains(try target(of: files.lockName, beside: status))
            }
            if lostName {
                try replaceUnlinkedLockFile()
                return followingNames > 0 ? try tryLockFile(kind, followingNames: followingNames - 1) : false
            }
            if header?.page.wasCutShort == true || (status.size < SharedHeader.size && (writable || header != nil)) {
                // (A process that may only read a lock file too short to map reads
                // without the header, and has nothing to map again.)
                try mapLockFileAgain()
            }
            return true
        } catch let error as SuiteError {
            throw error
        } catch {
            throw files.error(error, doing: "lock the suite")
        }
    }

    /// Releases the `flock`, waking a process that sleeps waiting for it. A forked
    /// child never releases what its parent holds through the same file.
    func unlockFile() {
        guard let lockFile, epoch == ForkEpoch.current else { return }
        clearFileEventsAtLock()
        // A SIGBUS while the lock was held means the lock file was cut short under
        // it, so what was written to the header may have gone to a private page: map
        // the file again, so that the next locker sets it up again.
        if header?.page.wasCutShort == true { try? mapLockFileAgain() }
        lockFile.unlock()
        if let header, header.isWritable, !header.page.wasCutShort, header.waiterCount.load() != 0 {
            LockWait.wakeAWaiter(of: header)
        }
    }

    /// Whether the lock file still has its name: checked again after a transaction's
    /// block, which may have run for long while someone deleted it.
    func lockFileHasName() throws -> Bool {
        guard let lockFile else { return true }
        do {
            return try lockFile.status(path: files.lockPath).linkCount > 0
        } catch {
            throw files.error(error, doing: "inspect the suite's lock file")
        }
    }

    /// Whether the state's lock file may still be taken for the suite's: it has its
    /// name, or no newer file has taken the name (a process that makes a new lock file
    /// makes it before it writes; and a suite directory being removed has none). One
    /// `fstat`, and a `fstatat` of the name when the lock file lost it.
    func lockFileIsCurrent() throws -> Bool {
        guard try !lockFileHasName() else { return true }
        do {
            return try files.directory.status(of: files.lockName) == nil
        } catch {
            throw files.error(error, doing: "inspect the suite's lock file")
        }
    }

    /// The shared page's release count, read before each try at the lock: a waiter
    /// sleeps only while it has not moved since.
    var releaseCountBeforeTry: UInt32 { header?.releaseCount.load() ?? 0 }

    /// What a process whose try failed sleeps on: the shared page (kept alive by the
    /// reference) and the release count `seen` before the try. Taken only once the
    /// try failed, since holding the page costs every write an atomic retain and
    /// release. (A try that mapped the page again leaves a count of the old page: the
    /// first sleep then ends at once, or after at most `LockWait.longestSleep`.)
    func lockWaitPoint(seen: UInt32) -> LockWait.Point {
        LockWait.Point(page: header?.page, seen: seen)
    }

    func lockTimeoutError(_ kind: FileDescriptor.LockKind, waited timeout: Duration) -> SuiteError {
        let holders = (try? lockFile?.status()).flatMap { $0 }.map(LockHolders.pids(holding:)) ?? []
        let others = holders.filter { $0 != ProcessIdentity.id }
        let who = others.isEmpty ? "another process" : "process " + others.map(String.init).joined(separator: ", ")
        return SuiteError(.lockTimeout, suite: suite, path: files.lockPath, lockHolder: others.first,
                          message: "Waited \(timeout) for the suite's \(kind == .shared ? "shared" : "exclusive") lock, which \(who) holds; it may be stopped or stuck. Nothing was changed. Try again, or raise Suite.Options.lockTimeout.")
    }

    /// Someone deleted, replaced or renamed the lock file while this process had it open.
    /// Moves every process still on the old file to the new one: a change of the old
    /// generation sends their readers to the slow path, where they see the same.
    private func replaceUnlinkedLockFile() throws {
        if writable, let header, !header.page.wasCutShort { header.publish(generation: header.generation &+ 2) }
        let (newLock, newHeader, newWritable) = try Self.openLock(files)
        lockFile?.unlock()
        adoptLockFile(newLock)
        header = newHeader
        writable = newWritable
        view.isLoaded = false
    }

    /// The lock file was cut short under the mapping: allocates its page again (when
    /// this process may write it) and maps it anew. What the page says now is not
    /// trusted: a zeroed page reads as uninitialized, so the next exclusive locker
    /// sets it up again from the data file.
    private func mapLockFileAgain() throws {
        guard let lockFile else { return }
        if writable {
            do {
                try lockFile.allocate(length: SharedHeader.size, path: files.lockPath)
            } catch {
                throw files.error(error, doing: "set up the suite's lock file again")
            }
        }
        header = try Self.mapHeader(of: lockFile, size: (try? lockFile.status().size) ?? 0, writable: writable, files: files)
        view.isLoaded = false
        diagnose(.rebuiltSharedHeader, path: files.lockPath,
                 "The lock file was cut short while in use (by a process outside this library); it was mapped again and its shared header is set up again from the suite file.")
    }
}
