import Glibc

/// A thin wrapper over an open file descriptor. Closing is explicit: the owner of
/// the descriptor decides when it ends, as with `FileDescriptor` in swift-system.
package struct FileDescriptor: Hashable, Sendable {
    let rawValue: CInt

    /// Opens `name` relative to `directory` (or the working directory when nil).
    ///
    /// Always `O_CLOEXEC`, so no descriptor (and no lock on it) outlives the process
    /// in a program it starts; `O_NONBLOCK`, so a FIFO planted where a file should
    /// be is refused rather than waited on (it does nothing to regular files); and
    /// `O_NOCTTY`.
    package static func open(
        _ name: String, in directory: FileDescriptor?, flags: CInt, mode: mode_t = 0, pathForErrors: String
    ) throws -> FileDescriptor {
        let fd = try retryingInterrupts("open", path: pathForErrors) {
            openat(directory?.rawValue ?? AT_FDCWD, name, flags | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, mode)
        }
        return FileDescriptor(rawValue: fd)
    }

    package func close() {
        // Linux releases the descriptor even when close reports EINTR, so never retry.
        _ = Glibc.close(rawValue)
    }

    package func status(path: String? = nil) throws -> FileStatus {
        try FileStatus.read(descriptor: rawValue, pathForErrors: path)
    }

    /// The file's size, from `lseek` to its end: a cheaper call than a status, for a
    /// caller that needs nothing else. (It moves the file position, which nothing
    /// here reads or writes at: every read and write says its offset.)
    func endOffset(path: String? = nil) throws -> Int {
        Int(try retryingInterrupts("lseek", path: path) { lseek(rawValue, 0, SEEK_END) })
    }

    /// A path to exactly this descriptor's file, wherever it is now (for inotify).
    var procPath: String { "/proc/self/fd/\(rawValue)" }

    /// Reads up to `buffer.count` bytes at `offset`; fewer only at the end of the file.
    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int, path: String? = nil)
        throws -> Int
    {
        var done = 0
        while done < buffer.count {
            let count = try retryingInterrupts("pread", path: path) {
                pread(rawValue, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
            }
            if count == 0 { break }
            done += count
        }
        return done
    }

    /// Reads the bytes in `offset ..< offset + count`, fewer if the file ends first.
    func read(count: Int, at offset: Int, path: String? = nil) throws -> [UInt8] {
        guard count > 0 else { return [] }
        var failure: (any Error)?
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            do {
                initialized = try read(into: UnsafeMutableRawBufferPointer(buffer), at: offset, path: path)
            } catch {
                failure = error
                initialized = 0
            }
        }
        if let failure { throw failure }
        return bytes
    }

    /// Reads from the current position until the end, at most `limit` bytes: for
    /// files that have no size to ask for, such as those in /proc.
    func readToEnd(limit: Int, path: String? = nil) throws -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: min(limit, 16 << 10))
        while bytes.count < limit {
            let count = try chunk.withUnsafeMutableBytes { buffer in
                try retryingInterrupts("read", path: path) { Glibc.read(rawValue, buffer.baseAddress, min(buffer.count, limit - bytes.count)) }
            }
            if count == 0 { break }
            bytes += chunk.prefix(count)
        }
        return bytes
    }

    /// The process's file size limit (RLIMIT_FSIZE), read once. Writing past it
    /// would raise SIGXFSZ, which kills a process unless it ignores the signal, so a
    /// write that would is refused first with EFBIG, as if the signal were ignored.
    /// (A limit lowered later is not seen.)
    static let fileSizeLimit: Int = {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return .max }
        return Int(clamping: limit.rlim_cur)
    }()

    private func checkFileSizeLimit(_ end: Int, call: String, path: String?) throws {
        if end > Self.fileSizeLimit { throw SystemCallError(call: call, path: path, errno: EFBIG) }
    }

    /// Writes all of `bytes` at `offset`, or throws; a short write is continued.
    package func write(_ bytes: UnsafeRawBufferPointer, at offset: Int, path: String? = nil) throws {
        try checkFileSizeLimit(offset + bytes.count, call: "pwrite", path: path)
        var done = 0
        while done < bytes.count {
            let count = try retryingInterrupts("pwrite", path: path) {
                pwrite(rawValue, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
            }
            done += count
        }
    }

    /// Allocates disk space for the first `length` bytes, extending the file if it is
    /// shorter, so that writing them through a mapping cannot fail later (a sparse
    /// page touched on a full disk raises SIGBUS). Fails with ENOSPC when full.
    func allocate(length: Int, path: String? = nil) throws {
        try checkFileSizeLimit(length, call: "posix_fallocate", path: path)
        while true {
            let result = posix_fallocate(rawValue, 0, off_t(length))
            if result == 0 { return }
            if result != EINTR { throw SystemCallError(call: "posix_fallocate", path: path, errno: result) }
        }
    }

    func truncate(to length: Int, path: String? = nil) throws {
        _ = try retryingInterrupts("ftruncate", path: path) { ftruncate(rawValue, off_t(length)) }
    }

    /// `fdatasync`: the data and the metadata needed to read it back reach the disk.
    package func synchronizeData(path: String? = nil) throws {
        _ = try retryingInterrupts("fdatasync", path: path) { fdatasync(rawValue) }
    }

    /// `fsync`, for directories, where a rename or a new name must reach the disk.
    package func synchronize(path: String? = nil) throws {
        _ = try retryingInterrupts("fsync", path: path) { fsync(rawValue) }
    }

    func setPermissions(_ mode: mode_t, path: String? = nil) throws {
        _ = try retryingInterrupts("fchmod", path: path) { fchmod(rawValue, mode) }
    }

    package enum LockKind {
        case shared, exclusive
        var operation: CInt { self == .shared ? LOCK_SH : LOCK_EX }
    }

    /// `flock` without waiting: whether the lock was granted. Locks belong to the
    /// open file description, so threads of one process need their own exclusion as
    /// well, and a forked child must open the file again to have locks of its own.
    package func tryLock(_ kind: LockKind, path: String? = nil) throws -> Bool {
        while true {
            if flock(rawValue, kind.operation | LOCK_NB) == 0 { return true }
            switch errno {
            case EINTR: continue
            case EWOULDBLOCK: return false
            case let code: throw SystemCallError(call: "flock", path: path, errno: code)
            }
        }
    }

    func unlock() {
        _ = flock(rawValue, LOCK_UN)
    }
}
