import Glibc

/// Lexical path normalization: what `URL.standardizedFileURL` gives for a file path,
/// at a fraction of its cost (it runs every time a process opens a suite).
enum PathNormalization {
    /// `path` made absolute (a relative one from the current directory), with "."
    /// and ".." resolved and repeated or trailing slashes removed. Symbolic links are
    /// not resolved.
    static func standardized(_ path: String) -> String {
        // A relative path (as a URL that is not a file URL gives) is the current
        // directory's, as the file system would take it, never the root's.
        let path = path.utf8.first == UInt8(ascii: "/") ? path : currentDirectory() + "/" + path
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

    /// `getcwd`; "/" when it fails (the directory was removed).
    private static func currentDirectory() -> String {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX) + 1)
        let found = buffer.withUnsafeMutableBufferPointer { getcwd($0.baseAddress.map { UnsafeMutableRawPointer($0).assumingMemoryBound(to: CChar.self) }, $0.count) }
        guard found != nil, let end = buffer.firstIndex(of: 0) else { return "/" }
        return String(decoding: buffer[..<end], as: UTF8.self)
    }
}
