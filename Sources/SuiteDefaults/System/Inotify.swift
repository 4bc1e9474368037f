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

    /// Waits until events can be read, at most `timeout`; whether they can.
    static func wait(_ instance: CInt, timeout: Duration) -> Bool {
        var entry = pollfd(fd: instance, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(clamping: timeout.wholeNanoseconds / 1_000_000)
        let ready = (try? retryingInterrupts("poll") { poll(&entry, 1, milliseconds) }) ?? 0
        return ready > 0
    }

    static func close(_ instance: CInt) {
        _ = Glibc.close(instance)
    }
}
