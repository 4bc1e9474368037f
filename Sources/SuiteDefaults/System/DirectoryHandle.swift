import CSuiteDefaults
import Glibc

/// A directory, by device and inode: what one inotify watch covers.
struct DirectoryIdentity: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64
}

/// An open directory through which every file of a suite is reached with the `*at`
/// calls, so that a name can never lead out of it. Closed when the last owner lets
/// go of it (a store's state, and the state that replaces it after a fork).
package final class DirectoryHandle: Sendable {
    let descriptor: FileDescriptor
    /// The directory's path, as it was opened.
    let path: String
    /// Its status when it was opened.
    let status: FileStatus

    private init(descriptor: FileDescriptor, path: String, status: FileStatus) {
        self.descriptor = descriptor
        self.path = path
        self.status = status
    }

    package static func open(path: String) throws -> DirectoryHandle {
        let fd = try FileDescriptor.open(path, in: nil, flags: O_RDONLY | O_DIRECTORY, pathForErrors: path)
        do {
            return DirectoryHandle(descriptor: fd, path: path, status: try fd.status(path: path))
        } catch {
            fd.close()
            throw error
        }
    }

    var identity: DirectoryIdentity { DirectoryIdentity(device: status.device, inode: status.inode) }

    deinit { descriptor.close() }

    /// A path to exactly this directory, wherever it is now (for inotify).
    var procPath: String { descriptor.procPath }

    func pathOf(_ name: String) -> String {
        path.hasSuffix("/") ? path + name : path + "/" + name
    }

    /// Opens a file in this directory, refusing to follow a symbolic link.
    func openFile(_ name: String, flags: CInt, mode: mode_t = 0) throws -> FileDescriptor {
        try FileDescriptor.open(name, in: descriptor, flags: flags | O_NOFOLLOW, mode: mode, pathForErrors: pathOf(name))
    }

    /// `lstat` of a name in this directory; nil when it does not exist.
    func status(of name: String) throws -> FileStatus? {
        do {
            return try FileStatus.read(directory: descriptor.rawValue, path: name, flags: AT_SYMLINK_NOFOLLOW,
                                       call: "fstatat", pathForErrors: pathOf(name))
        } catch let failure as SystemCallError where failure.code == .noSuchFileOrDirectory {
            return nil
        }
    }

    /// Gives the file `from` a second name `to`; fails with EEXIST rather than replace.
    func link(_ from: String, to: String) throws {
        _ = try retryingInterrupts("linkat", path: pathOf(to)) {
            linkat(descriptor.rawValue, from, descriptor.rawValue, to, 0)
        }
    }

    /// Gives the file open as `file` a name `to` in this directory, whatever name leads
    /// to it now (`linkat` of /proc/self/fd/N with AT_SYMLINK_FOLLOW, which needs no
    /// privilege, unlike AT_EMPTY_PATH); fails with EEXIST rather than replace, and
    /// with ENOENT where /proc is not mounted or the file has no name left.
    func link(_ file: FileDescriptor, to: String) throws {
        _ = try retryingInterrupts("linkat", path: pathOf(to)) {
            linkat(AT_FDCWD, "/proc/self/fd/\(file.rawValue)", descriptor.rawValue, to, AT_SYMLINK_FOLLOW)
        }
    }

    /// Atomically replaces `to` with `from` (rename(2)).
    func rename(_ from: String, to: String) throws {
        _ = try retryingInterrupts("renameat", path: pathOf(to)) {
            renameat(descriptor.rawValue, from, descriptor.rawValue, to)
        }
    }

    /// Exchanges the names `first` and `second` atomically (renameat2(2),
    /// RENAME_EXCHANGE). Throws `.invalidArgument` or `.notImplemented` where the file
    /// system or kernel cannot.
    func exchange(_ first: String, with second: String) throws {
        _ = try retryingInterrupts("renameat2", path: pathOf(second)) {
            sd_exchange_names(descriptor.rawValue, first, second)
        }
    }

    func removeFile(_ name: String) throws {
        _ = try retryingInterrupts("unlinkat", path: pathOf(name)) { unlinkat(descriptor.rawValue, name, 0) }
    }

    package func synchronize() throws {
        try descriptor.synchronize(path: path)
    }

    /// The names in the directory, without "." and "..".
    func names() throws -> [String] {
        // fdopendir takes ownership of its descriptor, so give it one of its own: a
        // new open file description, since a duplicate would share its reading
        // position with every other thread, and after a fork with the parent.
        let own = try FileDescriptor.open(".", in: descriptor, flags: O_RDONLY | O_DIRECTORY, pathForErrors: path)
        guard let stream = fdopendir(own.rawValue) else {
            let code = errno
            own.close()
            throw SystemCallError(call: "fdopendir", path: path, errno: code)
        }
        defer { closedir(stream) }
        var result: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { String(cString: $0) }
            }
            if name != "." && name != ".." { result.append(name) }
        }
        return result
    }
}
