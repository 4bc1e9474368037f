/// The one error type of SuiteDefaults.
///
/// Every error says what went wrong (`code`), where (`suite`, `key`, `path`), the
/// operating system's reason where there is one (`errno`), and in `message` what to
/// do about it. An operation that throws has changed nothing that was stored.
public struct SuiteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this is.
    public enum Code: String, Sendable, Equatable, CaseIterable {
        /// The suite name is empty, too long, or contains `/`, `..`, NUL or a control character.
        case invalidSuiteName
        /// The key is empty, too long, or contains NUL.
        case invalidKey
        /// The value cannot be stored: a NaN or infinite number, or nesting that is too deep.
        case invalidValue
        /// The encoded value is larger than `Suite.Options.maximumValueSize`.
        case valueTooLarge
        /// The write would make the suite larger than `Suite.Options.maximumSuiteSize`.
        case suiteTooLarge
        /// The stored value is not of the type asked for, or does not decode as it.
        case typeMismatch
        /// The value could not be encoded (an `Encodable` threw).
        case encodingFailed
        /// The suite file is not a suite file (another format), or not this suite's (it
        /// was written for another suite, whose file was given this suite's name), or a
        /// suite file stands where something else should be; it is left untouched.
        case foreignFile
        /// The suite file was written by a newer, incompatible version of this library.
        case unsupportedVersion
        /// The suite file is damaged in a way that could not be repaired.
        case corruptFile
        /// A symbolic link stands where a suite file or its lock should be.
        case symbolicLink
        /// The directory or a suite file belongs to another user, or others may write to it.
        case foreignOwner
        /// The operating system refused access (EACCES, EPERM).
        case permissionDenied
        /// The file system is mounted read-only, or the suite was opened read-only.
        case readOnly
        /// The disk or quota is full, or the file size limit was reached.
        case noSpace
        /// The suite, or the directory, does not exist.
        case notFound
        /// Another process held the suite's lock for longer than
        /// `Suite.Options.lockTimeout` (it may be stopped); `lockHolder` names it.
        case lockTimeout
        /// Any other input/output failure.
        case ioFailure
    }

    /// What kind of failure this is.
    public var code: Code
    /// The suite's name, where the failure concerns one suite.
    public var suite: String?
    /// The key, where the failure concerns one key.
    public var key: String?
    /// The file or directory involved, where there is one.
    public var path: String?
    /// The `errno` the failing system call set, where one failed.
    public var errno: Int32?
    /// For `.lockTimeout`: the process that held the lock, as `/proc/locks` showed it.
    public var lockHolder: Int32?
    /// What happened and what to do about it, in a sentence or two.
    public var message: String

    /// Creates an error. Mostly for the library itself and for tests.
    public init(
        _ code: Code, suite: String? = nil, key: String? = nil, path: String? = nil,
        errno: Int32? = nil, lockHolder: Int32? = nil, message: String
    ) {
        self.code = code
        self.suite = suite
        self.key = key
        self.path = path
        self.errno = errno
        self.lockHolder = lockHolder
        self.message = message
    }

    /// The operating system's text for `errno`, if any.
    public var systemReason: String? {
        errno.map { Errno(rawValue: $0).systemReason }
    }

    public var description: String {
        var text = "SuiteError.\(code.rawValue)"
        if let suite { text += " [suite \(suite)]" }
        if let key { text += " [key \(key)]" }
        if let path { text += " [\(path)]" }
        if let systemReason { text += " (\(systemReason))" }
        return text + ": " + message
    }
}

extension SuiteError {
    /// Turns any failure into a `SuiteError`: a `SuiteError` stays as it is, a failed
    /// system call gets the code and advice its `errno` calls for.
    init(_ failure: any Error, suite: String?, doing action: String) {
        if let error = failure as? SuiteError {
            self = error
        } else if let failure = failure as? SystemCallError {
            self.init(failure, suite: suite, doing: action)
        } else {
            self.init(.ioFailure, suite: suite, message: "Could not \(action): \(failure).")
        }
    }

    /// Turns a failed system call into the error a user can act on.
    init(_ failure: SystemCallError, suite: String?, doing action: String) {
        let code: Code
        let advice: String
        switch failure.code {
        case .noSpace, .diskQuotaExceeded, .fileTooLarge:
            code = .noSpace
            advice = "The disk, quota or file size limit is full; free some space and try again. Nothing stored was lost."
        case .permissionDenied, .notPermitted:
            code = .permissionDenied
            advice = "Check the permissions of the suite directory and its files (the store needs to read and write them)."
        case .readOnlyFileSystem:
            code = .readOnly
            advice = "The file system is mounted read-only; use a writable directory."
        case .tooManySymbolicLinkLevels:
            code = .symbolicLink
            advice = "A symbolic link stands where a suite file should be; remove it (suites never follow links)."
        case .noSuchFileOrDirectory, .notDirectory:
            code = .notFound
            advice = "The path does not exist."
        default:
            code = .ioFailure
            advice = "Input/output failed; check the disk and the file system."
        }
        self.init(code, suite: suite, path: failure.path, errno: failure.errno,
                  message: "Could not \(action): \(failure.description). \(advice)")
    }
}

extension SuiteError {
    /// An observation refused because `thread`, which would serve it, could not be
    /// started.
    static func threadNotStarted(_ thread: String, suite: String?, path: String? = nil, errno: Int32? = nil) -> SuiteError {
        SuiteError(.ioFailure, suite: suite, path: path, errno: errno,
                   message: "Could not start \(thread) (pthread_create failed: the process's limit of threads, or no memory for a stack); nothing is observed.")
    }
}
