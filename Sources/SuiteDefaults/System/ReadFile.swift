extension FileDescriptor {
    /// The contents of the file at `path`, at most `limit` bytes, read to its end
    /// rather than by its size: for the files in /proc, which have none.
    static func readContents(ofPath path: String, limit: Int) throws -> [UInt8] {
        let descriptor = try open(path, .readOnly)
        defer { descriptor.close() }
        return try descriptor.readToEnd(limit: limit, path: path)
    }
}
