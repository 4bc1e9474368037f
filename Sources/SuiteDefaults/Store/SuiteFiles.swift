/// The files of one suite in one directory, and the rules for naming and opening
/// them (the one place that knows how a suite's name and its files' names relate):
///
/// - `NAME.suite`, the data file: a header, then the journal of records.
/// - `NAME.suite.lock`, never replaced: the `flock` target, and the shared header.
/// - `NAME.suite.tmp.*`, a new data file being written; `NAME.suite.h.SEQ`, a
///   replaced journal kept for processes that collect changes and lag (see
///   `StoreState+History`); `NAME.suite.damaged-*`, damaged copies kept aside.
///
/// Every file is opened through the directory with `O_NOFOLLOW` and `O_NONBLOCK`,
/// and must be a regular file owned by the current user (or, in group mode, by the
/// group). The directory does not belong to these files: its owner closes it.
struct SuiteFiles {
    let suite: String
    let directory: DirectoryHandle
    let sharing: Suite.Sharing
    // Names and paths are made once: commits use them (in messages) every time.
    let dataName: String
    let lockName: String
    let dataPath: String
    let lockPath: String
    /// What the data files written for this suite carry in their header, and what a
    /// data file found under its name must carry (or 0, as files of earlier versions).
    let suiteTag: UInt32

    /// Use `dataFileName(of:)` and `suiteName(ofDataFile:)` rather than this.
    private static let dataSuffix = ".suite"
    private static let lockSuffix = ".suite.lock"

    init(suite: String, directory: DirectoryHandle, sharing: Suite.Sharing) {
        self.suite = suite
        self.directory = directory
        self.sharing = sharing
        dataName = Self.dataFileName(of: suite)
        lockName = Self.lockFileName(of: suite)
        dataPath = directory.pathOf(dataName)
        lockPath = directory.pathOf(lockName)
        suiteTag = DataFileHeader.suiteTag(ofDataFileNamed: dataName)
    }

    // MARK: Names

    /// The name of a suite's data file: `NAME.suite`.
    static func dataFileName(of suite: String) -> String { suite + dataSuffix }

    /// The name of a suite's lock file: `NAME.suite.lock`.
    static func lockFileName(of suite: String) -> String { suite + lockSuffix }

    /// The suite whose data file is named `fileName`: NAME for `NAME.suite`; nil for
    /// a name that is no data file's (a lock file, a temporary or history file, a
    /// damaged copy). NAME is not checked to be a valid suite name.
    static func suiteName(ofDataFile fileName: String) -> String? {
        var fileName = fileName
        return fileName.withUTF8 { bytes in suiteName(ofDataFile: bytes).map { String(decoding: $0, as: UTF8.self) } }
    }

    /// `suiteName(ofDataFile:)` in bytes, without making strings: the part of
    /// `fileName` that is the suite's name.
    static func suiteName(ofDataFile fileName: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8>? {
        // By bytes, as the file name was made: a name may end in a character that
        // `.` joins in one grapheme (U+0600 is one), which `hasSuffix` would miss.
        let suffix = dataSuffixBytes
        guard fileName.count > suffix.count, fileName.suffix(suffix.count).elementsEqual(suffix) else { return nil }
        return UnsafeBufferPointer(rebasing: fileName.dropLast(suffix.count))
    }

    private static let dataSuffixBytes = Array(dataSuffix.utf8)

    var temporaryPrefix: String { dataName + ".tmp." }
    var historyPrefix: String { dataName + ".h." }
    var filePermissions: FilePermissions { sharing == .group ? .ownerGroupReadWrite : .ownerReadWrite }

    /// The `SuiteError` for a failure while doing `action` to this suite's files.
    func error(_ failure: any Error, doing action: String) -> SuiteError {
        SuiteError(failure, suite: suite, doing: action)
    }

    // MARK: The directory

    /// Opens the suite directory, creating it (and missing parents) when absent and
    /// `creating`.
    static func openDirectory(path: String, sharing: Suite.Sharing, suite: String?, creating: Bool = true) throws -> DirectoryHandle {
        if creating { try createDirectory(path: path, sharing: sharing, suite: suite) }
        let directory: DirectoryHandle
        do {
            directory = try DirectoryHandle.open(path: path)
        } catch {
            throw SuiteError(error, suite: suite, doing: "open the suite directory")
        }
        do {
            try checkDirectory(directory.status, path: path, sharing: sharing, suite: suite)
        } catch {
            throw SuiteError(error, suite: suite, doing: "inspect the suite directory")
        }
        return directory
    }

    private static func createDirectory(path: String, sharing: Suite.Sharing, suite: String?) throws {
        if (try? FileStatus.of(path: path, followingLinks: true)) != nil { return }
        let permissions: FilePermissions = sharing == .group
            ? [.ownerGroupReadWriteExecute, .setGroupID] : .ownerReadWriteExecute
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            do {
                try DirectoryHandle.create(path: prefix, permissions: permissions)
                // mkdir applies the umask; group mode needs its group bits.
                if sharing == .group { try? DirectoryHandle.setPermissions(ofPath: prefix, permissions) }
            } catch let failure as SystemCallError where failure.code == .fileExists {
                continue
            } catch {
                throw SuiteError(error, suite: suite, doing: "create the suite directory")
            }
        }
    }

