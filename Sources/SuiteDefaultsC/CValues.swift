import Foundation
import Glibc
@_spi(Tools) import SuiteDefaults

/// Reading what C passes in, and writing what goes back: every pointer checked, every
/// string validated, out-parameters written only once the call has succeeded.
enum CInput {
    /// A NUL-terminated UTF-8 string; `invalid` is the status for one that is not UTF-8.
    static func text(_ pointer: UnsafePointer<CChar>?, _ what: String, invalid: Int32) throws -> String {
        guard let pointer else { throw Refusal(Status.invalidArgument, "\(what.prefix(1).uppercased() + what.dropFirst()) is NULL.") }
        guard let text = String(validatingCString: pointer) else {
            throw Refusal(invalid, "\(what.prefix(1).uppercased() + what.dropFirst()) is not valid UTF-8.")
        }
        return text
    }

    static func key(_ pointer: UnsafePointer<CChar>?) throws -> String {
        try text(pointer, "the key", invalid: Status.invalidKey)
    }

    /// A value written as typed JSON (see `SuiteValue(jsonText:)`).
    static func json(_ pointer: UnsafePointer<CChar>?, _ what: String = "the JSON text") throws -> SuiteValue {
        try SuiteValue(jsonText: text(pointer, what, invalid: Status.invalidValue))
    }

    /// `length` bytes at `bytes` as data. Lengths beyond the value limit are refused
    /// before anything is copied (a value's encoding is never shorter than its bytes).
    static func data(_ bytes: UnsafeRawPointer?, _ length: UInt, maximumValueSize: Int) throws -> Data {
        guard length > 0 else { return Data() }
        guard let bytes else { throw Refusal(Status.invalidArgument, "The bytes are NULL, with a length of \(length).") }
        guard length <= UInt(maximumValueSize) else {
            throw Refusal(Status.valueTooLarge, "The value is \(length) bytes, over the limit of \(maximumValueSize) bytes per value.")
        }
        return Data(bytes: bytes, count: Int(length))
    }

    /// Checks that an out-parameter is there.
    static func required<T>(_ pointer: UnsafeMutablePointer<T>?, _ what: String) throws -> UnsafeMutablePointer<T> {
        guard let pointer else { throw Refusal(Status.invalidArgument, "The pointer for \(what) is NULL.") }
        return pointer
    }
}

enum COutput {
    /// Copies `bytes` into the caller's buffer, with a NUL after them when
    /// `terminated`; the length goes to `length` either way.
    static func copy(_ bytes: some Collection<UInt8>, terminated: Bool, into buffer: UnsafeMutableRawPointer?,
                     capacity: UInt, length: UnsafeMutablePointer<UInt>?) throws -> Int32 {
        if capacity > 0 && buffer == nil {
            throw Refusal(Status.invalidArgument, "The buffer is NULL, with a capacity of \(capacity).")
        }
        let needed = UInt(bytes.count) + (terminated ? 1 : 0)
        // No bytes need no buffer.
        if needed == 0 {
            length?.pointee = 0
            return Status.ok
        }
        guard needed <= capacity, let buffer else {
            if terminated, capacity > 0, let buffer { buffer.storeBytes(of: 0, as: UInt8.self) }
            length?.pointee = UInt(bytes.count)
            throw Refusal(Status.bufferTooSmall, "The value is \(bytes.count) bytes\(terminated ? " plus its NUL" : ""); "
                          + "the buffer holds \(capacity).")
        }
        let target = UnsafeMutableRawBufferPointer(start: buffer, count: Int(needed))
        target.copyBytes(from: bytes)
        if terminated { target[bytes.count] = 0 }
        length?.pointee = UInt(bytes.count)
        return Status.ok
    }

    /// `bytes` in memory from `malloc`, for `sd_free`; with a NUL after them when
    /// `terminated`. Never NULL, even for no bytes.
    static func allocated(_ bytes: some Collection<UInt8>, terminated: Bool) throws -> UnsafeMutableRawPointer {
        let size = bytes.count + (terminated ? 1 : 0)
        guard let memory = malloc(max(size, 1)) else {
            throw Refusal(Status.outOfMemory, "Could not allocate \(size) bytes for the value.")
        }
        let target = UnsafeMutableRawBufferPointer(start: memory, count: size)
        target.copyBytes(from: bytes)
        if terminated { target[bytes.count] = 0 }
        return memory
    }

    /// A string's UTF-8 in allocated memory, NUL-terminated.
    static func allocated(_ text: String) throws -> UnsafeMutablePointer<CChar> {
        try allocated(text.utf8, terminated: true).assumingMemoryBound(to: CChar.self)
    }
}

@_cdecl("sd_free")
public func sd_free(_ memory: UnsafeMutableRawPointer?) {
    free(memory)
}
