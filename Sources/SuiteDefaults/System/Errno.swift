import Glibc

/// An `errno` value, by name, as `Errno` in swift-system: so that code outside
/// System/ tells failures apart without importing Glibc.
package struct Errno: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    package let rawValue: CInt

    package init(rawValue: CInt) { self.rawValue = rawValue }

    static let notPermitted = Errno(rawValue: EPERM)
    package static let noSuchFileOrDirectory = Errno(rawValue: ENOENT)
    static let interrupted = Errno(rawValue: EINTR)
    static let noSuchAddressOrDevice = Errno(rawValue: ENXIO)
    static let permissionDenied = Errno(rawValue: EACCES)
    static let fileExists = Errno(rawValue: EEXIST)
    static let operationNotSupportedByDevice = Errno(rawValue: ENODEV)
    static let notDirectory = Errno(rawValue: ENOTDIR)
    static let isDirectory = Errno(rawValue: EISDIR)
    static let fileTooLarge = Errno(rawValue: EFBIG)
    static let noSpace = Errno(rawValue: ENOSPC)
    static let readOnlyFileSystem = Errno(rawValue: EROFS)
    package static let tooManySymbolicLinkLevels = Errno(rawValue: ELOOP)
    /// `EOPNOTSUPP` (the same number as `ENOTSUP` on Linux).
    static let notSupported = Errno(rawValue: EOPNOTSUPP)
    static let diskQuotaExceeded = Errno(rawValue: EDQUOT)
    static let invalidArgument = Errno(rawValue: EINVAL)
    static let notImplemented = Errno(rawValue: ENOSYS)

    /// The operating system's text for it (`strerror`).
    package var systemReason: String { String(cString: strerror(rawValue)) }

    package var description: String { systemReason }
}

extension SystemCallError {
    /// A failure the caller found itself, as the call would have reported it.
    init(call: String, path: String? = nil, code: Errno) {
        self.init(call: call, path: path, errno: code.rawValue)
    }

    /// `errno`, by name.
    package var code: Errno { Errno(rawValue: errno) }

    /// Whether the call failed with one of `codes`.
    func failed(with codes: Errno...) -> Bool { codes.contains(code) }
}