    private static func checkDirectory(_ status: FileStatus, path: String, sharing: Suite.Sharing, suite: String?) throws {
        guard status.isDirectory else {
            throw SuiteError(.notFound, suite: suite, path: path, message: "The suite directory is not a directory.")
        }
        if !isOurs(status, sharing: sharing) {
            throw SuiteError(.foreignOwner, suite: suite, path: path,
                             message: "The suite directory belongs to user \(status.owner), not to this user (\(ProcessIdentity.effectiveUserID)); another user could replace its files. Use a directory of your own\(sharing == .group ? " or of your group" : "").")
        }
        let permissions = status.filePermissions
        if permissions.contains(.otherWrite) && !permissions.contains(.sticky) {
            throw SuiteError(.foreignOwner, suite: suite, path: path,
                             message: "Every user may write to the suite directory (mode \(String(status.permissions, radix: 8))), so any of them could replace its files. Remove the write permission for others (chmod o-w).")
        }
        if sharing == .private && permissions.contains(.groupWrite) && !permissions.contains(.sticky) {
            throw SuiteError(.foreignOwner, suite: suite, path: path,
                             message: "The members of the directory's group may write to the suite directory (mode \(String(status.permissions, radix: 8))), so they could replace or delete a private suite's files. Remove the group's write permission (chmod g-w), or open the suite with group sharing.")
        }
    }

    /// Whether a file or directory is the current user's, or in group mode the group's.
    static func isOurs(_ status: FileStatus, sharing: Suite.Sharing) -> Bool {
        if status.owner == ProcessIdentity.effectiveUserID { return true }
        guard sharing == .group else { return false }
        return ProcessIdentity.groupIDs().contains(status.group)
    }

    // MARK: Files

    /// Checks that an open file is a regular file belonging to us.
    func checkFile(_ descriptor: FileDescriptor, name: String) throws -> FileStatus {
        let path = directory.pathOf(name)
        let status: FileStatus
        do {
            status = try descriptor.status(path: path)
        } catch {
            throw self.error(error, doing: "inspect a suite file")
        }
        guard status.isRegularFile else { throw Self.refusal(of: status, suite: suite, path: path) }
        guard Self.isOurs(status, sharing: sharing) else {
            throw SuiteError(.foreignOwner, suite: suite, path: path,
                             message: "The file belongs to user \(status.owner), not to this user (\(ProcessIdentity.effectiveUserID)); suites refuse files of other users. Remove it, or use group sharing.")
        }
        return status
    }

    /// The error for what stands where a suite file should be but is not a regular
    /// file: suites never follow a symbolic link, and never read a directory, device,
    /// socket or FIFO (opening a FIFO to read would wait for a writer).
    static func refusal(of status: FileStatus, suite: String, path: String) -> SuiteError {
        if status.isSymbolicLink {
            return SuiteError(.symbolicLink, suite: suite, path: path,
                              message: "A symbolic link stands where a suite file should be; suites never follow links. Remove it or move it away.")
        }
        return SuiteError(.foreignFile, suite: suite, path: path,
                          message: "A suite file is expected here but this is \(status.kindDescription), not a regular file; move it away.")
    }

    func open(
        _ name: String, _ access: FileDescriptor.AccessMode, options: FileDescriptor.OpenOptions = [],
        permissions: FilePermissions = []
    ) throws -> FileDescriptor {
        try directory.openFile(name, access, options: options, permissions: permissions)
    }

