import Foundation
@_spi(Tools) import SuiteDefaults

/// The append-only log that continues a mirror's state file, beside it in
/// `NAME.suite.synclog-HASH` (`MirrorState.logFileName(suite:prefix:)`).
///
/// The state file is a snapshot; each later step of the state (a send's base, a change
/// written ahead, the base after it) is one record appended here and made durable with
/// one `fdatasync`: no temporary file, no rename, no sync of the directory, and nothing
/// written but what changed. The snapshot is rewritten (and the log started afresh) only
/// when the log outgrows it (`MirrorStateStore`).
///
/// The format: the 8 bytes `SSYNCLG1`, then records, each its payload's length and the
/// CRC-32C of that length and the payload (both 32-bit little-endian), then the payload.
/// The first record is the `Header`: the log's `id`, which the snapshot it continues
/// names (`MirrorState.log`), and its prefix and suite. Each other record is a
/// `MirrorState.Change` as JSON.
///
/// - A log is made whole before it has its name (temporary file, `fsync`, `rename`,
///   `fsync` of the directory), so a missing or bad magic or header is damage, never a
///   kill's doing: refused with a clear error, like a state file that cannot be read.
/// - A record cut short (its length runs past the end: a write a kill interrupted) ends
///   the log: it was never acknowledged, so it is not written. A whole record whose
///   checksum or content is wrong ends it too, and is reported as damage.
/// - Opening never blocks nor follows a link, and the file must be a regular file, of at
///   most the state file's limit, judged by its size before reading, as the state file.
final class MirrorStateLog {
    /// The first record: which snapshot the log continues, and whose it is.
    struct Header: Codable, Equatable {
        var id: String
        var prefix: String
        var suite: String
    }

    /// What a log's bytes hold (`parse`).
    struct Contents {
        var header: Header
        /// The payloads of the records after the header, up to the first that is not whole and valid.
        var records: [Data]
        /// Where the whole records end.
        var end: Int
        /// Set when a whole record was wrong (damage, not a write cut short): says where.
        var damage: String?
    }

    static let magic = Data("SSYNCLG1".utf8)
    /// A record's length and checksum.
    static let recordHeaderSize = 8

    let path: String
    let id: String
    private let descriptor: FileDescriptor
    /// Where the next record goes: the end of the last whole record.
    private(set) var size: Int

    private init(path: String, id: String, descriptor: FileDescriptor, size: Int) {
        self.path = path
        self.id = id
        self.descriptor = descriptor
        self.size = size
    }

    deinit {
        descriptor.close()
    }

    /// `payload` framed as a record: length, checksum, payload.
    static func record(_ payload: Data) -> Data {
        var framed = Data(capacity: recordHeaderSize + payload.count)
        let length = UInt32(payload.count).littleEndian
        withUnsafeBytes(of: length) { framed.append(contentsOf: $0) }
        withUnsafeBytes(of: checksum(length: length, payload).littleEndian) { framed.append(contentsOf: $0) }
        framed.append(payload)
        return framed
    }

    /// The CRC-32C of a record's length (as stored) and payload: a length bit-flipped into
    /// another that still lands inside the file fails it too.
    private static func checksum(length: UInt32, _ payload: Data) -> UInt32 {
        let crc = withUnsafeBytes(of: length) { SuiteChecksum.crc32c($0) }
        return payload.withUnsafeBytes { SuiteChecksum.crc32c($0, continuing: crc) }
    }

    /// Parses a log's bytes. Nil for an empty file (nothing was ever written in it); throws
    /// (a reason) for a file that is no log: a bad magic, a header not whole and valid.
    static func parse(_ bytes: Data) throws(MirrorFailure) -> Contents? {
        guard !bytes.isEmpty else { return nil }
        guard bytes.count >= magic.count, bytes.prefix(magic.count).elementsEqual(magic) else {
            throw MirrorFailure("it does not start as a sync state log")
        }
        var offset = magic.count
        guard case .record(let first, let next) = nextRecord(in: bytes, at: offset),
              let header = try? JSONDecoder().decode(Header.self, from: first) else {
            throw MirrorFailure("its header is damaged")
        }
        offset = next
        var records: [Data] = []
        var damage: String?
        scan: while offset < bytes.count {
            switch nextRecord(in: bytes, at: offset) {
            case .record(let payload, let next):
                records.append(payload)
                offset = next
            case .torn:
                break scan
            case .invalid:
                damage = "the record at byte \(offset) is damaged; it and the \(bytes.count - offset) bytes from it are ignored"
                break scan
            }
        }
        return Contents(header: header, records: records, end: offset, damage: damage)
    }

