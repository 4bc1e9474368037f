#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension SuiteChange {
    /// The change as one line of JSON: `time`, `suite`, `key`, `old`, `new` (plain
    /// JSON values, `null` when absent; Data as base64, dates as ISO 8601 strings),
    /// `seq`, `pid` (`null` when unknown), and `kind` (`commit`, `net` or `initial`).
    @_spi(Tools) public func jsonText() -> String {
        let kindName = switch kind {
        case .commit: "commit"
        case .netChange: "net"
        case .initialValue: "initial"
        }
        let node = JSONNode.object([
            ("time", .string(ISO8601.format(timestamp))),
            ("suite", .string(suite)),
            ("key", .string(key)),
            ("old", oldValue?.jsonNode(style: .plain) ?? .null),
            ("new", newValue?.jsonNode(style: .plain) ?? .null),
            ("seq", .number(String(sequence))),
            ("pid", pid == 0 ? .null : .number(String(pid))),
            ("kind", .string(kindName)),
        ])
        return node.text
    }
}
