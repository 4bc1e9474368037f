import CSuiteDefaults
import Glibc

/// The parts of `struct stat` the store looks at.
package struct FileStatus: Equatable, Sendable {
    package var device: UInt64
    package var inode: UInt64
    var mode: UInt32
    var owner: UInt32
    var group: UInt32
    package var size: Int
    var linkCount: Int
    /// The disk space allocated to the file (st_blocks are 512-byte units).
    var allocatedBytes: Int

    init(_ raw: sd_file_status) {
        device = raw.device
        inode = raw.inode
        mode = raw.mode
        owner = raw.owner
        group = raw.group
        size = Int(raw.size)
        linkCount = Int(clamping: raw.link_count)
        allocatedBytes = Int(raw.blocks) * 512
    }

    /// `fstatat(directory, path, flags)`. Every status call of the library comes here,
    /// to `sd_read_file_status`, which asks for these fields and never the file's
    /// times: on Linux 6.13 and later, a status call that reports them makes the next
    /// write to the file update them at once, and a commit checks its data file just
    /// before it appends to it.
    static func read(directory: CInt, path: String, flags: CInt, call: String, pathForErrors: String?) throws -> FileStatus {
        var raw = sd_file_status()
        _ = try retryingInterrupts(call, path: pathForErrors) { sd_read_file_status(directory, path, flags, &raw) }
        return FileStatus(raw)
    }

    /// `read(directory:path:flags:call:pathForErrors:)` of an open descriptor: fstat.
    static func read(descriptor: CInt, pathForErrors: String?) throws -> FileStatus {
        var raw = sd_file_status()
        _ = try retryingInterrupts("fstat", path: pathForErrors) { sd_read_descriptor_status(descriptor, &raw) }
        return FileStatus(raw)
    }

    /// Whether `other` is the status of the same file (device and inode).
    package func isSameFile(as other: FileStatus) -> Bool { device == other.device && inode == other.inode }

    package var isRegularFile: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFREG) }
    var isDirectory: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFDIR) }
    var isSymbolicLink: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFLNK) }
    var permissions: UInt32 { mode & 0o7777 }

    /// What kind of file this is, in words for messages: "a directory", "a FIFO ...".
    var kindDescription: String {
        switch mode & UInt32(S_IFMT) {
        case UInt32(S_IFREG): "a regular file"
        case UInt32(S_IFDIR): "a directory"
        case UInt32(S_IFLNK): "a symbolic link"
        case UInt32(S_IFIFO): "a FIFO (named pipe)"
        case UInt32(S_IFSOCK): "a socket"
        case UInt32(S_IFCHR): "a character device"
        case UInt32(S_IFBLK): "a block device"
        default: "a file of unknown type"
        }
    }
}
