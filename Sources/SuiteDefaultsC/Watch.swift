import CSuiteDefaults
import CSuiteDefaultsInterface
import Glibc
@_spi(Tools) import SuiteDefaults

/// An `sd_watch`: the library's observation, with what it delivers queued for
/// `sd_watch_next`, and an eventfd that is readable exactly while the queue is not
/// empty, for the caller's event loop.
final class Watch: @unchecked Sendable {
    /// What the observation delivers, in order.
    private enum Entry {
        case change(SuiteChange)
        case failure(SuiteError)
    }

    /// The eventfd; see `fileDescriptor()`.
    private let descriptor: Int32
    /// The suite watched.
    let suite: Suite
    /// The fork epoch it was opened in. A forked child has the parent's memory and a
    /// copy of the descriptor: draining its copy of the queue would reset the
    /// parent's eventfd, so there it is refused, as the parent's.
    private let epoch = sd_fork_epoch()
    private let lock: UnsafeMutablePointer<sd_thread_lock>
    // Guarded by `lock`:
    private var queue: [Entry] = []
    private var head = 0
    private var isClosed = false
    private var token: SuiteCancellable?
    /// The strings of the change handed out last, freed at the next one.
    private var handedOut: [UnsafeMutablePointer<CChar>] = []

    /// Starts observing `keys` (nil: every key) of `suite`.
    init(suite: Suite, keys: [String]?) throws {
        let descriptor = sd_event_make()
        guard descriptor >= 0 else {
            let reason = String(cString: strerror(errno))
            throw Refusal(errno == ENOMEM ? Status.outOfMemory : Status.of(.ioFailure), "Could not make the watch's eventfd: \(reason).")
        }
        self.descriptor = descriptor
        self.suite = suite
        sd_fork_epoch_start()
        lock = .allocate(capacity: 1)
        lock.initialize(to: sd_thread_lock(word: 0))
        do {
            // Queuing an entry never waits, so it may happen on the change watcher's thread.
            let observation = keys.map { SuiteObservation.keys(named: $0) } ?? .allKeys
            let token = try observation.delivered(on: .watcherThread).start(in: suite, onError: { [weak self] error in
                self?.enqueue(.failure(error))
            }, onChange: { [weak self] change in
                self?.enqueue(.change(change))
            })
            withLock { self.token = token }
        } catch {
            Glibc.close(descriptor)
            throw error
        }
    }

    deinit {
        free(handedOut)
        lock.deinitialize(count: 1)
        lock.deallocate()
    }

    private func withLock<R>(_ body: () throws -> R) rethrows -> R {
        let epoch = sd_thread_lock_acquire(lock)
        defer { sd_thread_lock_release(lock, epoch) }
        return try body()
    }

    /// On the observation's queue: adds an entry and makes the descriptor readable.
    private func enqueue(_ entry: Entry) {
        withLock {
            guard !isClosed else { return }
            queue.append(entry)
            if queue.count - head == 1 { signal() }
        }
    }

    private func signal() {
        sd_event_signal(descriptor)
    }

    /// Refuses a watch that a forked child inherited: it is its parent's.
    private func checkSameProcess() throws {
        guard epoch == sd_fork_epoch() else {
            throw Refusal(Status.invalidHandle, "The watch was opened by the parent process, before fork; a child opens watches of its own.")
        }
    }

    /// The descriptor to poll, readable exactly while changes are queued.
    func fileDescriptor() throws -> Int32 {
        try checkSameProcess()
        return descriptor
    }

