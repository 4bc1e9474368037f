import Foundation
import Glibc
import SuiteDefaults

/// The suite the fitness app and its widgets share, as an App Group would.
public enum FitnessSuite {
    public static let name = "group.com.example.fitness"

    /// Opens the suite in `--dir DIR` when the arguments give one, else in the
    /// default location; removes `--dir DIR` from the arguments.
    public static func open(_ arguments: inout [String]) -> Suite {
        var directory: URL?
        if let index = arguments.firstIndex(of: "--dir") {
            guard index + 1 < arguments.count else { Output.fail("--dir needs a directory", status: 2) }
            directory = URL(fileURLWithPath: arguments[index + 1], isDirectory: true)
            arguments.removeSubrange(index...(index + 1))
        }
        do {
            return try Suite(named: name, directory: directory)
        } catch {
            Output.fail("cannot open the shared preferences: \(error)", status: 3)
        }
    }
}

/// Printing for programs whose output other programs read line by line.
public enum Output {
    /// Writes one line with one write(2), so a pipe sees it at once.
    public static func line(_ text: String, to descriptor: Int32 = STDOUT_FILENO) {
        let whole = text + "\n"
        _ = whole.withCString { write(descriptor, $0, strlen($0)) }
    }

    public static func fail(_ message: String, status: Int32 = 1) -> Never {
        let program = URL(fileURLWithPath: CommandLine.arguments[0]).lastPathComponent
        line("\(program): \(message)", to: STDERR_FILENO)
        exit(status)
    }

    /// CLOCK_MONOTONIC in nanoseconds: one clock for every process of the machine, so
    /// one process's timestamp can be compared with another's.
    public static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}
