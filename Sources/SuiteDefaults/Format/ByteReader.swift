/// Why bytes did not decode. Decoding never traps: every read is bounds-checked.
struct FormatError: Error, CustomStringConvertible {
    var reason: String
    var offset: Int
    var description: String { "\(reason) at byte \(offset)" }
}

/// Reads the file format's encodings from a buffer, checking every bound.
struct ByteReader {
    let buffer: UnsafeRawBufferPointer
    private(set) var offset: Int
    let end: Int

    init(_ buffer: UnsafeRawBufferPointer, from start: Int = 0, to end: Int? = nil) {
        self.buffer = buffer
        self.offset = start
        self.end = min(end ?? buffer.count, buffer.count)
    }

    var remaining: Int { end - offset }
    var isAtEnd: Bool { offset >= end }

    /// The bounds check of every read: inlined, with its error made out of line, since
    /// a catch-up makes some twenty of them per record.
    @inline(__always)
    private func need(_ count: Int) throws(FormatError) {
        if count < 0 || count > remaining { throw shortOfData(count) }
    }

    @inline(never)
    private func shortOfData(_ count: Int) -> FormatError {
        FormatError(reason: "unexpected end of data (needed \(count) bytes, \(remaining) left)", offset: offset)
    }

    mutating func readByte() throws(FormatError) -> UInt8 {
        try need(1)
        defer { offset += 1 }
        return buffer[offset]
    }

    mutating func read<T: FixedWidthInteger>(_: T.Type) throws(FormatError) -> T {
        let size = MemoryLayout<T>.size
        try need(size)
        defer { offset += size }
        return T(littleEndian: buffer.loadUnaligned(fromByteOffset: offset, as: T.self))
    }

    mutating func readVarint() throws(FormatError) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let start = offset
            let byte = try readByte()
            if shift == 63 && byte > 1 {
                throw FormatError(reason: "varint overflows 64 bits", offset: start)
            }
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
            if shift > 63 { throw FormatError(reason: "varint longer than 10 bytes", offset: start) }
        }
    }

    /// A varint that counts something occupying at least `minimumSize` bytes each, so
    /// a damaged count can never ask for more than the buffer holds.
    mutating func readCount(minimumSize: Int = 1) throws(FormatError) -> Int {
        let start = offset
        let value = try readVarint()
        guard value <= UInt64(remaining / max(minimumSize, 1)) else {
            throw FormatError(reason: "count \(value) exceeds the remaining data", offset: start)
        }
        return Int(value)
    }

    mutating func readBytes(_ count: Int) throws(FormatError) -> UnsafeRawBufferPointer {
        try need(count)
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + count)])
    }

    mutating func readLengthPrefixed() throws(FormatError) -> UnsafeRawBufferPointer {
        try readBytes(try readCount())
    }

    mutating func readString() throws(FormatError) -> String {
        try readText("string", UTF8Text.string)
    }

    /// A record's key, in its normal form (`UTF8Text.normalForm`, as
    /// `Validation.normalizedKey` writes keys).
    ///
    /// A key in another form (written by another program, or by a library whose
    /// normalizer differed, as Foundation's does for "\u{CCA}\u{CD5}") is read as its
    /// normal form: the table then holds one spelling of each key, the one writes use, so
    /// that a write to the twin does not leave the old spelling with the new size (which
    /// a compaction would then encode wrongly and trap on).
    ///
    /// A key that no write makes (empty, with a NUL, without a normal form, or over the
    /// length limit in its normal form) makes the record damage: a suite holding it
    /// could neither remove nor write it, nor import its own export. Since the normal
    /// form is its own fixed point, every key a write stores passes this check in every
    /// process, and so does every key a compaction writes from the table.
    mutating func readKey() throws(FormatError) -> String {
        let start = offset
        let bytes = try readLengthPrefixed()
        func damage(_ why: String) -> FormatError { FormatError(reason: "key \(why)", offset: start) }
        let key: String
        if !bytes.isEmpty && bytes.allSatisfy({ $0 &- 1 < 0x7F }) {
            // ASCII without NUL (bytes 1...0x7F), the common key, is its own normal form.
            key = UTF8Text.ascii(bytes)
        } else {
            guard let text = UTF8Text.string(bytes) else { throw damage("is not valid UTF-8") }
            let form = UTF8Text.normalForm(text)
            guard form.isSettled else { throw damage("has no normal form: NFC changes it every time") }
            if form.text.utf8.contains(0) { throw damage("contains a NUL byte") }
            key = form.text
        }
        let length = key.utf8.count
        guard length > 0, length <= Validation.maximumKeyLength else {
            throw damage("is \(length) bytes long in its normal form, outside 1...\(Validation.maximumKeyLength)")
        }
        return key
    }

    /// Length-prefixed text made by `decode`, which answers nil for bytes that are not
    /// UTF-8; `what` names it in the error.
    private mutating func readText(_ what: String, _ decode: (UnsafeRawBufferPointer) -> String?) throws(FormatError) -> String {
        let start = offset
        guard let text = decode(try readLengthPrefixed()) else {
            throw FormatError(reason: "\(what) is not valid UTF-8", offset: start)
        }
        return text
    }
}
