import Foundation
import Glibc

/// Lines for programs whose output other programs read line by line.
public enum Output {
    /// This program's name, as its messages start.
    public static let programName = URL(fileURLWithPath: CommandLine.arguments.first ?? "tool").lastPathComponent

    /// Writes `text` and a newline to standard output.
    public static func line(_ text: String) { write(text + "\n", to: STDOUT_FILENO) }

    /// Writes `text` and a newline to standard error.
    public static func errorLine(_ text: String) { write(text + "\n", to: STDERR_FILENO) }

    /// Writes `text` with one write(2) where the descriptor takes it whole, so that a
    /// reader of a pipe sees each line at once and lines from several threads stay whole.
    public static func write(_ text: String, to descriptor: Int32) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            offset += written
        }
    }
}
