import Glibc

/// The inotify calls the library makes: the change watcher's (one instance per
/// process, watches on directories, and a blocking read of events) and the file
/// change counter's (watches on files, read without waiting).
enum Inotify {
    /// What a watch asks for, and what an event says.
    struct Mask: OptionSet, Sendable {
        let rawValue: UInt32

        static let modified = Mask(rawValue: UInt32(IN_MODIFY))
        static let created = Mask(rawValue: UInt32(IN_CREATE))
        static let movedTo = Mask(rawValue: UInt32(IN_MOVED_TO))
        static let movedFrom = Mask(rawValue: UInt32(IN_MOVED_FROM))
        static let attributesChanged = Mask(rawValue: UInt32(IN_ATTRIB))
        static let deleted = Mask(rawValue: UInt32(IN_DELETE))
        /// The watched file or directory itself was renamed.
        static let movedSelf = Mask(rawValue: UInt32(IN_MOVE_SELF))
        /// The watched file or directory itself was deleted.
        static let deletedSelf = Mask(rawValue: UInt32(IN_DELETE_SELF))
        /// Watch: only if the path is a directory.
        static let onlyDirectory = Mask(rawValue: UInt32(IN_ONLYDIR))
        /// Watch: add to the mask of an existing watch of the same directory.
        static let addingToExisting = Mask(rawValue: UInt32(bitPattern: IN_MASK_ADD))
        /// Event: the entry named is a directory.
        static let isDirectory = Mask(rawValue: UInt32(bitPattern: IN_ISDIR))
        /// Event: the queue overflowed, and events were lost.
        static let queueOverflowed = Mask(rawValue: UInt32(IN_Q_OVERFLOW))
        /// Event: the watch is gone (removed, or its directory was).
        static let watchRemoved = Mask(rawValue: UInt32(IN_IGNORED))
    }

    /// One event: the watch it came from, what happened, and the name of the entry in
    /// the watched directory (empty for the directory itself).
    struct Event {
        var watch: Int32
        var mask: Mask
        /// The name's bytes, in the buffer the event was read into: valid until the
        /// next read into it. Most events are looked up by them, with no string made.
        var name: UnsafeBufferPointer<UInt8>
        /// The name as a string, for the rare event that needs one.
        var nameString: String { String(decoding: name, as: UTF8.self) }
    }

    /// The size of an event that carries no name (one of a watched file).
    static let eventSize = MemoryLayout<inotify_event>.size

    /// Splits `count` bytes read from an instance into events, appended to `events`
    /// (whose storage a reader keeps from one read to the next).
    static func append(eventsIn buffer: UnsafeRawPointer, count: Int, to events: inout [Event]) {
        var offset = 0
        let headerSize = MemoryLayout<inotify_event>.size
        while offset + headerSize <= count {
            let event = (buffer + offset).loadUnaligned(as: inotify_event.self)
            let nameLength = Int(event.len)
            guard offset + headerSize + nameLength <= count else { break }
            let nameStart = (buffer + offset + headerSize).assumingMemoryBound(to: UInt8.self)
            // The name is padded with NULs to its length.
            let bytes = UnsafeBufferPointer(start: nameStart, count: nameLength)
            let name = UnsafeBufferPointer(rebasing: bytes.prefix { $0 != 0 })
            events.append(Event(watch: event.wd, mask: Mask(rawValue: event.mask), name: name))
            offset += headerSize + nameLength
        }
    }

    /// A new instance, close-on-exec.
    static func open() throws -> CInt {
        try retryingInterrupts("inotify_init1") { inotify_init1(Int32(IN_CLOEXEC)) }
    }

    /// A new instance whose reads never wait, close-on-exec.
    static func openWithoutBlocking() throws -> CInt {
        try retryingInterrupts("inotify_init1") { inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK)) }
    }

    /// Watches what is at `path` for `mask`; returns the watch descriptor.
    static func watch(_ instance: CInt, path: String, mask: Mask) throws -> Int32 {
        try retryingInterrupts("inotify_add_watch", path: path) { inotify_add_watch(instance, path, mask.rawValue) }
    }

    static func removeWatch(_ instance: CInt, _ watch: Int32) {
        _ = inotify_rm_watch(instance, watch)
    }

    /// Blocks until events arrive and reads as many as fit; nil once the instance
    /// fails (it was closed), or the read finds an end of file (the number is another
    /// file's now).
    static func read(_ instance: CInt, into buffer: UnsafeMutableRawPointer, capacity: Int) -> Int? {
        // An instance never ends: an end of file says that its number was given to
        // another file (by code that closed it), which would answer so for good.
        guard let count = try? retryingInterrupts("read", { Glibc.read(instance, buffer, capacity) }), count > 0 else { return nil }
        return count
    }

    /// Reads the events queued now, as many as fit, from an instance opened
    /// `openWithoutBlocking()`: 0 bytes when there are none, nil when the read fails
    /// or finds the end of a file (which an instance never has: the number is not one).
    static func readWithoutWaiting(_ instance: CInt, into buffer: UnsafeMutableRawPointer, capacity: Int) -> Int? {
        // Not through `retryingInterrupts`: nothing queued, the usual answer, is an
        // error there, which would cost every commit an error made and thrown.
        while true {
            let count = Glibc.read(instance, buffer, capacity)
            if count > 0 { return count }
            if count == 0 { return nil }
            switch errno {
            case EINTR: continue
            case EAGAIN: return 0
            default: return nil
            }
        }
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
