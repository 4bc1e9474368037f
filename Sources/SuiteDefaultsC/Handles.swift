import CSuiteDefaults
import CSuiteDefaultsInterface
import SuiteDefaults
import Synchronization

/// The objects behind the C handles. A handle is a number, never the address of
/// an object: a handle that was closed, or never was, is not found, so that using it
/// is a status (SD_INVALID_HANDLE) rather than a use after free. Numbers are never
/// reused.
final class HandleTable<Object: AnyObject>: @unchecked Sendable {
    /// What kind of handle, for messages: "suite", "transaction", "watch".
    let kind: String
    /// The lock (the library's fork-safe one: a child of a forking C program must
    /// not find it held by a thread it does not have) and the objects it guards.
    private let lock: UnsafeMutablePointer<sd_thread_lock>
    private var objects: [UInt: Object] = [:]

    init(kind: String) {
        self.kind = kind
        sd_fork_epoch_start()
        lock = .allocate(capacity: 1)
        lock.initialize(to: sd_thread_lock(word: 0))
    }

    private func withLock<R>(_ body: () -> R) -> R {
        let epoch = sd_thread_lock_acquire(lock)
        defer { sd_thread_lock_release(lock, epoch) }
        return body()
    }

    /// Registers `object` and returns its handle.
    func add(_ object: Object) -> OpaquePointer {
        let number = HandleNumbers.next()
        withLock { objects[number] = object }
        return OpaquePointer(bitPattern: number)!
    }

    /// The object of `handle`; refuses NULL and handles that are not this table's.
    func object(_ handle: OpaquePointer?) throws -> Object {
        guard let handle else { throw Refusal(Status.invalidArgument, "The \(kind) handle is NULL.") }
        let number = UInt(bitPattern: handle)
        guard let object = withLock({ objects[number] }) else {
            throw Refusal(Status.invalidHandle, "The \(kind) handle \(handle) is not open: it was closed, or is not a \(kind) handle.")
        }
        return object
    }

    /// Removes `handle` and returns its object; nil when it was not registered.
    @discardableResult
    func remove(_ handle: OpaquePointer) -> Object? {
        let number = UInt(bitPattern: handle)
        return withLock { objects.removeValue(forKey: number) }
    }

    /// Closes `handle`: removes it and returns its object, refusing it as `object(_:)`
    /// does when it is not open; nil for NULL, which closes nothing.
    func close(_ handle: OpaquePointer?) throws -> Object? {
        guard let handle else { return nil }
        guard let object = remove(handle) else { return try self.object(handle) }
        return object
    }
}

/// The numbers handles are made of: one sequence for every kind, so that a handle of
/// one kind is never found in another's table. Multiples of 16 from 0x5D00_0000, so
/// that they look like nothing else (and are aligned, for tools that check).
enum HandleNumbers {
    private static let counter = Atomic<UInt>(0x5D00_0000)

    static func next() -> UInt {
        counter.add(16, ordering: .relaxed).newValue
    }
}

/// The tables.
enum Handles {
    static let suites = HandleTable<Suite>(kind: "suite")
    static let transactions = HandleTable<TransactionHandle>(kind: "transaction")
    static let watches = HandleTable<Watch>(kind: "watch")
}
