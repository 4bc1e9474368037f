/// One change inside a record.
enum Operation: Equatable, Sendable {
    /// `size` is the encoded size of `value`, known from measuring or decoding it.
    /// `asDefault`: the value is a first-access default (stored by `setIfAbsent` or
    /// a key's `storingDefault`), not a choice; a mirror sends it create-only.
    case set(key: String, value: SuiteValue, size: Int, asDefault: Bool = false)
    case remove(key: String)
    case removeAll

    var key: String? {
        switch self {
        case .set(let key, _, _, _), .remove(let key): key
        case .removeAll: nil
        }
    }
}

/// A unit of the journal: one commit (a transaction), or the whole state (a snapshot,
/// the first record of a compacted file). It is applied entirely or not at all.
struct Record: Sendable {
    enum Kind: UInt16, Sendable {
        case transaction = 1
        /// Replaces the whole state; holds only `set` operations.
        case snapshot = 2
    }

    var kind: Kind
    /// Commit sequence number: each commit's is one more than the last.
    var sequence: UInt64
    /// When the commit was written, in nanoseconds since 1970 UTC.
    var timestamp: Int64
    /// The process that wrote it.
    var pid: Int32
    var operations: [Operation]
    var flags: Flags = []

    /// What a record says of its commit as a whole.
    struct Flags: OptionSet, Sendable, Equatable {
        let rawValue: UInt16
        /// Made by a mirror (`suite-sync`), applying changes made elsewhere: a mirror
        /// never sends such a commit back.
        static let mirrored = Flags(rawValue: 1)
        static let known: Flags = [.mirrored]
    }

    /// Whether only a version 2 file may hold this record.
    var needsVersion2: Bool { Self.needVersion2(operations, flags: flags) }

    /// Whether only a version 2 file may hold a record of `operations` and `flags`:
    /// flags, or a value stored as a default.
    static func needVersion2(_ operations: [Operation], flags: Flags) -> Bool {
        needVersion2(storingDefault: operations.contains { if case .set(_, _, _, true) = $0 { true } else { false } }, flags: flags)
    }

    /// Whether only a version 2 file may hold a record with `flags` that stores a
    /// value as a default (`storingDefault`) or not.
    static func needVersion2(storingDefault: Bool, flags: Flags) -> Bool {
        storingDefault || !flags.isEmpty
    }
}

/// The framing of records in the data file; see `Docs/FileFormat.md`.
///
///     u32 magic "SDR1" | u32 payload length | u64 sequence | i64 timestamp |
///     i32 pid | u16 kind | u16 flags (0 in version 1) | payload | u32 CRC-32C of
///     everything from the payload length through the payload
enum RecordFormat {
    static let magic: UInt32 = 0x3152_4453  // the bytes "SDR1"
    static let magicBytes: [UInt8] = [0x53, 0x44, 0x52, 0x31]
    static let headerSize = 32
    static let overhead = headerSize + 4

    enum OperationCode: UInt8 {
        case set = 1, remove = 2, removeAll = 3
        /// A set whose value is a first-access default (format version 2).
        case setDefault = 4
    }

    /// The encoded size of one operation, used for the live-size estimate.
    static func size(ofSetting key: String, valueSize: Int) -> Int {
        let keyCount = key.utf8.count
        return 1 + ByteWriter.varintSize(UInt64(keyCount)) + keyCount + valueSize
    }

    static func encode(_ record: Record) -> [UInt8] {
        var bytes: [UInt8] = []
        encode(record, into: &bytes)
        return bytes
    }

