import Glibc

/// A thin wrapper over an open file descriptor. Closing is explicit: the owner of
/// the descriptor decides when it ends, as with `FileDescriptor` in swift-system.
struct FileDescriptor: Hashable, Sendable {
    let rawValue: CInt

    /// Opens `name` relative to `directory` (or the working directory when nil).
    static func open(
        _ name: String, in directory: FileDescriptor?, flags: CInt, mode: mode_t = 0, pathForErrors: String
    ) throws -> FileDescriptor {
        let fd = try retryingInterrupts("open", path: pathForErrors) {
            openat(directory?.rawValue ?? AT_FDCWD, name, flags | O_CLOEXEC, mode)
        }
        return FileDescriptor(rawValue: fd)
    }

    func close() {
        // Linux releases the descriptor even when close reports EINTR, so never retry.
        _ = Glibc.close(rawValue)
    }

    func status(path: String? = nil) throws -> FileStatus {
        var raw = stat()
        _ = try retryingInterrupts("fstat", path: path) { fstat(rawValue, &raw) }
        return FileStatus(raw)
    }

    /// Reads up to `buffer.count` bytes at `offset`; fewer only at the end of the file.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int, path: String? = nil)
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

    /// Writes all of `bytes` at `offset`, or throws; a short write is continued.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int, path: String? = nil) throws {
        var done = 0
        while done < bytes.count {
            let count = try retryingInterrupts("pwrite", path: path) {
                pwrite(rawValue, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
            }
            done += count
        }
    }

    func truncate(to length: Int, path: String? = nil) throws {
        _ = try retryingInterrupts("ftruncate", path: path) { ftruncate(rawValue, off_t(length)) }
    }

    /// `fdatasync`: the data and the metadata needed to read it back reach the disk.
    func synchronizeData(path: String? = nil) throws {
        _ = try retryingInterrupts("fdatasync", path: path) { fdatasync(rawValue) }
    }

    /// `fsync`, for directories, where a rename or a new name must reach the disk.
    func synchronize(path: String? = nil) throws {
        _ = try retryingInterrupts("fsync", path: path) { fsync(rawValue) }
    }

    func setPermissions(_ mode: mode_t, path: String? = nil) throws {
        _ = try retryingInterrupts("fchmod", path: path) { fchmod(rawValue, mode) }
    }

    enum LockKind {
        case shared, exclusive
        var operation: CInt { self == .shared ? LOCK_SH : LOCK_EX }
    }

    /// `flock`: blocks until the lock is granted. Locks belong to the open file
    /// description, so threads of one process need their own exclusion as well.
    func lock(_ kind: LockKind, path: String? = nil) throws {
        _ = try retryingInterrupts("flock", path: path) { flock(rawValue, kind.operation) }
    }

    func unlock() {
        _ = flock(rawValue, LOCK_UN)
    }
}
