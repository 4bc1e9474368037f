/// The 32 bytes at the start of a data file.
///
///     8 bytes magic 89 53 44 46 0D 0A 1A 0A ("\x89SDF\r\n\x1a\n") | u16 version |
///     u16 header size (32) | u32 flags (0) | u64 file ID | u32 suite tag |
///     u32 CRC-32C of bytes 0 ..< 28
///
/// The magic, like PNG's, catches both foreign files and text-mode mangling.
/// The file ID is random and names this particular file: a compaction writes a new
/// file with a new ID, which is how other processes notice the replacement. The suite
/// tag says which suite the file was written for (0, as in files of earlier versions,
/// which left the field reserved: any suite), so that another suite's file given this
/// suite's name (the two exchanged, or one linked over the other) is refused rather
/// than written by two suites' writers under two locks.
enum DataFileHeader {
    static let size = 32
    /// The newest version this library reads and writes. Version 2 adds what version
    /// 1 readers would take for damage: record flags (a mirror's commit) and the
    /// set-as-default operation. A file is written as version 1 unless it needs them,
    /// so that suites which never use them stay readable by older libraries.
    static let version: UInt16 = 2
    static let oldestReadableVersion: UInt16 = 1
    /// Where the version is in the header, for a writer that must know it.
    static let versionOffset = 8
    static let magic: [UInt8] = [0x89, 0x53, 0x44, 0x46, 0x0D, 0x0A, 0x1A, 0x0A]

    /// Where the suite tag is in the header.
    static let suiteTagOffset = 24

    static func encode(fileID: UInt64, version: UInt16 = 1, suiteTag: UInt32 = 0) -> [UInt8] {
        ByteWriter.bytes(count: size) { writer in
            writer.append(contentsOf: magic)
            writer.append(littleEndian: version)
            writer.append(littleEndian: UInt16(size))
            writer.append(littleEndian: UInt32(0))
            writer.append(littleEndian: fileID)
            writer.append(littleEndian: suiteTag)
            writer.append(littleEndian: CRC32C.checksum(writer.written))
        }
    }

    /// The suite tag of the data file named `fileName`: the CRC-32C of the name's bytes,
    /// never 0 (which stands for any suite).
    static func suiteTag(ofDataFileNamed fileName: String) -> UInt32 {
        let tag = Array(fileName.utf8).withUnsafeBytes { CRC32C.checksum($0) }
        return tag == 0 ? 1 : tag
    }

    /// The suite tag of a header that `decode` finds valid.
    static func suiteTag(in buffer: UnsafeRawBufferPointer) -> UInt32 {
        UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: suiteTagOffset, as: UInt32.self))
    }

    enum Decoded: Equatable {
        case valid(fileID: UInt64)
        /// The magic matches but the rest does not verify.
        case damaged
        /// A suite file of a newer format.
        case unsupported(version: UInt16)
        /// Not a suite file.
        case foreign
    }

    static func decode(_ buffer: UnsafeRawBufferPointer) -> Decoded {
        // A file cut short inside the magic is still ours.
        if buffer.count < magic.count { return magic.starts(with: buffer) && !buffer.isEmpty ? .damaged : .foreign }
        guard buffer.prefix(magic.count).elementsEqual(magic) else { return .foreign }
        guard buffer.count >= size else { return .damaged }
        let checksum = UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: 28, as: UInt32.self))
        guard checksum == CRC32C.checksum(UnsafeRawBufferPointer(rebasing: buffer[..<28])) else { return .damaged }
        let version = UInt16(littleEndian: buffer.loadUnaligned(fromByteOffset: 8, as: UInt16.self))
        guard (oldestReadableVersion...Self.version).contains(version) else { return .unsupported(version: version) }
        let fileID = UInt64(littleEndian: buffer.loadUnaligned(fromByteOffset: 16, as: UInt64.self))
        return fileID == 0 ? .damaged : .valid(fileID: fileID)
    }
}
