/// A parsed JSON document. Numbers keep their text, so that nothing is lost to
/// binary floating point on the way through (a `Decimal` stays exact).
/// `Sendable` is declared: the Swift 6.3 compiler, inferring it for this recursive
/// enum, can run into a cycle when a file is compiled on its own.
enum JSONNode: Equatable, Sendable {
    case object([(key: String, value: JSONNode)])
    case array([JSONNode])
    case string(String)
    case number(String)
    case bool(Bool)
    case null
    /// A value kept as the valid JSON text it was read from or is to be written as,
    /// byte for byte: how embedded JSON passes through export and import unchanged.
    case verbatim(String)

    static func == (lhs: JSONNode, rhs: JSONNode) -> Bool {
        switch (lhs, rhs) {
        case (.object(let a), .object(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        case (.array(let a), .array(let b)): a == b
        case (.string(let a), .string(let b)), (.number(let a), .number(let b)), (.verbatim(let a), .verbatim(let b)): a == b
        case (.bool(let a), .bool(let b)): a == b
        case (.null, .null): true
        default: false
        }
    }

    /// JSON text: compact when `indent` is nil, else one member per line.
    func write(to output: inout String, indent: String? = nil) {
        let inner = indent.map { $0 + "  " }
        let separator = inner.map { ",\n" + $0 } ?? ","
        switch self {
        case .object(let members):
            guard !members.isEmpty else { output += "{}"; return }
            output += "{" + (inner.map { "\n" + $0 } ?? "")
            for (index, member) in members.enumerated() {
                if index > 0 { output += separator }
                JSONNode.writeString(member.key, to: &output)
                output += inner == nil ? ":" : ": "
                member.value.write(to: &output, indent: inner)
            }
            output += (indent.map { "\n" + $0 } ?? "") + "}"
        case .array(let elements):
            guard !elements.isEmpty else { output += "[]"; return }
            output += "[" + (inner.map { "\n" + $0 } ?? "")
            for (index, element) in elements.enumerated() {
                if index > 0 { output += separator }
                element.write(to: &output, indent: inner)
            }
            output += (indent.map { "\n" + $0 } ?? "") + "]"
        case .string(let string):
            JSONNode.writeString(string, to: &output)
        case .number(let text), .verbatim(let text):
            output += text
        case .bool(let flag):
            output += flag ? "true" : "false"
        case .null:
            output += "null"
        }
    }

    var text: String { text(pretty: false) }

    func text(pretty: Bool) -> String {
        var output = ""
        write(to: &output, indent: pretty ? "" : nil)
        return output
    }

    static func writeString(_ string: String, to output: inout String) {
        output += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default:
                output.unicodeScalars.append(scalar)
            }
        }
        output += "\""
    }
}

/// A strict RFC 8259 parser, with a depth limit so that no input exhausts the stack.
struct JSONParser {
    struct Failure: Error, CustomStringConvertible {
        var reason: String
        var offset: Int
        var description: String { "\(reason) at byte \(offset)" }
    }

    private let bytes: [UInt8]
    private let verbatimKey: String?
    private var position = 0
    private static let maximumDepth = 512

    /// Parses `text`; the value of every object member named `verbatimKey` is checked
    /// and then kept as its text, `.verbatim`.
    static func parse(_ text: String, verbatimKey: String? = nil) throws -> JSONNode {
        try parse(Array(text.utf8), verbatimKey: verbatimKey)
    }

    static func parse(_ bytes: [UInt8], verbatimKey: String? = nil) throws -> JSONNode {
        var parser = JSONParser(bytes: bytes, verbatimKey: verbatimKey)
        parser.skipWhitespace()
        let node = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.position == bytes.count else { throw parser.failure("unexpected text after the JSON value") }
        return node
    }

    private init(bytes: [UInt8], verbatimKey: String?) {
        self.bytes = bytes
        self.verbatimKey = verbatimKey
    }

    private func failure(_ reason: String) -> Failure { Failure(reason: reason, offset: position) }

    private var current: UInt8? { position < bytes.count ? bytes[position] : nil }

    /// Space, line feed, carriage return or tab: RFC 8259's whitespace.
    static func isWhitespace(_ byte: UInt8?) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    private mutating func skipWhitespace() {
        while Self.isWhitespace(current) { position += 1 }
    }

