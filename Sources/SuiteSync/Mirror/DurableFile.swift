import Foundation
import Glibc

/// The mirror's few system calls on its state files: reading one whole, and replacing
/// one atomically and durably (a temporary file written and synced, renamed over the
/// old one, and the directory synced), so that a process killed at any instant leaves
/// either the old file or the new one, never a torn one.
enum DurableFile {
    struct Failure: Error, CustomStringConvertible {
        let action: String
        let path: String
        let code: Int32
        var description: String { "cannot \(action) \(path): \(String(cString: strerror(code)))" }
    }

    /// The file's bytes; nil when it does not exist.
    static func read(_ path: String, limit: Int = 256 << 20) throws(Failure) -> Data? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if descriptor < 0 {
            if errno == ENOENT { return nil }
            throw Failure(action: "open", path: path, code: errno)
        }
        defer { close(descriptor) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw Failure(action: "read", path: path, code: errno)
            }
            if count == 0 { return data }
            data.append(contentsOf: buffer[0..<count])
            if data.count > limit { throw Failure(action: "read (too large)", path: path, code: EFBIG) }
        }
    }

    /// Replaces the file at `path` with `data`, owner-only (0600).
    static func replace(_ path: String, with data: Data) throws(Failure) {
        let temporary = path + ".tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw Failure(action: "create", path: temporary, code: errno) }
        var failure: Failure?
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = Failure(action: "write", path: temporary, code: errno)
                    return
                }
                offset += written
            }
        }
        if failure == nil && fsync(descriptor) != 0 { failure = Failure(action: "sync", path: temporary, code: errno) }
        close(descriptor)
        if let failure {
            unlink(temporary)
            throw failure
        }
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw Failure(action: "rename into", path: path, code: code)
        }
        let directory = (path as NSString).deletingLastPathComponent
        let directoryDescriptor = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directoryDescriptor >= 0 else { throw Failure(action: "open", path: directory, code: errno) }
        defer { close(directoryDescriptor) }
        guard fsync(directoryDescriptor) == 0 else { throw Failure(action: "sync", path: directory, code: errno) }
    }
}
