import Glibc
import SuiteDefaults

/// The one error of the command-line tools: what to tell the user, and the exit
/// status it calls for.
public struct ToolError: Error, Sendable, CustomStringConvertible {
    /// The exit status: 1 not found (or the tool's own failure), 2 usage, 3 input/output.
    public var status: Int32
    public var message: String

    public init(status: Int32, message: String) {
        self.status = status
        self.message = message
    }

    /// A usage error: status 2.
    public static func usage(_ message: String) -> ToolError { ToolError(status: 2, message: message) }

    /// A suite or key that is not there: status 1.
    public static func notFound(_ message: String) -> ToolError { ToolError(status: 1, message: message) }

    /// The library's error, with the status its code calls for. An input/output
    /// failure names its file first, since the library's message may not.
    public init(_ error: SuiteError) {
        let status = ToolError.exitStatus(for: error.code)
        let message = status == 3 ? [error.path, error.message].compactMap { $0 }.joined(separator: ": ") : error.message
        self.init(status: status, message: message)
    }

    /// Any error: a `ToolError` as it is, a `SuiteError` by its code, anything else an
    /// input/output failure (status 3).
    public init(_ error: any Error) {
        switch error {
        case let error as ToolError: self = error
        case let error as SuiteError: self.init(error)
        default: self.init(status: 3, message: "\(error)")
        }
    }

    /// The exit status for a library error: 1 not found, 2 for what the caller asked
    /// wrongly (a name, key or value the library refuses), 3 for everything else.
    public static func exitStatus(for code: SuiteError.Code) -> Int32 {
        switch code {
        case .notFound:
            1
        case .invalidSuiteName, .invalidKey, .invalidValue, .valueTooLarge, .suiteTooLarge, .typeMismatch, .encodingFailed:
            2
        case .foreignFile, .unsupportedVersion, .corruptFile, .symbolicLink, .foreignOwner, .permissionDenied, .readOnly,
             .noSpace, .lockTimeout, .ioFailure:
            3
        }
    }

    public var description: String { message }

    /// Writes "PROGRAM: MESSAGE" to standard error and exits with the status.
    public func exit() -> Never {
        Output.errorLine("\(Output.programName): \(message)")
        Glibc.exit(status)
    }
}
