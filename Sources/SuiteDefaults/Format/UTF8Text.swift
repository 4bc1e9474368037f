/// Text read from bytes that must be UTF-8: the file format's strings and JSON's.
enum UTF8Text {
    /// The string these bytes spell, or nil when they are not valid UTF-8.
    ///
    /// ASCII, valid UTF-8 as it stands and what keys and most values are, is copied as
    /// it is. The generic validating initializer costs a process a runtime conformance
    /// lookup on first use, a large part of opening a suite in a new process.
    static func string(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard bytes.allSatisfy({ $0 < 0x80 }) else { return String(validating: bytes, as: UTF8.self) }
        return ascii(bytes)
    }

    private static func ascii(_ bytes: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: bytes.count) { string in
            UnsafeMutableRawBufferPointer(string).copyMemory(from: bytes)
            return bytes.count
        }
    }

    /// `text` in Unicode NFC, the standard library's, the one its String comparison
    /// uses (Foundation's `precomposedStringWithCanonicalMapping` is not in
    /// FoundationEssentials, and differs for some scripts).
    static func nfc(_ text: String) -> String {
        String(decoding: text._nfcCodeUnits, as: UTF8.self)
    }

    /// A key as these bytes spell it, in NFC (`nfc`, as `Validation.normalized` writes
    /// keys), or nil when they are not valid UTF-8.
    ///
    /// A key in another form (written by another program, or by a library whose
    /// normalizer differed, as Foundation's does for "\u{CCA}\u{CD5}") is read as its
    /// NFC twin: the table then holds one spelling of each key, the one writes use, so
    /// that a write to the twin does not leave the old spelling with the new size
    /// (which a compaction would then encode wrongly and trap on).
    static func key(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard bytes.allSatisfy({ $0 < 0x80 }) else {
            return String(validating: bytes, as: UTF8.self).map(nfc)
        }
        return ascii(bytes)
    }
}
