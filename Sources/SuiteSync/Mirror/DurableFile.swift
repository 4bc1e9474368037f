import Foundation
import Glibc
@_spi(Tools) import SuiteDefaults

/// A mirror's state file, held open and locked for as long as the mirror runs, so
/// that no second mirror of the same suite, prefix and directory (another
/// `suite-sync`, or a `--once` beside a running one) shares it.
///
/// - **Opening** never blocks and never follows a link: `O_NOFOLLOW | O_NONBLOCK`, and
///   the file must be a regular file (a FIFO, a socket or a device put in its place
///   is refused, not waited on). Its size is checked before anything is read.
/// - **The lock** is `flock(LOCK_EX | LOCK_NB)` on the open file: a second mirror is
///   refused at once with a clear error, never made to wait. Since each replace (a
///   compaction of the state's log, `MirrorStateStore`) renames a new file over the
///   old one, the new file is locked before the rename, and an
///   opener that locked a file already renamed away (its inode is no longer the
///   path's) tries again.
/// - **Replacing** writes a temporary file (created afresh with `O_EXCL`, whatever was
///   left at its name removed first), syncs it, renames it over the old one and syncs
///   the directory, so that a process killed at any instant leaves either the old file
///   or the new one, never a torn one. The state's log is made the same way
///   (`writeNew`), unlocked: the state file's lock covers it.
final class DurableFile {
    struct Failure: Error, CustomStringConvertible {
        let action: String
        let path: String
        let code: Int32
        /// Says what happened instead of the system's text for `code`.
        var detail: String?

        init(action: String, path: String, code: Int32, detail: String? = nil) {
            self.action = action
            self.path = path
            self.code = code
            self.detail = detail
        }

        var description: String { "cannot \(action) \(path): \(detail ?? Errno(rawValue: code).systemReason)" }
    }

    let path: String
    let temporaryPath: String
    private var descriptor: FileDescriptor

    private init(path: String, temporaryPath: String, descriptor: FileDescriptor) {
        self.path = path
        self.temporaryPath = temporaryPath
        self.descriptor = descriptor
    }

    deinit {
        descriptor.close()
    }

    /// Opens the file at `path`, creating it empty when absent, and locks it. Returns
    /// it with its bytes: nil when it is empty (new, or created by a mirror killed
    /// before its first save). `temporaryPath` is where `replace` writes.
    static func openLocked(_ path: String, temporaryPath: String, limit: Int = 256 << 20) throws(Failure)
        -> (file: DurableFile, contents: Data?) {
        // A file renamed away between our open and our lock is opened again; each
        // round needs another mirror's save in between, so a few are plenty.
        for _ in 0..<100 {
            let descriptor = try openWithoutFollowing(path, O_RDWR | O_CREAT)
            let file = DurableFile(path: path, temporaryPath: temporaryPath, descriptor: descriptor)
            let status = try regularFileStatus(of: descriptor, path: path)
            guard try attempt("lock", path, { try descriptor.tryLock(.exclusive) }) else {
                throw Failure(action: "lock", path: path, code: EWOULDBLOCK,
                              detail: "another suite-sync mirrors this suite under this prefix from this directory")
            }
            guard (try? isAtItsPath(descriptor, path: path)) == true else {
                continue  // Replaced (or removed) before we locked it: lock what is there now.
            }
            let data = try readAll(descriptor, status: status, path: path, limit: limit, holding: "a sync state")
            return (file, data.isEmpty ? nil : data)
        }
        throw Failure(action: "lock", path: path, code: EAGAIN, detail: "it keeps being replaced by another process")
    }

    /// Checks, before a save, that the file at `path` is still the one locked here, and
    /// says so (true). When someone removed or replaced it, another mirror may have
    /// started since and locked the new one: then this one stops rather than share it.
    /// A file put there by hand and not locked is taken over (locked here, to be
    /// replaced); removed or taken over, it says false: only a whole `replace` mends it.
    func checkStillOurs() throws(Failure) -> Bool {
        switch try Self.isAtItsPath(descriptor, path: path) {
        case true?: return true
        case nil: return false  // Removed: the next replace makes it again.
        case false?: break
        }
        let other = try Self.openWithoutFollowing(path, O_RDONLY)
        let locked: Bool
        do throws(Failure) {
            locked = try Self.attempt("save", path, { try other.tryLock(.exclusive) })
        } catch {
            other.close()
            throw error
        }
        guard locked else {
            other.close()
            throw Failure(action: "save", path: path, code: EWOULDBLOCK,
                          detail: "it was replaced, and another suite-sync holds the new one; this one stops")
        }
        // Locked here until the rename replaces it; the old descriptor goes then.
        descriptor.close()
        descriptor = other
        return false
    }

    /// Replaces the file with `data`, owner-only (0600), and holds the lock on the new file.
    func replace(with data: Data) throws(Failure) {
        _ = try checkStillOurs()
        let created = try Self.writeNew(data, at: path, through: temporaryPath, locked: true)
        // The new file is the state now, and locked: the old one's lock may go.
        descriptor.close()
        descriptor = created
        try Self.syncDirectory(of: path)
    }

