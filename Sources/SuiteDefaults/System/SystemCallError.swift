import Glibc

/// A system call that failed: which call, on which path, and the `errno` it set.
///
/// This stays inside the module; the public surface turns it into a `SuiteError`
/// that says what the user can do about it.
package struct SystemCallError: Error, CustomStringConvertible {
    package var call: String
    package var path: String?
    package var errno: Int32

    package init(call: String, path: String? = nil, errno: Int32) {
        self.call = call
        self.path = path
        self.errno = errno
    }

    package var description: String {
        let reason = String(cString: strerror(errno))
        if let path { return "\(call) \(path): \(reason)" }
        return "\(call): \(reason)"
    }
}

/// Runs `body` until it stops failing with `EINTR`, and returns its result or the
/// `errno` of a real failure.
@inline(__always)
package func retryingInterrupts<Result: FixedWidthInteger>(
    _ call: String, path: String? = nil, _ body: () -> Result
) throws -> Result {
    while true {
        let result = body()
        if result != -1 { return result }
        let code = Glibc.errno
        if code != EINTR { throw SystemCallError(call: call, path: path, errno: code) }
    }
}
