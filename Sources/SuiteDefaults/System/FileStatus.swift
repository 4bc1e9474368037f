import Glibc

/// The parts of `struct stat` the store looks at.
struct FileStatus: Equatable, Sendable {
    var device: UInt64
    var inode: UInt64
    var mode: UInt32
    var owner: UInt32
    var group: UInt32
    var size: Int
    var linkCount: Int
    /// The disk space allocated to the file (st_blocks are 512-byte units).
    var allocatedBytes: Int

    init(_ raw: stat) {
        device = UInt64(raw.st_dev)
        inode = UInt64(raw.st_ino)
        mode = UInt32(raw.st_mode)
        owner = UInt32(raw.st_uid)
        group = UInt32(raw.st_gid)
        size = Int(raw.st_size)
        linkCount = Int(raw.st_nlink)
        allocatedBytes = Int(raw.st_blocks) * 512
    }

    var isRegularFile: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFREG) }
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