    /// Encodes `record` into `bytes`, reusing its storage.
    static func encode(_ record: Record, into bytes: inout [UInt8]) {
        var payloadSize = 0
        for operation in record.operations {
            switch operation {
            case .set(let key, _, let size, _): payloadSize += Self.size(ofSetting: key, valueSize: size)
            case .remove(let key): payloadSize += Self.size(ofSetting: key, valueSize: 0)
            case .removeAll: payloadSize += 1
            }
        }
        write(payloadSize: payloadSize, kind: record.kind, sequence: record.sequence, timestamp: record.timestamp,
              pid: record.pid, flags: record.flags, into: &bytes) { writer in
            for operation in record.operations {
                switch operation {
                case .set(let key, let value, _, let asDefault):
                    writeSet(key: key, value: value, asDefault: asDefault, into: &writer)
                case .remove(let key):
                    writer.append(OperationCode.remove.rawValue)
                    writer.appendLengthPrefixed(key)
                case .removeAll:
                    writer.append(OperationCode.removeAll.rawValue)
                }
            }
        }
    }

    /// Encodes a transaction of one set into `bytes`, as `encode(_:into:)` would a
    /// `Record` holding it: the most common commit, without the list of operations.
    static func encodeSet(key: String, value: SuiteValue, valueSize: Int, asDefault: Bool, sequence: UInt64,
                          timestamp: Int64, pid: Int32, flags: Record.Flags, into bytes: inout [UInt8]) {
        write(payloadSize: size(ofSetting: key, valueSize: valueSize), kind: .transaction, sequence: sequence,
              timestamp: timestamp, pid: pid, flags: flags, into: &bytes) { writer in
            writeSet(key: key, value: value, asDefault: asDefault, into: &writer)
        }
    }

    /// Writes the framing of a record around the payload that `payload` writes.
    private static func write(payloadSize: Int, kind: Record.Kind, sequence: UInt64, timestamp: Int64, pid: Int32,
                              flags: Record.Flags, into bytes: inout [UInt8], _ payload: (inout ByteWriter) -> Void) {
        ByteWriter.write(count: overhead + payloadSize, into: &bytes) { writer in
            writer.append(littleEndian: magic)
            writer.append(littleEndian: UInt32(payloadSize))
            writer.append(littleEndian: sequence)
            writer.append(littleEndian: timestamp)
            writer.append(littleEndian: pid)
            writer.append(littleEndian: kind.rawValue)
            writer.append(littleEndian: flags.rawValue)
            payload(&writer)
            writer.append(littleEndian: CRC32C.checksum(UnsafeRawBufferPointer(rebasing: writer.written[4...])))
        }
    }

    private static func writeSet(key: String, value: SuiteValue, asDefault: Bool, into writer: inout ByteWriter) {
        writer.append((asDefault ? OperationCode.setDefault : .set).rawValue)
        writer.appendLengthPrefixed(key)
        ValueEncoding.encode(value, into: &writer)
    }

    /// What reading a record at an offset found: the record (or, when applied as it
    /// is decoded, its fields), a record cut short, or bytes that are not one.
    enum ParseOutcome<Value> {
        case record(Value, end: Int)
        /// The bytes are the beginning of a record that does not fit in what is left:
        /// what a write cut short leaves behind.
        case incomplete
        /// The bytes are not a record, or the record fails its checksum.
        case invalid(FormatError)
    }

    /// Parses the record starting at `offset`; never reads at or past `limit`.
    static func parse(_ buffer: UnsafeRawBufferPointer, at offset: Int, limit: Int) -> ParseOutcome<Record> {
        var operations: [Operation] = []
        return decodeVerified(buffer, at: offset, limit: limit) { end throws(FormatError) in
            let fields = try decode(buffer, at: offset, end: end) { operations.append($0) }
            return Record(kind: fields.kind, sequence: fields.sequence, timestamp: fields.timestamp,
                          pid: fields.pid, operations: operations, flags: fields.flags)
        }
    }

    /// A record's fields other than its operations.
    struct Fields {
        var kind: Record.Kind
        var sequence: UInt64
        var timestamp: Int64
        var pid: Int32
        var flags: Record.Flags
    }

