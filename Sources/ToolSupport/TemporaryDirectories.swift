import Foundation
import Glibc

/// Creates a new directory PREFIX.XXXXXX (mkdtemp) in `parent`, by default the
/// system's temporary directory, creating `parent` first when it is missing.
///
/// - Throws: `ToolError` with status 2 (the place asked for cannot take a directory),
///   naming the reason.
public func makeTemporaryDirectory(prefix: String, in parent: URL? = nil) throws(ToolError) -> URL {
    let parent = parent ?? URL(fileURLWithPath: NSTemporaryDirectory(), isDirectory: true)
    try? FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
    // appendingPathComponent, not string concatenation: NSTemporaryDirectory() ends with "/".
    var template = Array(parent.appendingPathComponent("\(prefix).XXXXXX").path.utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
        throw .usage("cannot create a directory in \(parent.path): \(String(cString: strerror(errno)))")
    }
    return URL(fileURLWithPath: String(cString: made), isDirectory: true)
}
