import CSuiteDefaults
import Foundation
import Glibc

/// The bare system calls that give the same guarantee as a row, written directly
/// against Glibc: how fast the job can be done at all on this machine.
enum Floor {
    /// flock, a 100-byte append, unlock: a write other processes see, under a lock.
    static func appendUnderLock(_ count: Int, in directory: URL, sync: Bool = false) -> Samples {
        let path = directory.appendingPathComponent("floor.append").path
        let descriptor = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        defer { close(descriptor); unlink(path) }
        let line = [UInt8](repeating: 0x61, count: 100)
        return measureEach(count, warmUp: 100) { index in
            flock(descriptor, LOCK_EX)
            _ = line.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if sync { fdatasync(descriptor) }
            flock(descriptor, LOCK_UN)
            if index % 10_000 == 9_999 { ftruncate(descriptor, 0) }
        }
    }

    /// An 8-byte acquire load from a MAP_SHARED page: a freshness check.
    static func sharedLoad(batches: Int, in directory: URL) -> Samples {
        let path = directory.appendingPathComponent("floor.map").path
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        ftruncate(descriptor, 4096)
        let page = mmap(nil, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0)!
        defer { munmap(page, 4096); close(descriptor); unlink(path) }
        let word = page.assumingMemoryBound(to: UInt64.self)
        var sink: UInt64 = 0
        let samples = measureBatches(batches, of: 10_000) { _ in sink &+= sd_atomic_load_acquire(word) }
        withExtendedLifetime(sink) {}
        return samples
    }

    /// open, fstat, pread of the whole file, close: the least a first read must do.
    static func openAndRead(_ count: Int, path: String) -> Samples {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        return measureEach(count, warmUp: 10) { _ in
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            var status = stat()
            fstat(descriptor, &status)
            _ = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, min($0.count, Int(status.st_size)), 0) }
            close(descriptor)
        }
    }
}