    /// Verifies the record starting at `offset` and applies its operations to
    /// `contents` one by one as they are decoded, so that no list of them is built:
    /// reading a file of 10,000 keys would otherwise hold all 10,000 twice at once.
    /// On `.invalid`, `contents` may hold part of the record and must be dropped.
    /// With `onlyTransactions`, a snapshot is refused before anything is applied.
    static func apply(_ buffer: UnsafeRawBufferPointer, at offset: Int, limit: Int, to contents: inout SuiteContents,
                      sequenceAfter last: UInt64?, onlyTransactions: Bool = false) -> ParseOutcome<Fields> {
        decodeVerified(buffer, at: offset, limit: limit) { end throws(FormatError) in
            let kind = Record.Kind(rawValue: UInt16(littleEndian: buffer.loadUnaligned(fromByteOffset: offset + 28, as: UInt16.self)))
            let sequence = UInt64(littleEndian: buffer.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self))
            if let last, sequence <= last { throw FormatError(reason: "record out of sequence", offset: offset) }
            if onlyTransactions && kind != .transaction { throw FormatError(reason: "a snapshot after the first record", offset: offset) }
            if let kind { contents.begin(kind) }
            // A large record into an empty table (a snapshot, an import): the table is
            // made its final size at once, so that its last growth does not hold the
            // old table and the new one at the same time.
            if end - offset > Self.countedRecordSize, contents.count == 0,
               let sets = setCount(buffer, at: offset, end: end) {
                contents.reserve(sets)
            }
            let fields = try decode(buffer, at: offset, end: end) { contents.apply($0) }
            contents.finish(sequence: fields.sequence)
            return fields
        }
    }

    /// Verifies the framing, the fixed fields and the checksum of the record at
    /// `offset`, then reads it with `read`, given the record's end.
    private static func decodeVerified<Value>(
        _ buffer: UnsafeRawBufferPointer, at offset: Int, limit: Int, _ read: (Int) throws(FormatError) -> Value
    ) -> ParseOutcome<Value> {
        switch verify(buffer, at: offset, limit: limit) {
        case .verified(let end):
            do {
                return .record(try read(end), end: end)
            } catch {
                return .invalid(error)
            }
        case .incomplete:
            return .incomplete
        case .invalid(let error):
            return .invalid(error)
        }
    }

    /// Records larger than this are counted before they are applied.
    static let countedRecordSize = 4096

    /// How many set operations a verified record holds; nil when its operations do
    /// not parse (decoding will say why).
    private static func setCount(_ buffer: UnsafeRawBufferPointer, at offset: Int, end: Int) -> Int? {
        var reader = ByteReader(buffer, from: offset + headerSize, to: end - 4)
        var sets = 0
        do {
            while !reader.isAtEnd { if try skipOperation(from: &reader) { sets += 1 } }
        } catch {
            return nil
        }
        return sets
    }

    /// Moves past one operation, checking only its framing; true for a set.
    static func skipOperation(from reader: inout ByteReader) throws(FormatError) -> Bool {
        let start = reader.offset
        switch OperationCode(rawValue: try reader.readByte()) {
        case .set, .setDefault:
            _ = try reader.readLengthPrefixed()
            try ValueEncoding.skip(from: &reader)
            return true
        case .remove:
            _ = try reader.readLengthPrefixed()
        case .removeAll:
            break
        case nil:
            throw FormatError(reason: "unknown operation", offset: start)
        }
        return false
    }

    private enum Verification {
        case verified(end: Int)
        case incomplete
        case invalid(FormatError)
    }

    /// Checks the framing, the fixed fields and the checksum of the record at `offset`.
    private static func verify(_ buffer: UnsafeRawBufferPointer, at offset: Int, limit: Int) -> Verification {
        let end: Int
        switch framedEnd(buffer, at: offset, limit: limit) {
        case .record(let framed, _): end = framed
        case .incomplete: return .incomplete
        case .invalid(let error): return .invalid(error)
        }
        if end > limit { return .incomplete }
        // The checks that need no checksum first: the checksum costs the whole record.
        if let problem = headerProblem(buffer, at: offset) { return .invalid(problem) }
        let stored = UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: end - 4, as: UInt32.self))
        let computed = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: buffer[(offset + 4)..<(end - 4)]))
        guard stored == computed else {
            return .invalid(FormatError(reason: "record checksum mismatch", offset: offset))
        }
        return .verified(end: end)
    }

    /// Where the record at `offset` ends by its framing alone (its magic and payload
    /// length), whether or not its bytes are all before `limit`: `.incomplete` when
    /// fewer than `overhead` bytes are, `.invalid` when no record starts there.
    static func framedEnd(_ buffer: UnsafeRawBufferPointer, at offset: Int, limit: Int) -> ParseOutcome<Int> {
        let available = limit - offset
        for index in 0..<min(4, max(available, 0)) where buffer[offset + index] != magicBytes[index] {
            return .invalid(FormatError(reason: "no record starts here", offset: offset))
        }
        if available < overhead { return .incomplete }
        let payloadLength = Int(buffer.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self).littleEndian)
        let end = offset + overhead + payloadLength
        return .record(end, end: end)
    }

    /// What is wrong with the fixed fields of a record header (at least `overhead`
    /// bytes at `offset`), if anything: an unknown kind, a flag this library does not
    /// know, a sequence number beyond the limit.
    static func headerProblem(_ buffer: UnsafeRawBufferPointer, at offset: Int) -> FormatError? {
        let sequence = UInt64(littleEndian: buffer.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self))
        let kind = UInt16(littleEndian: buffer.loadUnaligned(fromByteOffset: offset + 28, as: UInt16.self))
        let flags = Record.Flags(rawValue: UInt16(littleEndian: buffer.loadUnaligned(fromByteOffset: offset + 30, as: UInt16.self)))
        if Record.Kind(rawValue: kind) == nil { return FormatError(reason: "unknown record kind \(kind)", offset: offset) }
        if !flags.isSubset(of: .known) { return FormatError(reason: "unknown record flags \(flags.rawValue)", offset: offset) }
        if sequence > FormatLimits.maximumSequence {
            return FormatError(reason: "sequence number \(sequence) is beyond the limit \(FormatLimits.maximumSequence)", offset: offset)
        }
        return nil
    }

    /// Decodes a verified record, handing each operation to `visit` in order.
    private static func decode(_ buffer: UnsafeRawBufferPointer, at offset: Int, end: Int,
                               _ visit: (Operation) -> Void) throws(FormatError) -> Fields {
        var reader = ByteReader(buffer, from: offset, to: end - 4)
        let fields = try decodeFields(from: &reader)
        while !reader.isAtEnd { visit(try decodeOperation(from: &reader, in: fields.kind)) }
        return fields
    }

    /// Reads the fixed fields of the record whose header starts at the reader.
    static func decodeFields(from reader: inout ByteReader) throws(FormatError) -> Fields {
        let offset = reader.offset
        _ = try reader.readBytes(8)  // the magic and the payload length, checked by `verify`
        let sequence = try reader.read(UInt64.self)
        let timestamp = try reader.read(Int64.self)
        let pid = try reader.read(Int32.self)
        let rawKind = try reader.read(UInt16.self)
        let flags = Record.Flags(rawValue: try reader.read(UInt16.self))
        guard let kind = Record.Kind(rawValue: rawKind) else {
            throw FormatError(reason: "unknown record kind \(rawKind)", offset: offset)
        }
        return Fields(kind: kind, sequence: sequence, timestamp: timestamp, pid: pid, flags: flags)
    }

    /// Reads one operation of a record of `kind` (a snapshot holds only sets).
    static func decodeOperation(from reader: inout ByteReader, in kind: Record.Kind) throws(FormatError) -> Operation {
        let start = reader.offset
        let rawCode = try reader.readByte()
        switch OperationCode(rawValue: rawCode) {
        case let code? where code == .set || code == .setDefault:
            let key = try reader.readKey()
            let valueStart = reader.offset
            let value = try ValueEncoding.decode(from: &reader)
            return .set(key: key, value: value, size: reader.offset - valueStart, asDefault: code == .setDefault)
        case .remove where kind == .transaction:
            return .remove(key: try reader.readKey())
        case .removeAll where kind == .transaction:
            return .removeAll
        default:
            throw FormatError(reason: "operation \(rawCode) is not valid in this record", offset: start)
        }
    }
}
