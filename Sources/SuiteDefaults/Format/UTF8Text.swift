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

    /// Bytes known to be ASCII, as a string.
    static func ascii(_ bytes: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: bytes.count) { string in
            UnsafeMutableRawBufferPointer(string).copyMemory(from: bytes)
            return bytes.count
        }
    }

    /// `text` in the store's normal form: Unicode NFC as the standard library computes
    /// it (the one its String comparison uses; Foundation's
    /// `precomposedStringWithCanonicalMapping` is not in FoundationEssentials, and
    /// differs for some scripts), applied again until it no longer changes.
    ///
    /// Once is not enough: the standard library's NFC is not idempotent after some
    /// marks (U+0F73, U+0F75, U+0F81), so a key stored in NFC could be normalized to
    /// other bytes by the process reading it, which then held the key under a spelling
    /// the writer could not find. A normal form that is its own fixed point reads back
    /// as the bytes it was stored as. `isSettled` is false when it still changed after
    /// `normalizationLimit` rounds (every string tried settles after two): such text
    /// has no normal form, and a key without one is refused.
    static func normalForm(_ text: String) -> (text: String, isSettled: Bool) {
        // Text already in its normal form (every key this library stored, read back)
        // takes one round: the first comparison is with the text itself.
        var form = text
        for _ in 0..<normalizationLimit {
            let next = nfcOnce(form)
            if next.hasSameBytes(as: form) { return (form, true) }
            form = next
        }
        return (form, false)
    }

    /// How many rounds of NFC `normalForm` applies before it calls text unsettled.
    static let normalizationLimit = 4

    private static func nfcOnce(_ text: String) -> String {
        String(decoding: text._nfcCodeUnits, as: UTF8.self)
    }
}
