import Glibc

/// A system call that failed: which call, on which path, and the `errno` it set.
///
/// This stays inside the module; the public surface turns it into a `SuiteError`
/// that says what the user can do about it.
struct SystemCallError: Error, CustomStringConvertible {
    var call: String
    var path: String?
    var errno: Int32

    var description: String {
        let reason = String(cString: strerror(errno))
        if let path { return "\(call) \(path): \(reason)" }
        return "\(call): \(reason)"
    }
}

/// Runs `body` until it stops failing with `EINTR`, and returns its result or the
/// `errno` of a real failure.
@inline(__always)
func retryingInterrupts<Result: FixedWidthInteger>(
    _ call: String, path: String? = nil, _ body: () -> Result
) throws -> Result {
    while true {
        let result = body()
        if result != -1 { return result }
        let code = Glibc.errno
        if code != EINTR { throw SystemCallError(call: call, path: path, errno: code) }
    }
}
