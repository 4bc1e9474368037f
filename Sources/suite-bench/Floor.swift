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

    /// The system calls of one of our commits, and nothing else: the exclusive `flock`
    /// (not waited for), a read of an inotify instance that watches both files and has
    /// nothing queued (what tells a writer that neither file changed behind its back),
    /// `lseek` to the data file's end, a 100-byte `pwrite` there, unlock. What a set
    /// costs beyond them is the library's own work.
    static func commitSystemCalls(_ count: Int, in directory: URL) -> Samples {
        let lockPath = directory.appendingPathComponent("floor.commit.lock").path
        let dataPath = directory.appendingPathComponent("floor.commit.data").path
        let lock = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        let data = open(dataPath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        let events = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        _ = inotify_add_watch(events, lockPath, UInt32(IN_ATTRIB | IN_MODIFY | IN_MOVE_SELF | IN_DELETE_SELF))
        _ = inotify_add_watch(events, dataPath, UInt32(IN_ATTRIB | IN_MOVE_SELF | IN_DELETE_SELF))
        defer { close(events); close(lock); close(data); unlink(lockPath); unlink(dataPath) }
        let record = [UInt8](repeating: 0x61, count: 100)
        var buffer = [UInt8](repeating: 0, count: 512)
        var end = 0
        return measureEach(count, warmUp: 100) { index in
            flock(lock, LOCK_EX | LOCK_NB)
            _ = buffer.withUnsafeMutableBytes { read(events, $0.baseAddress, $0.count) }
            _ = lseek(data, 0, SEEK_END)
            _ = record.withUnsafeBytes { pwrite(data, $0.baseAddress, $0.count, off_t(end)) }
            end += record.count
            flock(lock, LOCK_UN)
            if index % 10_000 == 9_999 {
                ftruncate(data, 0)
                end = 0
            }
        }
    }

    /// One process's share of the contended floor: `count` times, the blocking
    /// `flock`, a read of the 8-byte counter, its increment written back, unlock. The
    /// least an atomic increment across processes under `flock` costs, hand-over
    /// included; returns the counter as this process last wrote it.
    static func incrementUnderLock(_ count: Int, path: String) -> UInt64 {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        defer { close(descriptor) }
        var counter: UInt64 = 0
        for _ in 0..<count {
            flock(descriptor, LOCK_EX)
            counter = 0
            _ = pread(descriptor, &counter, 8, 0)
            counter += 1
            _ = pwrite(descriptor, &counter, 8, 0)
            flock(descriptor, LOCK_UN)
        }
        return counter
    }

    /// The counter that `incrementUnderLock` keeps in `path`.
    static func counter(at path: String) -> UInt64 {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        defer { close(descriptor) }
        var counter: UInt64 = 0
        _ = pread(descriptor, &counter, 8, 0)
        return counter
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