    /// The lock file as this process may use it.
    struct OpenLockFile {
        var descriptor: FileDescriptor
        var writable: Bool
        /// Its size once opened (and, when writable, allocated).
        var size: Int
    }

    /// Opens the lock file, creating it and allocating its first page; read-only if
    /// the directory or file allows no more; nil when this process can open none (a
    /// read-only directory without one, or a lock file it may not read), and reads
    /// the suite without locks. Refuses a symbolic link, a file that is not a regular
    /// file, a file with more than one name, a file of another user, or, to write, a
    /// suite file.
    func openLockFile() throws -> OpenLockFile? {
        let descriptor: FileDescriptor, writable: Bool
        do {
            (descriptor, writable) = (try open(lockName, .readWrite, options: .create, permissions: filePermissions), true)
        } catch let failure as SystemCallError
            where failure.failed(with: .permissionDenied, .notPermitted, .readOnlyFileSystem)
        {
            do {
                (descriptor, writable) = (try open(lockName, .readOnly), false)
            } catch let second as SystemCallError
                where second.failed(with: .noSuchFileOrDirectory, .permissionDenied, .notPermitted)
            {
                return nil
            } catch {
                throw self.error(error, doing: "open the suite's lock file")
            }
        } catch {
            throw self.error(error, doing: "open the suite's lock file")
        }
        do {
            let status = try checkFile(descriptor, name: lockName)
            guard status.linkCount <= 1 else {
                throw SuiteError(.foreignFile, suite: suite, path: lockPath,
                                 message: "The lock file has \(status.linkCount) names (hard links), so another name could reach the suite's shared state; suites refuse such a file. Remove the other names, or remove the lock file (it is made again).")
            }
            guard writable else { return OpenLockFile(descriptor: descriptor, writable: false, size: status.size) }
            // A suite file under the lock file's name (the two exchanged, or one copied
            // there) would have its first page taken for a header not set up yet, and
            // overwritten with one: the suite's own bytes.
            if status.size >= DataFileHeader.magic.count {
                let start: [UInt8]
                do {
                    start = try descriptor.read(count: DataFileHeader.magic.count, at: 0, path: lockPath)
                } catch {
                    throw self.error(error, doing: "read the suite's lock file")
                }
                guard start != DataFileHeader.magic else {
                    throw SuiteError(.foreignFile, suite: suite, path: lockPath,
                                     message: "A suite file stands where the suite's lock file should be (the two files exchanged, or a suite file copied there); it was left untouched. Move it back to \(dataName) if it is this suite's, or move it away.")
                }
            }
            if status.size == 0 && status.owner == ProcessIdentity.effectiveUserID {
                try? descriptor.setPermissions(filePermissions)
            }
            // Real blocks for the shared page: a sparse page touched through the
            // mapping on a full disk would raise SIGBUS instead of an error. (A page
            // whose blocks are there needs no call, which costs a new process more
            // than the rest of opening the file.)
            if status.size < SharedHeader.size || status.allocatedBytes < SharedHeader.size {
                do {
                    try descriptor.allocate(length: SharedHeader.size, path: lockPath)
                } catch {
                    throw self.error(error, doing: "set up the suite's lock file")
                }
            }
            return OpenLockFile(descriptor: descriptor, writable: true, size: max(status.size, SharedHeader.size))
        } catch {
            descriptor.close()
            throw error
        }
    }

    /// What a name of the suite's directory leads to, beside a file open as a suite file.
    enum NameTarget {
        /// The open file itself (the same device and inode).
        case thisFile
        /// Another regular file: the open one was replaced, say by a copy renamed over it.
        case anotherFile
        /// Nothing: the open file was deleted or renamed away.
        case nothing
        /// Something that is not a regular file, which no process opens as a suite file.
        case notAFile
    }

    /// What `name` in the suite's directory leads to, beside the open file of `status`:
    /// one `fstatat`.
    func target(of name: String, beside status: FileStatus) throws -> NameTarget {
        guard let named = try directory.status(of: name) else { return .nothing }
        if named.isSameFile(as: status) { return .thisFile }
        return named.isRegularFile ? .anotherFile : .notAFile
    }

