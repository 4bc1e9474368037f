extension UnsafeBufferPointer<UInt8> {
    /// Whether `other` holds the same bytes, compared eight at a time: the generic
    /// `elementsEqual` costs about thirty instructions a byte.
    func hasSameBytes(as other: UnsafeBufferPointer<UInt8>) -> Bool {
        guard count == other.count else { return false }
        guard count > 0 else { return true }
        let first = UnsafeRawBufferPointer(self), second = UnsafeRawBufferPointer(other)
        var offset = 0
        while offset + 8 <= count {
            guard first.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                == second.loadUnaligned(fromByteOffset: offset, as: UInt64.self) else { return false }
            offset += 8
        }
        while offset < count {
            guard first[offset] == second[offset] else { return false }
            offset += 1
        }
        return true
    }
}

extension String {
    /// Whether `other` is the same UTF-8 bytes (Swift's `==` is canonical equivalence,
    /// and after some marks not even that: `UTF8Text.normalForm`).
    func hasSameBytes(as other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        var first = self, second = other
        return first.withUTF8 { bytes in second.withUTF8 { bytes.hasSameBytes(as: $0) } }
    }
}
