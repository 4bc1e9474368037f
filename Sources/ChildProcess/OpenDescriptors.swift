import Glibc

/// This process's open descriptors, as /proc/self/fd shows them: for tests and
/// workers that look for what the library holds open (its inotify instances, its
/// timers), which it shows nowhere else. Plain system calls only, no Foundation, so
/// that a forked child of a process with threads can ask too.
public enum OpenDescriptors {
    /// The numbers of the descriptors that lead to `target` (a path, or a kind of
    /// anonymous inode such as "anon_inode:[timerfd]").
    public static func leading(to target: String) -> [Int32] {
        var found: [Int32] = []
        guard let directory = opendir("/proc/self/fd") else { return [] }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let number = Int32(name) else { continue }
            var link = [CChar](repeating: 0, count: 256)
            let length = readlink("/proc/self/fd/\(name)", &link, 255)
            if length > 0, String(decoding: link[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) == target { found.append(number) }
        }
        return found.sorted()
    }

    /// The inotify instances, with how many watches each has (its lines in
    /// /proc/self/fdinfo).
    public static func inotifyInstances() -> [(number: Int32, watches: Int)] {
        leading(to: "anon_inode:inotify").map { number in
            (number, fdinfo(number).split(separator: "\n").filter { $0.hasPrefix("inotify wd:") }.count)
        }
    }

    private static func fdinfo(_ number: Int32) -> String {
        let descriptor = open("/proc/self/fdinfo/\(number)", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return "" }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            bytes += chunk[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