    private mutating func expect(_ literal: String) throws {
        for byte in literal.utf8 {
            guard current == byte else { throw failure("expected \(literal)") }
            position += 1
        }
    }

    private mutating func value(depth: Int) throws -> JSONNode {
        guard depth < Self.maximumDepth else { throw failure("nesting too deep") }
        switch current {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "n"): try expect("null"); return .null
        case .some(let byte) where byte == UInt8(ascii: "-") || (0x30...0x39).contains(byte): return .number(try number())
        case .none: throw failure("unexpected end of text")
        default: throw failure("unexpected character")
        }
    }

    private mutating func object(depth: Int) throws -> JSONNode {
        position += 1
        var members: [(key: String, value: JSONNode)] = []
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            position += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw failure("expected a string key") }
            let key = try string()
            skipWhitespace()
            try expect(":")
            skipWhitespace()
            if key == verbatimKey {
                let start = position
                _ = try value(depth: depth + 1)
                // What was just parsed is valid UTF-8: its strings were checked, the rest is ASCII.
                members.append((key, .verbatim(String(decoding: bytes[start..<position], as: UTF8.self))))
            } else {
                members.append((key, try value(depth: depth + 1)))
            }
            skipWhitespace()
            if current == UInt8(ascii: ",") { position += 1; continue }
            try expect("}")
            return .object(members)
        }
    }

    private mutating func array(depth: Int) throws -> JSONNode {
        position += 1
        var elements: [JSONNode] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            position += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try value(depth: depth + 1))
            skipWhitespace()
            if current == UInt8(ascii: ",") { position += 1; continue }
            try expect("]")
            return .array(elements)
        }
    }

    private mutating func number() throws -> String {
        let start = position
        if current == UInt8(ascii: "-") { position += 1 }
        func digits() throws {
            guard let byte = current, (0x30...0x39).contains(byte) else { throw failure("expected a digit") }
            while let byte = current, (0x30...0x39).contains(byte) { position += 1 }
        }
        if current == UInt8(ascii: "0") { position += 1 } else { try digits() }
        if current == UInt8(ascii: ".") {
            position += 1
            try digits()
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            position += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { position += 1 }
            try digits()
        }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    private mutating func string() throws -> String {
        position += 1
        var scalars = String.UnicodeScalarView()
        var run = position
        func flush(_ end: Int) throws {
            guard let text = bytes[run..<end].withUnsafeBytes(UTF8Text.string) else { throw failure("invalid UTF-8") }
            scalars.append(contentsOf: text.unicodeScalars)
        }
        while true {
            guard let byte = current else { throw failure("unterminated string") }
            if byte == UInt8(ascii: "\"") {
                try flush(position)
                position += 1
                return String(scalars)
            }
            if byte < 0x20 { throw failure("control character in a string") }
            if byte != UInt8(ascii: "\\") {
                position += 1
                continue
            }
            try flush(position)
            position += 1
            guard let escape = current else { throw failure("unterminated escape") }
            position += 1
            switch escape {
            case UInt8(ascii: "\""): scalars.append("\"")
            case UInt8(ascii: "\\"): scalars.append("\\")
            case UInt8(ascii: "/"): scalars.append("/")
            case UInt8(ascii: "b"): scalars.append("\u{08}")
            case UInt8(ascii: "f"): scalars.append("\u{0C}")
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "u"):
                var code = try hexQuad()
                if (0xD800..<0xDC00).contains(code) {
                    try expect("\\u")
                    let low = try hexQuad()
                    guard (0xDC00..<0xE000).contains(low) else { throw failure("unpaired surrogate") }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let scalar = Unicode.Scalar(code) else { throw failure("invalid \\u escape") }
                scalars.append(scalar)
            default:
                throw failure("invalid escape")
            }
            run = position
        }
    }

    /// Exactly four hex digits (`UInt32(_:radix:)` would also take a sign).
    private mutating func hexQuad() throws -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            let digit: UInt32 = switch current {
            case .some(let byte) where (0x30...0x39).contains(byte): UInt32(byte - 0x30)
            case .some(let byte) where (0x41...0x46).contains(byte): UInt32(byte - 0x41 + 10)
            case .some(let byte) where (0x61...0x66).contains(byte): UInt32(byte - 0x61 + 10)
            default: throw failure("invalid \\u escape")
            }
            value = value << 4 | digit
            position += 1
        }
        return value
    }
}
