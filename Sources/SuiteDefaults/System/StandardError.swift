import Glibc

/// The process's standard error, for the library's own lines (diagnostics).
enum StandardError {
    /// Writes `text` (up to a NUL, if it has one) with one `write(2)`, best effort:
    /// a diagnostic must never fail or block the operation that reports it, so a
    /// short or failed write is not retried.
    static func write(_ text: String) {
        _ = text.withCString { Glibc.write(STDERR_FILENO, $0, strlen($0)) }
    }
}
