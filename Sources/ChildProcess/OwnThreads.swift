import Foundation

/// This process's threads, as /proc/self/task shows them: for tests and workers that
/// count the threads the library starts (which it shows nowhere else).
public enum OwnThreads {
    /// Every thread's name (its `comm`, as `ps` shows it).
    public static func names() -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
            .map { $0.trimmingCharacters(in: .newlines) }
    }

    /// How many threads the process has.
    public static var count: Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0
    }
}
