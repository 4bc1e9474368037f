/// Appends the little-endian encodings the file format uses to a byte array.
struct ByteWriter {
    var bytes: [UInt8] = []

    init(capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    var count: Int { bytes.count }

    mutating func append(_ byte: UInt8) {
        bytes.append(byte)
    }

    mutating func append<T: FixedWidthInteger>(littleEndian value: T) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// Unsigned LEB128: seven bits a byte, low bits first, high bit set on all but the last.
    mutating func appendVarint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    mutating func append<Bytes: Collection<UInt8>>(contentsOf other: Bytes) {
        bytes.append(contentsOf: other)
    }

    /// A length-prefixed byte string.
    mutating func appendLengthPrefixed<Bytes: Collection<UInt8>>(_ other: Bytes) {
        appendVarint(UInt64(other.count))
        bytes.append(contentsOf: other)
    }

    /// Overwrites four bytes at `offset` (for fields known only at the end).
    mutating func patch(littleEndian value: UInt32, at offset: Int) {
        withUnsafeBytes(of: value.littleEndian) { raw in
            for index in 0..<4 { bytes[offset + index] = raw[index] }
        }
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
