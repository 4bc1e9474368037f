import Glibc

/// The process's environment variables, read one at a time.
enum Environment {
    /// The value of the variable `name` (`getenv`); nil when it is not set. Reads one
    /// variable instead of copying the whole environment into a dictionary, as
    /// `ProcessInfo` does: opening a suite in its default place is start-up work.
    static func value(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        return String(cString: value)
    }
}