    /// Opens the data file, with its status as checked; nil when it does not exist.
    func openDataFile(writable: Bool) throws -> (descriptor: FileDescriptor, status: FileStatus)? {
        let descriptor: FileDescriptor
        do {
            descriptor = try open(dataName, writable ? .readWrite : .readOnly)
        } catch let failure as SystemCallError where failure.code == .noSuchFileOrDirectory {
            return nil
        } catch let failure as SystemCallError
            where failure.failed(with: .isDirectory, .noSuchAddressOrDevice, .operationNotSupportedByDevice, .notSupported)
        {
            // A directory or a socket where the file should be: say what stands there.
            if let status = try? directory.status(of: dataName), !status.isRegularFile {
                throw Self.refusal(of: status, suite: suite, path: dataPath)
            }
            throw self.error(failure, doing: "open the suite file")
        } catch {
            throw self.error(error, doing: "open the suite file")
        }
        do {
            let status = try checkFile(descriptor, name: dataName)
            try checkSuiteTag(descriptor, size: status.size)
            return (descriptor, status)
        } catch {
            descriptor.close()
            throw error
        }
    }

    /// Refuses a data file written for another suite: one given this suite's name (the
    /// two suites' files exchanged, or one renamed or linked over the other) would be
    /// written by both suites' writers, each under its own lock, and their records
    /// would overwrite each other's. A header that does not verify is left to the
    /// reading, which repairs damage.
    private func checkSuiteTag(_ descriptor: FileDescriptor, size: Int) throws {
        guard size >= DataFileHeader.size else { return }
        let header: [UInt8]
        do {
            header = try descriptor.read(count: DataFileHeader.size, at: 0, path: dataPath)
        } catch {
            throw self.error(error, doing: "read the suite file's header")
        }
        guard isAnotherSuites(header: header) else { return }
        throw SuiteError(.foreignFile, suite: suite, path: dataPath,
                         message: "The suite file was written for another suite (another suite's file was given this name: the two exchanged, or one renamed or linked over the other); it was left untouched. Move it back under its own suite's name, or move it away.")
    }

    /// Writes a complete new data file under a temporary name: the header, and the
    /// snapshot record when there is one. The caller renames or links it into place.
    /// Writes a new data file under a temporary name: the header, then `snapshot`.
    /// It is format version 2 when the snapshot needs it or `version2` asks, else 1
    /// (readable by older libraries).
    func writeNewDataFile(snapshot: Record?, durable: Bool, version2: Bool = false) throws -> NewDataFile {
        let name = temporaryPrefix + "\(ProcessIdentity.id).\(String(UInt32.random(in: 0 ... .max), radix: 16))"
        let descriptor: FileDescriptor
        do {
            descriptor = try open(name, .readWrite, options: .exclusiveCreate, permissions: filePermissions)
        } catch {
            throw self.error(error, doing: "create a new suite file")
        }
        let fileID = UInt64.random(in: 1 ... .max)
        let version: UInt16 = version2 || snapshot?.needsVersion2 == true ? 2 : 1
        var bytes = DataFileHeader.encode(fileID: fileID, version: version, suiteTag: suiteTag)
        if let snapshot { bytes += RecordFormat.encode(snapshot) }
        do {
            if sharing == .group { try descriptor.setPermissions(filePermissions) }
            try bytes.withUnsafeBytes { raw in
                try descriptor.write(raw, at: 0, path: directory.pathOf(name))
            }
            if durable { try descriptor.synchronizeData(path: directory.pathOf(name)) }
        } catch {
            descriptor.close()
            try? directory.removeFile(name)
            throw self.error(error, doing: "write a new suite file")
        }
        return NewDataFile(descriptor: descriptor, temporaryName: name, fileID: fileID, length: bytes.count, version: version)
    }

    struct NewDataFile {
        var descriptor: FileDescriptor
        var temporaryName: String
        var fileID: UInt64
        var length: Int
        var version: UInt16
    }

    /// The names for keeping a damaged data file aside, to try in turn until one is
    /// free: `NAME.suite.damaged-STAMP-PID-N`, within the 255-byte limit on file
    /// names (a long suite name is shortened in the kept copy's name; the diagnostic
    /// gives the whole path).
    func damagedNames(at seconds: Int) -> some Sequence<String> {
        let suffix = ".damaged-" + Self.stamp(seconds) + "-\(ProcessIdentity.id)-"
        return (1...).lazy.map { attempt in
            let tail = suffix + String(attempt)
            let room = Self.maximumFileNameBytes - tail.utf8.count - Self.dataSuffix.utf8.count
            return Self.prefix(of: suite, bytes: room) + Self.dataSuffix + tail
        }
    }

