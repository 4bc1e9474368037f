/// The kernel's random ID for the current boot. The shared header records it, so the
/// first process after a reboot knows not to trust a header that may have been
/// written to disk out of step with the data file.
enum BootID {
    static let current: (UInt64, UInt64) = read()

    private static func read() -> (UInt64, UInt64) {
        let path = "/proc/sys/kernel/random/boot_id"
        guard let text = try? FileDescriptor.readContents(ofPath: path, limit: 64) else { return (0, 0) }
        var halves: (UInt64, UInt64) = (0, 0)
        var digits = 0
        for byte in text {
            let value: UInt64
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt64(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = UInt64(byte - UInt8(ascii: "a") + 10)
            default: continue
            }
            if digits < 16 { halves.0 = halves.0 << 4 | value } else if digits < 32 { halves.1 = halves.1 << 4 | value }
            digits += 1
        }
        return digits == 32 ? halves : (0, 0)
    }
}
