import Glibc

// The calls that take a path rather than a descriptor or a directory handle: for the
// few places that look at or make something before any directory is open.

extension FileStatus {
    /// The status of what `path` names: `stat`, or with `followingLinks: false`,
    /// `lstat` (a symbolic link's own status). Throws `SystemCallError` (ENOENT when
    /// there is nothing).
    package static func of(path: String, followingLinks: Bool) throws -> FileStatus {
        try FileStatus.read(directory: AT_FDCWD, path: path, flags: followingLinks ? 0 : AT_SYMLINK_NOFOLLOW,
                            call: followingLinks ? "stat" : "lstat", pathForErrors: path)
    }
}

extension DirectoryHandle {
    /// `mkdir`: creates one directory, with `permissions` less the umask. Throws
    /// `SystemCallError` (EEXIST when the name exists).
    static func create(path: String, permissions: FilePermissions) throws {
        _ = try retryingInterrupts("mkdir", path: path) { mkdir(path, permissions.rawValue) }
    }

    /// `chmod` of a path (it follows symbolic links): sets the bits exactly, umask
    /// aside.
    static func setPermissions(ofPath path: String, _ permissions: FilePermissions) throws {
        _ = try retryingInterrupts("chmod", path: path) { chmod(path, permissions.rawValue) }
    }

    /// `unlink` of a path (a symbolic link itself, not what it names). Throws
    /// `SystemCallError` (ENOENT when there is nothing).
    package static func removeFile(atPath path: String) throws {
        _ = try retryingInterrupts("unlink", path: path) { unlink(path) }
    }

    /// `rename` of a path over another, atomically replacing what `to` names.
    package static func rename(atPath from: String, to: String) throws {
        _ = try retryingInterrupts("rename", path: to) { Glibc.rename(from, to) }
    }
}
