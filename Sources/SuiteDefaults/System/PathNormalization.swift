/// Lexical path normalization: what `URL.standardizedFileURL` gives for a file path,
/// at a fraction of its cost (it runs every time a process opens a suite).
enum PathNormalization {
    /// The absolute `path` with "." and ".." resolved and repeated or trailing
    /// slashes removed. Symbolic links are not resolved.
    static func standardized(_ path: String) -> String {
        // Byte by byte: the generic split and join cost hundreds of microseconds on
        // their first use in a process.
        let slash = UInt8(ascii: "/"), dot = UInt8(ascii: ".")
        var output: [UInt8] = []
        output.reserveCapacity(path.utf8.count)
        var component: [UInt8] = []
        func finish() {
            defer { component.removeAll(keepingCapacity: true) }
            if component.isEmpty || component == [dot] { return }
            if component == [dot, dot] {
                while let last = output.popLast(), last != slash {}
                return
            }
            output.append(slash)
            output.append(contentsOf: component)
        }
        for byte in path.utf8 {
            if byte == slash { finish() } else { component.append(byte) }
        }
        finish()
        return output.isEmpty ? "/" : String(decoding: output, as: UTF8.self)
    }
}
