import Foundation
@_spi(Tools) import SuiteDefaults

/// How suites map onto etcd keys: `PREFIX/SUITE/KEY`, and the checks on what comes
/// back from etcd.
struct MirrorKeys {
    /// The prefix without a trailing slash.
    let prefix: String

    init(prefix: String) {
        var prefix = prefix
        while prefix.hasSuffix("/") { prefix.removeLast() }
        self.prefix = prefix
    }

    /// Every key the mirror reads or watches: `PREFIX/`.
    var watchedPrefix: Data { Data((prefix + "/").utf8) }

    func etcdKey(suite: String, key: String) -> Data { Data("\(prefix)/\(suite)/\(key)".utf8) }

    enum Parsed {
        /// A key of a suite; its value is still to be checked.
        case key(suite: String, key: String)
        /// Not `PREFIX/SUITE/KEY` with a valid suite name and key.
        case invalid(suite: String?, shown: String, reason: String)
    }

    /// The suite and key that an etcd key under the prefix names.
    func parse(_ bytes: Data) -> Parsed {
        guard let text = String(data: bytes, encoding: .utf8), !text.contains("\u{FFFD}") else {
            return .invalid(suite: nil, shown: "(\(bytes.count) bytes, not UTF-8)", reason: "the key is not UTF-8")
        }
        let shown = String(text.unicodeScalars.map { $0.properties.generalCategory == .control ? "?" : Character($0) }.prefix(300))
        guard text.hasPrefix(prefix + "/") else { return .invalid(suite: nil, shown: shown, reason: "outside the prefix") }
        let rest = text.dropFirst(prefix.count + 1)
        guard let slash = rest.firstIndex(of: "/") else {
            return .invalid(suite: nil, shown: shown, reason: "not PREFIX/SUITE/KEY")
        }
        let suite = String(rest[..<slash])
        let key = String(rest[rest.index(after: slash)...])
        if let reason = Self.refusal(of: suite, as: "suite name", Suite.validate(name:)) {
            return .invalid(suite: nil, shown: shown, reason: reason)
        }
        if let reason = Self.refusal(of: key, as: "suite key", Suite.validate(key:)) {
            return .invalid(suite: suite, shown: shown, reason: reason)
        }
        return .key(suite: suite, key: key)
    }

    /// Why `text` from etcd is refused as a suite name or key (`what`): `validate` refuses
    /// it, or it is not in Unicode NFC (the library would store it normalized, under another
    /// key than etcd's); nil when it is accepted.
    private static func refusal(of text: String, as what: String, _ validate: (String) throws -> Void) -> String? {
        guard (try? validate(text)) != nil else { return "not a valid \(what)" }
        guard Array(Suite.normalized(text).utf8) == Array(text.utf8) else {
            return "the \(what) is not in Unicode NFC"
        }
        return nil
    }

    /// The canonical typed JSON text of a value from etcd, or why it is refused. The
    /// reason never quotes the value.
    static func canonicalText(of bytes: Data, maximumValueSize: Int) -> Result<String, ValueRefusal> {
        // Typed JSON of a value of at most maximumValueSize bytes stays well within this.
        guard bytes.count <= 3 * maximumValueSize + 1024 else { return .failure(.tooLarge) }
        guard let text = String(data: bytes, encoding: .utf8) else { return .failure(.notTypedJSON) }
        guard let value = try? SuiteValue(jsonText: text) else { return .failure(.notTypedJSON) }
        return .success(value.jsonText(style: .typed))
    }

    enum ValueRefusal: Error {
        case tooLarge, notTypedJSON, refusedBySuite
        var reason: String {
            switch self {
            case .tooLarge: "the value is over the size limit"
            case .notTypedJSON: "the value is not valid typed JSON"
            case .refusedBySuite: "the suite refuses the value (too large or invalid)"
            }
        }
    }
}
