import Glibc

/// What the engine needs to know of a failure's `errno`, so that no file outside
/// System/ compares errno values itself.
extension SystemCallError {
    /// The name to be made exists already (`EEXIST`).
    var isAlreadyExisting: Bool { errno == EEXIST }

    /// The file system makes no hard links (`EPERM` or `EOPNOTSUPP` from `link`).
    var isLinkingUnsupported: Bool { errno == EPERM || errno == EOPNOTSUPP }

    /// A failure as `link` reports a name that exists already.
    static func alreadyExisting(_ call: String, path: String) -> SystemCallError {
        SystemCallError(call: call, path: path, errno: EEXIST)
    }
}

extension FileDescriptor {
    /// `open` flags for reading only (`O_RDONLY`); the close-on-exec and other
    /// flags every open takes are added by the opener.
    static let readingOnly: CInt = O_RDONLY
}
