import CSuiteDefaults
import Glibc

extension StoreState {
    /// The longest single sleep while waiting for the lock. A release wakes waiters at
    /// once; this bounds the wait when nothing wakes them: a holder that died (the
    /// kernel frees its lock, but nobody bumps the futex), or a process that may only
    /// read the shared page and so cannot ask to be woken.
    static let longestSleepForLock = Duration.milliseconds(5)

    /// How long a waiter spins, trying again after pauses that double from 1 µs,
    /// before it goes to sleep. A holder keeps the lock for microseconds, so most
    /// waits end here; and while nobody sleeps, a release costs no wake-up call. The
    /// pauses matter: `flock` calls in a tight loop slow down the holder's own.
    static let spinBeforeSleeping = Duration.microseconds(100)

    /// Runs `body` holding the suite's `flock`, of `kind`, waited for at most
    /// `timeout` (nil: for as long as it takes).
    ///
    /// - Throws: `SuiteError` `.lockTimeout`, naming the holder, when the wait
    ///   runs out.
    func withFileLock<R>(_ kind: FileDescriptor.LockKind, timeout: Duration?, _ body: () throws -> R) throws -> R {
        try checkSameProcess()
        guard lockFile != nil else { return try body() }
        do {
            try acquireFileLock(kind, timeout: timeout)
        } catch let error as SuiteError {
            throw error
        } catch {
            throw files.error(error, doing: "lock the suite")
        }
        defer { releaseFileLock() }
        let result = try body()
        // A SIGBUS during the body means the lock file was cut short under it, so the
        // header written may have gone to a private page: map the file again, and
        // let the next reader set it up again from the data file.
        if header?.page.wasCutShort == true { try? mapLockFileAgain() }
        return result
    }

    private func acquireFileLock(_ kind: FileDescriptor.LockKind, timeout: Duration?) throws {
        guard let lockFile else { return }
        if try !lockFile.tryLock(kind, path: files.lockPath) {
            try waitForFileLock(kind, timeout: timeout)
        }
        // A lock on a lock file that lost its name excludes no newcomer, who opens
        // the new file by that name: follow the name. One that was cut short leaves
        // the mapped page without a file under it: map it again.
        let status = try lockFile.status(path: files.lockPath)
        if status.linkCount == 0 {
            try replaceUnlinkedLockFile()
            try acquireFileLock(kind, timeout: timeout)
        } else if header?.page.wasCutShort == true || (status.size < SharedHeader.size && (writable || header != nil)) {
            // (A process that may only read a lock file too short to map reads without
            // the header, and has nothing to map again.)
            try mapLockFileAgain()
        }
    }

    /// Waits for the lock on the futex in the shared page, which every release bumps
    /// while someone waits: `flock` itself cannot wait with a deadline.
    private func waitForFileLock(_ kind: FileDescriptor.LockKind, timeout: Duration?) throws {
        guard let lockFile else { return }
        SuiteFaultInjection.reach(.waitingForLock)
        let start = MonotonicClock.now()
        var pause = Duration.microseconds(1)
        while MonotonicClock.now() - start < Self.spinBeforeSleeping {
            let resume = MonotonicClock.now() + pause
            while MonotonicClock.now() < resume { sd_cpu_relax() }
            if try lockFile.tryLock(kind, path: files.lockPath) { return }
            pause = min(pause * 2, .microseconds(32))
        }
        let deadline = timeout.map { start + $0 }
        // Counted as a waiter before trying again, so a release in between wakes us.
        let counted = header.map { $0.isWritable && !$0.page.wasCutShort } ?? false
        if counted, let header { sd_atomic_add_u32(header.waiters, 1) }
        defer { if counted, let header { sd_atomic_add_u32(header.waiters, UInt32.max) } }
        while true {
            let seen = header.map { sd_atomic_load_u32($0.releases) } ?? 0
            if try lockFile.tryLock(kind, path: files.lockPath) { return }
            var sleep = Self.longestSleepForLock
            if let deadline {
                let remaining = deadline - MonotonicClock.now()
                guard remaining > .zero else { throw lockTimeoutError(kind, timeout: timeout ?? .zero) }
                sleep = min(sleep, remaining)
            }
            if let header, SharedFutex.wait(on: header.releases, whileEqualTo: seen, timeout: sleep) != .unsupported {
                continue
            }
            var interval = timespec(tv_sec: 0, tv_nsec: Int(sleep.components.attoseconds / 1_000_000_000))
            nanosleep(&interval, nil)
        }
    }

    private func releaseFileLock() {
        // A forked child never releases what its parent holds through the same file.
        guard let lockFile, epoch == ForkEpoch.current else { return }
        lockFile.unlock()
        if let header, header.isWritable, !header.page.wasCutShort, sd_atomic_load_u32(header.waiters) != 0 {
            sd_atomic_add_u32(header.releases, 1)
            SharedFutex.wake(header.releases)
        }
    }

    private func lockTimeoutError(_ kind: FileDescriptor.LockKind, timeout: Duration) -> SuiteError {
        let holders = (try? lockFile?.status()).flatMap { $0 }.map(LockHolders.pids(holding:)) ?? []
        let others = holders.filter { $0 != getpid() }
        let who = others.isEmpty ? "another process" : "process " + others.map(String.init).joined(separator: ", ")
        return SuiteError(.lockTimeout, suite: suite, path: files.lockPath, lockHolder: others.first,
                          message: "Waited \(timeout) for the suite's \(kind == .shared ? "shared" : "exclusive") lock, which \(who) holds; it may be stopped or stuck. Nothing was changed. Try again, or raise Suite.Options.lockTimeout.")
    }

    /// Someone deleted or replaced the lock file while this process had it open.
    /// Moves every process still on the old file to the new one: a change of the old
    /// generation sends their readers to the slow path, where they see the same.
    private func replaceUnlinkedLockFile() throws {
        if writable, let header, !header.page.wasCutShort { header.publish(generation: header.generation &+ 2) }
        let (newLock, newHeader, newWritable) = try Self.openLock(files)
        lockFile?.unlock()
        lockFile?.close()
        lockFile = newLock
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
        let size = (try? lockFile.status().size) ?? 0
        header = size >= SharedHeader.size ? MappedPage(lockFile, writable: writable).map(SharedHeader.init) : nil
        if writable && header == nil {
            throw SuiteError(.ioFailure, suite: suite, path: files.lockPath,
                             message: "Could not map the suite's lock file into memory again after it was cut short.")
        }
        view.isLoaded = false
        diagnose(.rebuiltSharedHeader, path: files.lockPath,
                 "The lock file was cut short while in use (by a process outside this library); it was mapped again and its shared header is set up again from the suite file.")
    }
}
