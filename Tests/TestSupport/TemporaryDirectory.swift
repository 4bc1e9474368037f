import Foundation
import Glibc
import ToolSupport

/// A fresh directory under the system's temporary directory, removed with all its
/// contents when the test ends. Every suite a test touches lives in one.
public final class TemporaryDirectory: Sendable {
    public let url: URL
    public var path: String { url.path }

    public init(_ label: String = "suite-defaults-test") {
        do {
            url = try makeTemporaryDirectory(prefix: label)
        } catch {
            preconditionFailure(error.message)
        }
    }

    public func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    public func bytes(of name: String) -> [UInt8]? {
        (try? Data(contentsOf: file(name))).map { [UInt8]($0) }
    }

    public func write(_ bytes: [UInt8], to name: String) throws {
        try Data(bytes).write(to: file(name))
    }

    public func names() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    deinit {
        // Tests may have made parts read-only or given them away; take them back first.
        _ = chmod(path, 0o700)
        try? FileManager.default.removeItem(at: url)
    }
}