    /// Writes `data` to a file made afresh at `temporary` (owner-only), syncs it, locks it
    /// when `locked`, and renames it over `path`; returns its descriptor, open for writing.
    /// The caller syncs the directory (`syncDirectory(of:)`) before relying on the name.
    /// A process killed at any instant leaves the old file at `path` or the new one.
    static func writeNew(_ data: Data, at path: String, through temporary: String, locked: Bool) throws(Failure) -> FileDescriptor {
        // Whatever a killed mirror (or anyone) left at the temporary name goes first:
        // opening a FIFO there would block, a link would be refused.
        do {
            try DirectoryHandle.removeFile(atPath: temporary)
        } catch let failure as SystemCallError where failure.code == .noSuchFileOrDirectory {
        } catch {
            throw failure("remove", temporary, error)
        }
        let created = try attempt("create", temporary) {
            try FileDescriptor.open(temporary, in: nil, flags: O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o600,
                                    pathForErrors: temporary)
        }
        do throws(Failure) {
            try write(data, to: created, at: 0, path: temporary)
            try attempt("sync", temporary) { try created.synchronize(path: temporary) }
            // Nobody else opens the temporary name to lock it, so this never waits.
            if locked, try !attempt("lock", temporary, { try created.tryLock(.exclusive) }) {
                throw Failure(action: "lock", path: temporary, code: EWOULDBLOCK)
            }
            try attempt("rename into", path) { try DirectoryHandle.rename(atPath: temporary, to: path) }
        } catch {
            created.close()
            try? DirectoryHandle.removeFile(atPath: temporary)
            throw error
        }
        return created
    }

    /// Writes all of `data` at `offset` of `descriptor` (`path` names it in errors).
    static func write(_ data: Data, to descriptor: FileDescriptor, at offset: Int, path: String) throws(Failure) {
        try attempt("write", path) { try data.withUnsafeBytes { try descriptor.write($0, at: offset, path: path) } }
    }

    /// Opens `path` with `flags`, neither following a symbolic link nor blocking (on a
    /// FIFO), owner-only when it creates the file.
    static func openWithoutFollowing(_ path: String, _ flags: Int32) throws(Failure) -> FileDescriptor {
        do {
            return try FileDescriptor.open(path, in: nil, flags: flags | O_NOFOLLOW, mode: 0o600, pathForErrors: path)
        } catch let failure as SystemCallError where failure.code == .tooManySymbolicLinkLevels {
            throw Failure(action: "open", path: path, code: failure.errno, detail: "it is a symbolic link")
        } catch {
            throw Self.failure("open", path, error)
        }
    }

    /// The status of `descriptor`, which must be a regular file (not a FIFO, a socket or
    /// a device put at its name).
    static func regularFileStatus(of descriptor: FileDescriptor, path: String) throws(Failure) -> FileStatus {
        let status = try attempt("inspect", path) { try descriptor.status(path: path) }
        guard status.isRegularFile else {
            throw Failure(action: "use", path: path, code: EINVAL, detail: "it is not a regular file")
        }
        return status
    }

    /// Whether the file at `path` is the one open as `descriptor`: false when another
    /// file took its name, nil when nothing has it.
    static func isAtItsPath(_ descriptor: FileDescriptor, path: String) throws(Failure) -> Bool? {
        let mine = try attempt("inspect", path) { try descriptor.status(path: path) }
        let current: FileStatus
        do {
            current = try FileStatus.of(path: path, followingLinks: false)
        } catch let failure as SystemCallError where failure.code == .noSuchFileOrDirectory {
            return nil
        } catch {
            throw Self.failure("inspect", path, error)
        }
        return current.isSameFile(as: mine)
    }

    /// Syncs the directory holding `path`, so that a rename into it survives a crash.
    static func syncDirectory(of path: String) throws(Failure) {
        let directory = (path as NSString).deletingLastPathComponent
        let name = directory.isEmpty ? "." : directory
        let handle = try attempt("open", name) { try DirectoryHandle.open(path: name) }
        try attempt("sync", name) { try handle.synchronize() }
    }

    /// Reads all of `descriptor`, whose status is `status`, refusing a file of more than
    /// `limit` bytes by its size before reading (`what` it holds says why in the error),
    /// and one that grows past it while read.
    static func readAll(_ descriptor: FileDescriptor, status: FileStatus, path: String, limit: Int, holding what: String) throws(Failure) -> Data {
        guard status.size <= limit else {
            throw Failure(action: "read", path: path, code: EFBIG,
                          detail: "it holds \(status.size) bytes, more than \(what) ever needs (\(limit))")
        }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let offset = data.count
            let count = try attempt("read", path) { try buffer.withUnsafeMutableBytes { try descriptor.read(into: $0, at: offset, path: path) } }
            data.append(contentsOf: buffer[0..<count])
            if data.count > limit { throw Failure(action: "read", path: path, code: EFBIG, detail: "it grew past \(limit) bytes") }
            if count < buffer.count { return data }  // The end of the file.
        }
    }

    /// `body`'s result, its failure (a System/ call's) as doing `action` on `path`.
    static func attempt<Result>(_ action: String, _ path: String, _ body: () throws -> Result) throws(Failure) -> Result {
        do {
            return try body()
        } catch {
            throw failure(action, path, error)
        }
    }

    private static func failure(_ action: String, _ path: String, _ error: any Error) -> Failure {
        if let error = error as? Failure { return error }
        guard let error = error as? SystemCallError else { return Failure(action: action, path: path, code: EIO, detail: "\(error)") }
        return Failure(action: action, path: path, code: error.errno)
    }
}
