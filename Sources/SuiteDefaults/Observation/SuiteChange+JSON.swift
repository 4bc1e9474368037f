#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension SuiteChange {
    /// The change as one line of JSON: `time`, `suite`, `key`, `old`, `new` (plain
    /// JSON values, `null` when absent; Data as base64, dates as ISO 8601 strings),
    /// `seq`, `pid` (`null` when unknown), `kind` (`commit`, `net` or `initial`), and
    /// `default` and `mirrored` when true.
    @_spi(Tools) public func jsonText() -> String {
        let kindName = switch kind {
        case .commit: "commit"
        case .netChange: "net"
        case .initialValue: "initial"
        }
        var fields: [(key: String, value: JSONNode)] = [
            ("time", .string(ISO8601.format(timestamp))),
            ("suite", .string(suite)),
            ("key", .string(key)),
            ("old", oldValue?.jsonNode(style: .plain) ?? .null),
            ("new", newValue?.jsonNode(style: .plain) ?? .null),
            ("seq", .number(String(sequence))),
            ("pid", pid == 0 ? .null : .number(String(pid))),
            ("kind", .string(kindName)),
        ]
        if isDefault { fields.append(("default", .bool(true))) }
        if isMirrored { fields.append(("mirrored", .bool(true))) }
        return JSONNode.object(fields).text
    }
}
