#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Writes the file format's little-endian encodings into a buffer whose size is known
/// in advance (every encoding's size is computed first), with no growing and no copy.
/// Every write is bounds-checked: a wrong size traps rather than overwrite memory.
struct ByteWriter {
    private let buffer: UnsafeMutableRawBufferPointer
    /// How many bytes have been written.
    private(set) var count = 0

    /// Makes `size` bytes with `body`, which must write exactly that many.
    static func bytes(count size: Int, _ body: (inout ByteWriter) -> Void) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: size) { storage, initialized in
            var writer = ByteWriter(buffer: UnsafeMutableRawBufferPointer(storage))
            body(&writer)
            precondition(writer.count == size, "encoded \(writer.count) bytes where \(size) were computed")
            initialized = size
        }
    }

    /// Makes `size` bytes with `body` in `bytes`, reusing its storage: for encodings
    /// made over and over, such as a commit's record.
    static func write(count size: Int, into bytes: inout [UInt8], _ body: (inout ByteWriter) -> Void) {
        if bytes.count < size {
            bytes.append(contentsOf: repeatElement(0, count: size - bytes.count))
        } else if bytes.count > size {
            bytes.removeLast(bytes.count - size)
        }
        bytes.withUnsafeMutableBytes { storage in
            var writer = ByteWriter(buffer: storage)
            body(&writer)
            precondition(writer.count == size, "encoded \(writer.count) bytes where \(size) were computed")
        }
    }

    private init(buffer: UnsafeMutableRawBufferPointer) {
        self.buffer = buffer
    }

    /// The bytes written so far.
    var written: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: buffer[..<count]) }

    @inline(__always)
    private mutating func claim(_ size: Int) -> Int {
        precondition(size <= buffer.count - count, "encoding overruns its computed size")
        defer { count += size }
        return count
    }

    @inline(__always)
    mutating func append(_ byte: UInt8) {
        buffer[claim(1)] = byte
    }

    @inline(__always)
    mutating func append<T: FixedWidthInteger>(littleEndian value: T) {
        buffer.storeBytes(of: value.littleEndian, toByteOffset: claim(MemoryLayout<T>.size), as: T.self)
    }

    /// Unsigned LEB128: seven bits a byte, low bits first, high bit set on all but the last.
    @inline(__always)
    mutating func appendVarint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        append(UInt8(rest))
    }

    @inline(__always)
    mutating func append(contentsOf bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        let start = claim(bytes.count)
        (buffer.baseAddress! + start).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
    }

    mutating func append(contentsOf bytes: [UInt8]) {
        bytes.withUnsafeBytes { append(contentsOf: $0) }
    }

    /// A length-prefixed UTF-8 string.
    mutating func appendLengthPrefixed(_ string: String) {
        // Read in place (a native string's bytes are contiguous) rather than through
        // `withUTF8`, which works on a copy that it may have to make contiguous.
        let written: Void? = string.utf8.withContiguousStorageIfAvailable { utf8 in
            appendVarint(UInt64(utf8.count))
            append(contentsOf: UnsafeRawBufferPointer(utf8))
        }
        guard written == nil else { return }
        var string = string
        string.withUTF8 { utf8 in
            appendVarint(UInt64(utf8.count))
            append(contentsOf: UnsafeRawBufferPointer(utf8))
        }
    }

    /// Length-prefixed bytes.
    mutating func appendLengthPrefixed(_ data: Data) {
        appendVarint(UInt64(data.count))
        data.withUnsafeBytes { append(contentsOf: $0) }
    }

    static func varintSize(_ value: UInt64) -> Int {
        var size = 1
        var rest = value
        while rest >= 0x80 {
            size += 1
            rest >>= 7
        }
        return size
    }
}
