import Glibc

/// The permission bits of a file's mode, as `FilePermissions` in swift-system.
struct FilePermissions: OptionSet, Hashable, Sendable {
    let rawValue: mode_t

    init(rawValue: mode_t) { self.rawValue = rawValue }

    static let groupWrite = FilePermissions(rawValue: mode_t(S_IWGRP))
    static let otherWrite = FilePermissions(rawValue: mode_t(S_IWOTH))
    /// Set-group-ID: in a directory, new files take the directory's group.
    static let setGroupID = FilePermissions(rawValue: mode_t(S_ISGID))
    /// The sticky bit: in a directory, only a file's owner may remove or rename it.
    static let sticky = FilePermissions(rawValue: mode_t(S_ISVTX))

    /// rw------- (0600)
    static let ownerReadWrite = FilePermissions(rawValue: 0o600)
    /// rw-rw---- (0660)
    static let ownerGroupReadWrite = FilePermissions(rawValue: 0o660)
    /// rwx------ (0700)
    static let ownerReadWriteExecute = FilePermissions(rawValue: 0o700)
    /// rwxrwx--- (0770)
    static let ownerGroupReadWriteExecute = FilePermissions(rawValue: 0o770)
}

extension FileStatus {
    /// `permissions` as a set of bits.
    var filePermissions: FilePermissions { FilePermissions(rawValue: mode_t(permissions)) }
}

extension FileDescriptor {
    /// How a file is opened for access (swift-system's `AccessMode`).
    struct AccessMode: RawRepresentable, Hashable, Sendable {
        let rawValue: CInt
        init(rawValue: CInt) { self.rawValue = rawValue }

        static let readOnly = AccessMode(rawValue: O_RDONLY)
        static let readWrite = AccessMode(rawValue: O_RDWR)
    }

    /// Further `open` flags (swift-system's `OpenOptions`). `FileDescriptor.open`
    /// always adds `O_CLOEXEC | O_NONBLOCK | O_NOCTTY`.
    struct OpenOptions: OptionSet, Hashable, Sendable {
        let rawValue: CInt
        init(rawValue: CInt) { self.rawValue = rawValue }

        /// `O_CREAT`
        static let create = OpenOptions(rawValue: O_CREAT)
        /// `O_CREAT | O_EXCL`: fails with EEXIST when the name exists.
        static let exclusiveCreate = OpenOptions(rawValue: O_CREAT | O_EXCL)
    }

    /// Opens a file with no path in an error message other than `path`.
    static func open(
        _ path: String, _ access: AccessMode, options: OpenOptions = [], permissions: FilePermissions = []
    ) throws -> FileDescriptor {
        try open(path, in: nil, flags: access.rawValue | options.rawValue, mode: permissions.rawValue, pathForErrors: path)
    }

    func setPermissions(_ permissions: FilePermissions, path: String? = nil) throws {
        try setPermissions(permissions.rawValue, path: path)
    }
}

extension DirectoryHandle {
    /// Opens a file in this directory, refusing to follow a symbolic link.
    func openFile(
        _ name: String, _ access: FileDescriptor.AccessMode, options: FileDescriptor.OpenOptions = [],
        permissions: FilePermissions = []
    ) throws -> FileDescriptor {
        try openFile(name, flags: access.rawValue | options.rawValue, mode: permissions.rawValue)
    }
}
