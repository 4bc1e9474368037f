#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Suite {
    /// Removes a suite's files from its directory, so that the suite no longer exists
    /// (`names(in:)` no longer lists it, `exists(named:directory:)` is false), as
    /// `defaults delete DOMAIN` does.
    ///
    /// What is removed, all under the suite's exclusive lock (so no writer is half-way
    /// through a commit, and none starts until the files are gone):
    ///
    /// - `NAME.suite`, the data file;
    /// - `NAME.suite.h.SEQUENCE`, the replaced journals kept as change history;
    /// - `NAME.suite.tmp.PID.ID`, new data files a killed process left half-written;
    /// - `NAME.suite.lock`, the lock file, last.
    ///
    /// Damaged copies kept aside by a repair (`NAME.suite.damaged-*`) stay: they are
    /// what is left of values that could not be read, for a person to look at, and a
    /// long suite name is shortened in their names, so they cannot be told apart from
    /// another suite's for sure. Remove them by hand once looked at.
    ///
    /// A process that has the suite open meanwhile is not refused and loses nothing
    /// it holds in memory: its next read sees the suite empty (the removal marks its
    /// cache stale, and it follows the lock file to a new one, creating
    /// `NAME.suite.lock` again); its observers hear the keys removed. A write of its
    /// own after that creates the suite again, from nothing. A process inside a
    /// transaction holds the lock, so the removal waits for it, at most
    /// `options.lockTimeout`. Do not call this inside an `update` block of the same
    /// suite: it would wait for its own lock.
    ///
    /// - Parameters:
    ///   - name: the suite's name, checked as `Suite(named:)` checks it.
    ///   - directory: where the suite lives; `Suite.defaultDirectory()` when nil.
    ///   - options: `sharing` says whose files are accepted, `lockTimeout` how long to
    ///     wait for the lock, and with `.durable` durability the directory is synced,
    ///     so that the removal survives a power loss.
    /// - Returns: the files removed, in the order above; empty when the suite had no
    ///   files (or its directory does not exist).
    /// - Throws: `SuiteError`, having removed nothing: `.invalidSuiteName`;
    ///   `.lockTimeout` (naming the holder in `lockHolder`) when another process holds
    ///   the lock for longer than `options.lockTimeout`; `.foreignFile` when
    ///   `NAME.suite` is not a suite file (it is left alone), `.symbolicLink` when a
    ///   link stands there; `.readOnly` or `.permissionDenied` when the directory or
    ///   the lock file may not be changed. A failure after the data file is gone
    ///   (removing a history file, say) throws too: the suite no longer exists, and
    ///   what is left over is named in the error.
    @discardableResult
    public static func removeFiles(named name: String, directory: URL? = nil, options: Options = Options()) throws -> [URL] {
        let name = Validation.normalized(name)
        try Validation.checkSuiteName(name)
        let path = PathNormalization.standardized(directory?.filePath ?? defaultDirectoryPath())
        let handle: DirectoryHandle
        do {
            handle = try SuiteFiles.openDirectory(path: path, sharing: options.sharing, suite: name, creating: false)
        } catch let error as SuiteError where error.code == .notFound {
            return []
        }
        let files = SuiteFiles(suite: name, directory: handle, sharing: options.sharing)
        let removal = SuiteRemoval(files: files, options: options)
        return try removal.run().map { URL(fileURLWithPath: handle.pathOf($0), isDirectory: false) }
    }
}

/// One removal of a suite's files: see `Suite.removeFiles(named:directory:options:)`.
private struct SuiteRemoval {
    let files: SuiteFiles
    let options: Suite.Options

    /// The names of the suite's files in the directory now, the lock file aside.
    private func dataAndLeftoverNames() throws -> [String] {
        let names: [String]
        do {
            names = try files.directory.names()
        } catch {
            throw files.error(error, doing: "list the suite directory")
        }
        let data = names.contains(files.dataName) ? [files.dataName] : []
        return data + names.filter(files.isTemporaryFile).sorted() + files.historyFiles().map(\.name)
    }

    /// Refuses a data file that is not this library's, before anything is removed.
    private func checkDataFile() throws {
        // Refuses a link, a directory, a FIFO or a socket, and another user's file.
        guard let (descriptor, status) = try files.openDataFile(writable: false) else { return }
        defer { descriptor.close() }
        let start: [UInt8]
        do {
            start = try descriptor.read(count: min(status.size, DataFileHeader.magic.count), at: 0)
        } catch {
            throw files.error(error, doing: "read the suite file")
        }
        // A file cut short inside the magic, or empty, is still taken for ours.
        guard DataFileHeader.magic.starts(with: start) else {
            throw SuiteError(.foreignFile, suite: files.suite, path: files.dataPath,
                             message: "This file is not a suite file, so it was left untouched and nothing was removed. Move it away if it should go.")
        }
    }

