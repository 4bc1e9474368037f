/// Text read from bytes that must be UTF-8: the file format's strings and JSON's.
enum UTF8Text {
    /// The string these bytes spell, or nil when they are not valid UTF-8.
    ///
    /// ASCII, valid UTF-8 as it stands and what keys and most values are, is copied as
    /// it is. The generic validating initializer costs a process a runtime conformance
    /// lookup on first use, a large part of opening a suite in a new process.
    static func string(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard bytes.allSatisfy({ $0 < 0x80 }) else { return String(validating: bytes, as: UTF8.self) }
        return String(unsafeUninitializedCapacity: bytes.count) { string in
            UnsafeMutableRawBufferPointer(string).copyMemory(from: bytes)
            return bytes.count
        }
    }
}
