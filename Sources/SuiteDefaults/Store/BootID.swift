import Foundation

/// The kernel's random ID for the current boot. The shared header records it, so the
/// first process after a reboot knows not to trust a header that may have been
/// written to disk out of step with the data file.
enum BootID {
    static let current: (UInt64, UInt64) = read()

    private static func read() -> (UInt64, UInt64) {
        let text = (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)) ?? ""
        let hex = text.filter(\.isHexDigit)
        guard hex.count == 32 else { return (0, 0) }
        return (UInt64(hex.prefix(16), radix: 16) ?? 0, UInt64(hex.suffix(16), radix: 16) ?? 0)
    }
}
