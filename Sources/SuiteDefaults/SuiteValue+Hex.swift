#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension SuiteValue {
    /// Reads data written as hexadecimal digits, two a byte, as macOS `defaults -data`
    /// takes it: "deadbeef" is the four bytes DE AD BE EF. Upper and lower case are
    /// both read; an empty text is no bytes.
    ///
    /// - Throws: `SuiteError` `.invalidValue` for an odd number of digits or anything
    ///   that is not one (base64 among them, which is not taken for hex by chance).
    @_spi(Tools) public init(parsingHexData text: String) throws {
        guard let data = Data(hexadecimal: text) else {
            let odd = text.utf8.count % 2 == 1 && text.utf8.allSatisfy { Data.hexValue(of: $0) != nil }
            throw SuiteError(.invalidValue, message: odd
                ? "\"\(text)\" has an odd number of hexadecimal digits; data takes two a byte (deadbeef is 4 bytes)."
                : "\"\(text)\" is not hexadecimal data (two of 0-9, a-f or A-F a byte, as in deadbeef).")
        }
        self = .data(data)
    }
}

extension Data {
    /// The bytes as lowercase hexadecimal digits, two a byte: what
    /// `SuiteValue(parsingHexData:)` reads back.
    @_spi(Tools) public var hexText: String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(count * 2)
        for byte in self {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Decodes an even number of hexadecimal digits, or nil.
    init?(hexadecimal text: String) {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = Self.hexValue(of: digits[index]), let low = Self.hexValue(of: digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        self.init(bytes)
    }

    static func hexValue(of digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
