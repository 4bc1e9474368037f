import Glibc

/// The processes that hold an `flock` on a file, as `/proc/locks` lists them: for
/// naming the holder in a `.lockTimeout` error. Lines read
/// "1: FLOCK  ADVISORY  WRITE 1234 fd:01:123456 0 EOF" (device in hex, inode in
/// decimal); a waiter's line has "->" and is skipped.
enum LockHolders {
    static func pids(holding file: FileStatus) -> [Int32] {
        let major = (file.device >> 8) & 0xFFF | (file.device >> 32) & ~0xFFF
        let minor = file.device & 0xFF | (file.device >> 12) & ~0xFF
        let target = hex2(major) + ":" + hex2(minor) + ":" + String(file.inode)
        guard let text = readProcLocks() else { return [] }
        return pids(in: text, holding: target)
    }

    /// The holders of `target` ("MAJOR:MINOR:INODE") in the text of /proc/locks, each
    /// once: a list read in several pieces while other locks come and go may show a
    /// line twice (seq_file reads on from an offset into a list that moved).
    static func pids(in text: String, holding target: String) -> [Int32] {
        var pids: [Int32] = []
        for line in text.split(separator: "\n") where !line.contains("->") {
            let fields = line.split(separator: " ")
            guard fields.count >= 6, fields[1] == "FLOCK", fields[5] == target, let pid = Int32(fields[4]),
                  !pids.contains(pid)
            else { continue }
            pids.append(pid)
        }
        return pids
    }

    private static func hex2(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return digits.count < 2 ? "0" + digits : digits
    }

    private static func readProcLocks() -> String? {
        guard let descriptor = try? FileDescriptor.open("/proc/locks", in: nil, flags: O_RDONLY, pathForErrors: "/proc/locks")
        else { return nil }
        defer { descriptor.close() }
        return (try? descriptor.readToEnd(limit: 4 << 20)).map { String(decoding: $0, as: UTF8.self) }
    }
}