    func run() throws -> [String] {
        let lockExisted = (try? files.directory.status(of: files.lockName)) != nil
        guard try lockExisted || !dataAndLeftoverNames().isEmpty else { return [] }
        try checkDataFile()
        var wait = LockWait(timeout: options.lockTimeout)
        defer { wait.finish() }
        while true {
            guard let lock = try files.openLockFile() else {
                throw SuiteError(.readOnly, suite: files.suite, path: files.lockPath,
                                 message: "The suite's lock file cannot be opened by this process, so its files cannot be removed safely; nothing was removed.")
            }
            defer { lock.descriptor.close() }
            guard lock.writable else {
                throw SuiteError(.readOnly, suite: files.suite, path: files.lockPath,
                                 message: "This process may only read the suite's lock file, so it cannot tell the suite's other users of the removal; nothing was removed.")
            }
            let header = try StoreState.mapHeader(of: lock.descriptor, size: lock.size, writable: true, files: files)
            while true {
                let point = LockWait.Point(page: header?.page, seen: header?.releaseCount.load() ?? 0)
                do {
                    if try lock.descriptor.tryLock(.exclusive, path: files.lockPath) { break }
                } catch {
                    throw files.error(error, doing: "lock the suite")
                }
                guard wait.pause(after: point) else { throw timeoutError(lock.descriptor) }
            }
            // Holding the lock, it waits no more: its release wakes only others.
            wait.finish()
            var removed: [String] = []
            defer {
                // Tells every process that has the suite open, even after a failure half-way:
                // its cache is stale now, and under the lock it finds that the lock file
                // has no name and moves on.
                if !removed.isEmpty, let header, !header.page.wasCutShort { header.publish(generation: header.generation &+ 2) }
                release(lock.descriptor, header: header)
            }
            // Another removal took the name away while this one waited: lock the new file.
            guard (try? lock.descriptor.status(path: files.lockPath))?.linkCount ?? 0 > 0 else { continue }
            // Checked again under the lock: a file may have been put there meanwhile.
            try checkDataFile()
            // Stale before the first name goes: the removal's inotify event sends the
            // observers to catch up, and they must find their state out of date, wait
            // for this lock, and read the outcome (not take the fresh path and miss it).
            if let header, !header.page.wasCutShort { header.publish(generation: header.generation &+ 2) }
            for name in try dataAndLeftoverNames() + [files.lockName] {
                do {
                    try files.directory.removeFile(name)
                    removed.append(name)
                    if name == files.dataName { SuiteFaultInjection.reach(.suiteFileRemoved) }
                } catch let failure as SystemCallError where failure.code == .noSuchFileOrDirectory {
                    continue
                } catch {
                    let left = removed.isEmpty ? "nothing was removed" : "removed " + removed.joined(separator: ", ") + " before it"
                    throw SuiteError(files.error(error, doing: "remove \(name)"), adding: left)
                }
            }
            if options.durability == .durable {
                do {
                    try files.directory.synchronize()
                } catch {
                    throw files.error(error, doing: "sync the suite directory after removing the suite")
                }
            }
            return lockExisted ? removed : removed.filter { $0 != files.lockName }
        }
    }

    /// Unlocks, waking a process that sleeps waiting for the lock (it then finds the
    /// lock file without a name, and opens a new one).
    private func release(_ lock: FileDescriptor, header: SharedHeader?) {
        lock.unlock()
        if let header, !header.page.wasCutShort, header.waiterCount.load() != 0 {
            header.releaseCount.add(1)
            header.releaseCount.wake(count: Int32.max)
        }
    }

    private func timeoutError(_ lock: FileDescriptor) -> SuiteError {
        let holders = ((try? lock.status()).map(LockHolders.pids(holding:)) ?? []).filter { $0 != ProcessIdentity.id }
        let who = holders.isEmpty ? "another process" : "process " + holders.map(String.init).joined(separator: ", ")
        let waited = options.lockTimeout ?? .zero
        return SuiteError(.lockTimeout, suite: files.suite, path: files.lockPath, lockHolder: holders.first,
                          message: "Waited \(waited) for the suite's exclusive lock, which \(who) holds, to remove the suite's files; it may be stopped or stuck, or in a long transaction. Nothing was removed. Try again once it lets go.")
    }
}

private extension SuiteError {
    /// The same error, with what was done before it said after its message.
    init(_ error: SuiteError, adding note: String) {
        self = error
        message += " (\(note))"
    }
}