    /// Takes the next entry: fills `change` and returns SD_OK, returns SD_NO_CHANGE,
    /// or throws the failure that came in its place. An entry is taken only once its
    /// strings are made, so that none is lost to a failed allocation.
    func next(into change: UnsafeMutablePointer<sd_change>) throws -> sd_status {
        try checkSameProcess()
        return try withLock {
            guard head < queue.count else { return Status.noChange }
            let entry = queue[head]
            var made: [UnsafeMutablePointer<CChar>] = []
            defer { free(made) }
            func string(_ text: String?) throws -> UnsafePointer<CChar>? {
                guard let text else { return nil }
                let string = try COutput.allocated(text)
                made.append(string)
                return UnsafePointer(string)
            }
            var result = change.pointee
            if case .change(let delivered) = entry {
                result = sd_change(
                    key: try string(delivered.key),
                    old_json: try string(delivered.oldValue?.jsonText(style: .typed)),
                    new_json: try string(delivered.newValue?.jsonText(style: .typed)),
                    sequence: delivered.sequence, pid: delivered.pid,
                    kind: Int32(delivered.kind == .netChange ? SD_CHANGE_NET : SD_CHANGE_COMMIT),
                    from_this_process: delivered.isFromThisProcess)
            }
            head += 1
            if head == queue.count {
                // Empty: the descriptor stops being readable until the next entry.
                queue.removeAll(keepingCapacity: true)
                head = 0
                sd_event_reset(descriptor)
            } else if head >= 1024 && head * 2 >= queue.count {
                queue.removeFirst(head)
                head = 0
            }
            switch entry {
            case .failure(let error):
                throw error
            case .change:
                // The strings of the change before are the caller's no longer.
                free(handedOut)
                handedOut = made
                made = []
                change.pointee = result
                return Status.ok
            }
        }
    }

    /// Stops the observation, drops what is queued and closes the descriptor. Nothing
    /// is queued or signalled after this returns.
    func close() {
        let token = withLock {
            isClosed = true
            queue = []
            head = 0
            defer { self.token = nil }
            return self.token
        }
        token?.cancel()
        withLock { _ = Glibc.close(descriptor) }
    }

    private func free(_ strings: [UnsafeMutablePointer<CChar>]) {
        for string in strings { Glibc.free(string) }
    }
}

@_cdecl("sd_watch_open")
public func sd_watch_open(_ suite: OpaquePointer?, _ keys: UnsafePointer<UnsafePointer<CChar>?>?, _ count: UInt,
                          _ watch: UnsafeMutablePointer<OpaquePointer?>?) -> sd_status {
    perform {
        let out = try CInput.required(watch, "the watch handle")
        let suite = try Target.suite(suite)
        var names: [String]?
        if let keys {
            guard count > 0 else { throw Refusal(Status.invalidArgument, "The keys are given with a count of 0; pass NULL to watch every key.") }
            guard count <= UInt(Int32.max) else { throw Refusal(Status.invalidArgument, "The count of keys, \(count), is not plausible.") }
            names = try (0..<Int(count)).map { index in
                let key = try CInput.key(keys[index])
                try Suite.validate(key: key)
                return key
            }
        } else if count > 0 {
            throw Refusal(Status.invalidArgument, "The keys are NULL, with a count of \(count).")
        }
        out.pointee = Handles.watches.add(try Watch(suite: suite, keys: names))
        return Status.ok
    }
}

@_cdecl("sd_watch_fd")
public func sd_watch_fd(_ watch: OpaquePointer?) -> Int32 {
    do {
        return try Handles.watches.object(watch).fileDescriptor()
    } catch let refusal as Refusal {
        setLastError(refusal.message)
        return -1
    } catch {
        return -1
    }
}

@_cdecl("sd_watch_next")
public func sd_watch_next(_ watch: OpaquePointer?, _ change: UnsafeMutablePointer<sd_change>?) -> sd_status {
    perform {
        let change = try CInput.required(change, "the change")
        return try Handles.watches.object(watch).next(into: change)
    }
}

@_cdecl("sd_watch_close")
public func sd_watch_close(_ watch: OpaquePointer?) -> sd_status {
    perform {
        // Stopping an observation takes the suite's lock, which its update callback holds.
        if let open = try watch.map({ try Handles.watches.object($0) }), open.suite.isInsideUpdateOnCurrentThread {
            throw Refusal(Status.invalidArgument, "A watch of the suite \(open.suite.name) was closed inside the suite's own "
                          + "sd_update callback; close it after the callback returns.")
        }
        try Handles.watches.close(watch)?.close()
        return Status.ok
    }
}
