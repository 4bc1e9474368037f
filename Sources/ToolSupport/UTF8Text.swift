import Glibc

/// Input that is not UTF-8, and where it stops being UTF-8.
public struct NotUTF8: Error, Sendable {
    /// The offset of the first byte that is not part of valid UTF-8.
    public var offset: Int
}

/// The text `bytes` spell, checked: the repairing decoders (`CommandLine.arguments`,
/// `String(decoding:as:)`) would turn bytes that are not UTF-8 into U+FFFD, and a tool
/// would act on what it was not given.
public func utf8Text(_ bytes: some Collection<UInt8>) throws(NotUTF8) -> String {
    if let text = String(validating: bytes, as: UTF8.self) { return text }
    // Only for the message: the decoder walks to the first byte that fails.
    var parser = Unicode.UTF8.ForwardParser()
    var iterator = bytes.makeIterator()
    var offset = 0
    while case .valid(let scalar) = parser.parseScalar(from: &iterator) { offset += scalar.count }
    throw NotUTF8(offset: offset)
}

/// The program's arguments (without its name), read from the raw `argv`, each checked
/// to be UTF-8.
///
/// - Throws: a usage error that names the argument, counted from 1 after the
///   program's name, and the offset of its first bad byte.
public func checkedArguments() throws(ToolError) -> [String] {
    var arguments: [String] = []
    for index in 1..<Int(CommandLine.argc) {
        guard let pointer = CommandLine.unsafeArgv[index] else { break }
        let bytes = UnsafeRawBufferPointer(start: pointer, count: strlen(pointer))
        do {
            arguments.append(try utf8Text(bytes))
        } catch {
            throw .usage("argument \(index) (\"\(String(decoding: bytes, as: UTF8.self))\") is not UTF-8 at byte \(error.offset); "
                         + "suite names, keys, values and paths must be UTF-8 text. Nothing was written.")
        }
    }
    return arguments
}