    static let maximumFileNameBytes = 255

    /// The longest prefix of `text` in at most `bytes` UTF-8 bytes, cut between scalars.
    static func prefix(of text: String, bytes: Int) -> String {
        if text.utf8.count <= bytes { return text }
        var result = String.UnicodeScalarView()
        var used = 0
        for scalar in text.unicodeScalars {
            let size = String(scalar).utf8.count
            if used + size > bytes { break }
            result.append(scalar)
            used += size
        }
        return String(result)
    }

    /// "20261122T101500Z", UTC.
    static func stamp(_ seconds: Int) -> String {
        let parts = UTCCalendar.fields(ofUnixSeconds: Int64(seconds))
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.year)\(two(parts.month))\(two(parts.day))T\(two(parts.hour))\(two(parts.minute))\(two(parts.second))Z"
    }

    /// The name of a replaced journal kept as history: its last sequence number in 16
    /// hex digits, so that names sort by age and fit beside the longest suite name.
    func historyName(endingAt sequence: UInt64) -> String {
        let digits = String(sequence, radix: 16)
        return historyPrefix + String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// The history files in the directory, by the last sequence number each holds.
    func historyFiles() -> [(name: String, lastSequence: UInt64)] {
        guard let names = try? directory.names() else { return [] }
        return names.compactMap { name in
            guard name.hasPrefix(historyPrefix) else { return nil }
            let digits = name.utf8.dropFirst(historyPrefix.utf8.count)
            guard digits.count == 16, let sequence = UInt64(String(decoding: digits, as: UTF8.self), radix: 16) else { return nil }
            return (name, sequence)
        }.sorted { $0.lastSequence < $1.lastSequence }
    }

    /// Removes temporary files that a process killed during a compaction left behind.
    /// Only called under the exclusive lock, when no compaction can be in progress.
    func removeStaleTemporaryFiles() {
        guard let names = try? directory.names() else { return }
        for name in names where isTemporaryFile(name) && !holdsAnotherSuitesFile(name) {
            try? directory.removeFile(name)
        }
    }

    /// Whether the file `name` carries another suite's tag: a compaction whose undoing
    /// failed, or was cut short, can leave another suite's file under a temporary name,
    /// which is not this suite's to remove.
    private func holdsAnotherSuitesFile(_ name: String) -> Bool {
        guard let descriptor = try? open(name, .readOnly) else { return false }
        defer { descriptor.close() }
        guard let header = try? descriptor.read(count: DataFileHeader.size, at: 0) else { return false }
        return isAnotherSuites(header: header)
    }

    /// Whether `header`, the first bytes of a data file, verifies and carries another
    /// suite's tag (neither 0, any suite's, nor this suite's).
    func isAnotherSuites(header: [UInt8]) -> Bool {
        header.withUnsafeBytes { buffer in
            guard case .valid = DataFileHeader.decode(buffer) else { return false }
            let tag = DataFileHeader.suiteTag(in: buffer)
            return tag != 0 && tag != suiteTag
        }
    }

    /// Whether `name` in the suite's directory leads to `file` now (one `fstatat`);
    /// false when it leads nowhere or cannot be looked at.
    func name(_ name: String, leadsTo file: FileStatus) -> Bool {
        (try? directory.status(of: name))??.isSameFile(as: file) == true
    }

    /// Removes the name `name` only while it leads to `file` (by device and inode): a
    /// name given to another file meanwhile is not this suite's to remove.
    func removeName(_ name: String, leadingTo file: FileStatus) {
        guard self.name(name, leadsTo: file) else { return }
        try? directory.removeFile(name)
    }

    /// Whether `name` is one of this suite's temporary files, `NAME.suite.tmp.PID.HEX`
    /// exactly: a prefix alone is not enough, since the files of the suite
    /// "NAME.suite.tmp.x" start with `NAME.suite.tmp.` too.
    func isTemporaryFile(_ name: String) -> Bool {
        guard name.hasPrefix(temporaryPrefix) else { return false }
        let parts = name.dropFirst(temporaryPrefix.count).split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 2 && !parts[0].isEmpty && parts[0].allSatisfy(\.isASCIIDigit)
            && !parts[1].isEmpty && parts[1].allSatisfy { $0.isASCII && $0.isHexDigit }
    }
}

private extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
