import Glibc

/// The inotify calls the change watcher makes: one instance per process, watches on
/// directories, and a blocking read of events.
enum Inotify {
    /// A new instance, close-on-exec.
    static func open() throws -> CInt {
        try retryingInterrupts("inotify_init1") { inotify_init1(Int32(IN_CLOEXEC)) }
    }

    /// Watches the directory at `path` for `mask`; returns the watch descriptor.
    static func watch(_ instance: CInt, path: String, mask: UInt32) throws -> Int32 {
        try retryingInterrupts("inotify_add_watch", path: path) { inotify_add_watch(instance, path, mask) }
    }

    static func removeWatch(_ instance: CInt, _ watch: Int32) {
        _ = inotify_rm_watch(instance, watch)
    }

    /// Blocks until events arrive and reads as many as fit; nil once the instance
    /// fails (it was closed).
    static func read(_ instance: CInt, into buffer: UnsafeMutableRawPointer, capacity: Int) -> Int? {
        try? retryingInterrupts("read") { Glibc.read(instance, buffer, capacity) }
    }

    static func close(_ instance: CInt) {
        _ = Glibc.close(instance)
    }
}