    private enum Next {
        case record(Data, next: Int)
        /// Runs past the end: a write cut short.
        case torn
        /// Whole, but its checksum fails.
        case invalid
    }

    private static func nextRecord(in bytes: Data, at offset: Int) -> Next {
        let start = bytes.startIndex + offset
        guard bytes.count - offset >= recordHeaderSize else { return .torn }
        var length: UInt32 = 0, stored: UInt32 = 0
        withUnsafeMutableBytes(of: &length) { $0.copyBytes(from: bytes[start..<start + 4]) }
        withUnsafeMutableBytes(of: &stored) { $0.copyBytes(from: bytes[start + 4..<start + 8]) }
        // Compared as UInt64: a length near 4 GiB must not wrap a sum.
        guard UInt64(UInt32(littleEndian: length)) <= UInt64(bytes.count - offset - recordHeaderSize) else { return .torn }
        let payloadStart = start + recordHeaderSize
        let payload = Data(bytes[payloadStart..<payloadStart + Int(UInt32(littleEndian: length))])
        guard checksum(length: length, payload) == UInt32(littleEndian: stored) else { return .invalid }
        return .record(payload, next: offset + recordHeaderSize + payload.count)
    }

    /// Opens the log at `path` and reads it: nil when there is none. Like the state file,
    /// never blocks nor follows a link, refuses anything but a regular file and more than
    /// `limit` bytes. The descriptor comes back for `continuing` it.
    static func open(_ path: String, limit: Int) throws(DurableFile.Failure) -> (descriptor: FileDescriptor, bytes: Data)? {
        let descriptor: FileDescriptor
        do throws(DurableFile.Failure) {
            descriptor = try DurableFile.openWithoutFollowing(path, O_RDWR)
        } catch where error.code == ENOENT {
            return nil
        }
        do throws(DurableFile.Failure) {
            let status = try DurableFile.regularFileStatus(of: descriptor, path: path)
            return (descriptor, try DurableFile.readAll(descriptor, status: status, path: path, limit: limit, holding: "a sync state log"))
        } catch {
            descriptor.close()
            throw error
        }
    }

    /// The log opened by `open`, continued from `size` (its whole records' end).
    static func continuing(_ path: String, id: String, descriptor: FileDescriptor, size: Int) -> MirrorStateLog {
        MirrorStateLog(path: path, id: id, descriptor: descriptor, size: size)
    }

    /// Makes a new log holding only `header`, whole before it takes the name `path`
    /// (through `temporaryPath`, the state file's, never in use at the same time).
    static func create(_ path: String, temporaryPath: String, header: Header) throws -> MirrorStateLog {
        let contents = magic + record(try JSONEncoder().encode(header))
        let descriptor = try DurableFile.writeNew(contents, at: path, through: temporaryPath, locked: false)
        let log = MirrorStateLog(path: path, id: header.id, descriptor: descriptor, size: contents.count)
        try DurableFile.syncDirectory(of: path)
        return log
    }

    /// Appends one record and makes it durable (`fdatasync`) before returning.
    func append(_ payload: Data) throws(DurableFile.Failure) {
        let framed = Self.record(payload)
        try DurableFile.write(framed, to: descriptor, at: size, path: path)
        try DurableFile.attempt("sync", path) { try descriptor.synchronizeData(path: path) }
        size += framed.count
    }

    /// Whether the file at `path` is still this log (not removed, nor replaced by another
    /// file): appending to one no longer there would write where no reader looks.
    func isStillAtItsPath() throws(DurableFile.Failure) -> Bool {
        try DurableFile.isAtItsPath(descriptor, path: path) == true
    }
}
