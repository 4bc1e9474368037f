import CSuiteDefaultsInterface
import SuiteDefaults

/// The `sd_status` values, as include/suite_defaults.h numbers them: the header is
/// the one place the numbers are written.
enum Status {
    static let ok = sd_status(SD_OK)
    static let absent = sd_status(SD_ABSENT)
    static let noChange = sd_status(SD_NO_CHANGE)
    static let invalidArgument = sd_status(SD_INVALID_ARGUMENT)
    static let invalidHandle = sd_status(SD_INVALID_HANDLE)
    static let bufferTooSmall = sd_status(SD_BUFFER_TOO_SMALL)
    static let outOfMemory = sd_status(SD_OUT_OF_MEMORY)

    /// The status of each `SuiteError.Code`: a switch, so that a code added to the
    /// library asks for a status of its own.
    static func of(_ code: SuiteError.Code) -> sd_status {
        let status = switch code {
        case .invalidSuiteName: SD_INVALID_SUITE_NAME
        case .invalidKey: SD_INVALID_KEY
        case .invalidValue: SD_INVALID_VALUE
        case .valueTooLarge: SD_VALUE_TOO_LARGE
        case .suiteTooLarge: SD_SUITE_TOO_LARGE
        case .typeMismatch: SD_TYPE_MISMATCH
        case .encodingFailed: SD_ENCODING_FAILED
        case .foreignFile: SD_FOREIGN_FILE
        case .unsupportedVersion: SD_UNSUPPORTED_VERSION
        case .corruptFile: SD_CORRUPT_FILE
        case .symbolicLink: SD_SYMBOLIC_LINK
        case .foreignOwner: SD_FOREIGN_OWNER
        case .permissionDenied: SD_PERMISSION_DENIED
        case .readOnly: SD_READ_ONLY
        case .noSpace: SD_NO_SPACE
        case .notFound: SD_NOT_FOUND
        case .lockTimeout: SD_LOCK_TIMEOUT
        case .ioFailure: SD_IO_FAILURE
        }
        return sd_status(status)
    }

    static let invalidSuiteName = of(.invalidSuiteName)
    static let invalidKey = of(.invalidKey)
    static let invalidValue = of(.invalidValue)
    static let valueTooLarge = of(.valueTooLarge)
    static let typeMismatch = of(.typeMismatch)

    /// The name the header gives a status, as a static C string.
    static func name(_ status: sd_status) -> StaticString {
        switch Int(status) {
        case SD_OK: "SD_OK"
        case SD_ABSENT: "SD_ABSENT"
        case SD_NO_CHANGE: "SD_NO_CHANGE"
        case SD_INVALID_ARGUMENT: "SD_INVALID_ARGUMENT"
        case SD_INVALID_HANDLE: "SD_INVALID_HANDLE"
        case SD_BUFFER_TOO_SMALL: "SD_BUFFER_TOO_SMALL"
        case SD_OUT_OF_MEMORY: "SD_OUT_OF_MEMORY"
        case SD_INVALID_SUITE_NAME: "SD_INVALID_SUITE_NAME"
        case SD_INVALID_KEY: "SD_INVALID_KEY"
        case SD_INVALID_VALUE: "SD_INVALID_VALUE"
        case SD_VALUE_TOO_LARGE: "SD_VALUE_TOO_LARGE"
        case SD_SUITE_TOO_LARGE: "SD_SUITE_TOO_LARGE"
        case SD_TYPE_MISMATCH: "SD_TYPE_MISMATCH"
        case SD_ENCODING_FAILED: "SD_ENCODING_FAILED"
        case SD_FOREIGN_FILE: "SD_FOREIGN_FILE"
        case SD_UNSUPPORTED_VERSION: "SD_UNSUPPORTED_VERSION"
        case SD_CORRUPT_FILE: "SD_CORRUPT_FILE"
        case SD_SYMBOLIC_LINK: "SD_SYMBOLIC_LINK"
        case SD_FOREIGN_OWNER: "SD_FOREIGN_OWNER"
        case SD_PERMISSION_DENIED: "SD_PERMISSION_DENIED"
        case SD_READ_ONLY: "SD_READ_ONLY"
        case SD_NO_SPACE: "SD_NO_SPACE"
        case SD_NOT_FOUND: "SD_NOT_FOUND"
        case SD_LOCK_TIMEOUT: "SD_LOCK_TIMEOUT"
        case SD_IO_FAILURE: "SD_IO_FAILURE"
        default: "SD_UNKNOWN"
        }
    }
}

/// A call refused by the bridge itself, before the library was asked: its status and
/// the message `sd_last_error_message()` gives.
struct Refusal: Error {
    var status: Int32
    var message: String

    init(_ status: Int32, _ message: String) {
        self.status = status
        self.message = message
    }
}

/// A status that is an answer rather than a failure (SD_ABSENT), or that an
/// `sd_update` callback returned: it passes through as it is, leaving the thread's
/// last error message alone (for a callback's, that of the call it saw fail).
struct QuietStatus: Error {
    var status: Int32
}

/// Runs the body of an exported function: what it returns is the status; what it
/// throws becomes one, with the thread's last error message set. Nothing is thrown
/// across the boundary.
@inline(__always)
func perform(_ body: () throws -> Int32) -> Int32 {
    do {
        return try body()
    } catch let error as SuiteError {
        setLastError(error.description)
        return Status.of(error.code)
    } catch let refusal as Refusal {
        setLastError(refusal.message)
        return refusal.status
    } catch let quiet as QuietStatus {
        return quiet.status
    } catch {
        setLastError("\(error)")
        return Status.of(.ioFailure)
    }
}

/// Sets the calling thread's last error message (kept in C, thread-local).
func setLastError(_ message: String) {
    var message = message
    message.withUTF8 { bytes in
        bytes.withMemoryRebound(to: CChar.self) { sd_last_error_store($0.baseAddress, $0.count) }
    }
}

@_cdecl("sd_status_name")
public func sd_status_name(_ status: sd_status) -> UnsafePointer<CChar> {
    UnsafeRawPointer(Status.name(status).utf8Start).assumingMemoryBound(to: CChar.self)
}
