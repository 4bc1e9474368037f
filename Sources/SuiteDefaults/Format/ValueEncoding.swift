#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The binary encoding of a `SuiteValue`: a one-byte tag, then the payload.
/// `Docs/FileFormat.md` specifies it byte by byte.
enum ValueEncoding {
    enum Tag: UInt8 {
        case string = 1, integer = 2, double = 3, boolFalse = 4, boolTrue = 5
        case data = 6, date = 7, array = 8, dictionary = 9, json = 10
    }

    /// Arrays and dictionaries nest at most this deep, so decoding cannot exhaust the stack.
    static let maximumDepth = 64

    /// Why a value cannot be stored, found before it is encoded.
    struct Problem: Error {
        var reason: String
    }

    /// The encoded size of `value`, after checking that it can be stored: every
    /// number finite and the nesting within `maximumDepth`.
    static func measure(_ value: SuiteValue, depth: Int = 0) throws(Problem) -> Int {
        guard depth <= maximumDepth else {
            throw Problem(reason: "arrays and dictionaries nest more than \(maximumDepth) levels deep")
        }
        switch value {
        case .string(let string):
            let count = string.utf8.count
            return 1 + ByteWriter.varintSize(UInt64(count)) + count
        case .integer:
            return 9
        case .double(let number):
            guard number.isFinite else { throw Problem(reason: "\(number) is not a finite number; NaN and infinities cannot be stored") }
            return 9
        case .date(let date):
            guard date.timeIntervalSinceReferenceDate.isFinite else { throw Problem(reason: "the date is not finite") }
            return 9
        case .bool:
            return 1
        case .data(let data):
            return 1 + ByteWriter.varintSize(UInt64(data.count)) + data.count
        case .json(let data):
            guard (try? JSONParser.parse([UInt8](data))) != nil else { throw Problem(reason: "the encoded value is not valid JSON") }
            return 1 + ByteWriter.varintSize(UInt64(data.count)) + data.count
        case .array(let elements):
            var size = 1 + ByteWriter.varintSize(UInt64(elements.count))
            for element in elements { size += try measure(element, depth: depth + 1) }
            return size
        case .dictionary(let entries):
            var size = 1 + ByteWriter.varintSize(UInt64(entries.count))
            for (key, element) in entries {
                let keyCount = key.utf8.count
                size += ByteWriter.varintSize(UInt64(keyCount)) + keyCount + (try measure(element, depth: depth + 1))
            }
            return size
        }
    }

    static func encode(_ value: SuiteValue, into writer: inout ByteWriter) {
        switch value {
        case .string(let string):
            writer.append(Tag.string.rawValue)
            writer.appendLengthPrefixed(string)
        case .integer(let number):
            writer.append(Tag.integer.rawValue)
            writer.append(littleEndian: Int64(number))
        case .double(let number):
            writer.append(Tag.double.rawValue)
            writer.append(littleEndian: number.bitPattern)
        case .bool(let flag):
            writer.append(flag ? Tag.boolTrue.rawValue : Tag.boolFalse.rawValue)
        case .data(let data):
            writer.append(Tag.data.rawValue)
            writer.appendLengthPrefixed(data)
        case .date(let date):
            writer.append(Tag.date.rawValue)
            writer.append(littleEndian: date.timeIntervalSinceReferenceDate.bitPattern)
        case .array(let elements):
            writer.append(Tag.array.rawValue)
            writer.appendVarint(UInt64(elements.count))
            for element in elements { encode(element, into: &writer) }
        case .dictionary(let entries):
            writer.append(Tag.dictionary.rawValue)
            writer.appendVarint(UInt64(entries.count))
            // Sorted, so that equal dictionaries always encode to equal bytes.
            for key in entries.keys.sorted() {
                writer.appendLengthPrefixed(key)
                encode(entries[key]!, into: &writer)
            }
        case .json(let data):
            writer.append(Tag.json.rawValue)
            writer.appendLengthPrefixed(data)
        }
    }

    /// Moves past one encoded value without making it, checking only its framing.
    static func skip(from reader: inout ByteReader, depth: Int = 0) throws(FormatError) {
        let start = reader.offset
        guard depth <= maximumDepth else { throw FormatError(reason: "values nest too deeply", offset: start) }
        switch Tag(rawValue: try reader.readByte()) {
        case .string, .data, .json:
            _ = try reader.readLengthPrefixed()
        case .integer, .double, .date:
            _ = try reader.readBytes(8)
        case .boolFalse, .boolTrue:
            break
        case .array:
            for _ in 0..<(try reader.readCount()) { try skip(from: &reader, depth: depth + 1) }
        case .dictionary:
            for _ in 0..<(try reader.readCount(minimumSize: 2)) {
                _ = try reader.readLengthPrefixed()
                try skip(from: &reader, depth: depth + 1)
            }
        case nil:
            throw FormatError(reason: "unknown value tag", offset: start)
        }
    }

    static func decode(from reader: inout ByteReader, depth: Int = 0) throws(FormatError) -> SuiteValue {
        let start = reader.offset
        guard depth <= maximumDepth else { throw FormatError(reason: "values nest too deeply", offset: start) }
        let rawTag = try reader.readByte()
        guard let tag = Tag(rawValue: rawTag) else {
            throw FormatError(reason: "unknown value tag \(rawTag)", offset: start)
        }
        switch tag {
        case .string:
            return .string(try reader.readString())
        case .integer:
            return .integer(Int(try reader.read(Int64.self)))
        case .double:
            let number = Double(bitPattern: try reader.read(UInt64.self))
            guard number.isFinite else { throw FormatError(reason: "number is not finite", offset: start) }
            return .double(number)
        case .boolFalse:
            return .bool(false)
        case .boolTrue:
            return .bool(true)
        case .data:
            return .data(Data(try reader.readLengthPrefixed()))
        case .date:
            let interval = Double(bitPattern: try reader.read(UInt64.self))
            guard interval.isFinite else { throw FormatError(reason: "date is not finite", offset: start) }
            return .date(Date(timeIntervalSinceReferenceDate: interval))
        case .array:
            let count = try reader.readCount()
            var elements: [SuiteValue] = []
            elements.reserveCapacity(count)
            for _ in 0..<count { elements.append(try decode(from: &reader, depth: depth + 1)) }
            return .array(elements)
        case .dictionary:
            let count = try reader.readCount(minimumSize: 2)
            var entries: [String: SuiteValue] = [:]
            entries.reserveCapacity(count)
            for _ in 0..<count {
                let keyStart = reader.offset
                let key = try reader.readString()
                // A key twice (or with its canonical twin) would be one entry, and the
                // value would no longer encode to the size read, which a compaction
                // trusts.
                guard entries.updateValue(try decode(from: &reader, depth: depth + 1), forKey: key) == nil else {
                    throw FormatError(reason: "dictionary holds the key \"\(key)\" twice", offset: keyStart)
                }
            }
            return .dictionary(entries)
        case .json:
            return .json(Data(try reader.readLengthPrefixed()))
        }
    }
}
