import Foundation
import CSuiteDefaults
import Glibc
@_spi(Tools) import SuiteDefaults

/// A transaction, as long as its `sd_update` callback runs: the thread it runs on,
/// and the suite's value limit.
final class TransactionHandle {
    let transaction: SuiteTransaction
    let thread: pthread_t
    let maximumValueSize: Int

    init(_ transaction: SuiteTransaction, maximumValueSize: Int) {
        self.transaction = transaction
        self.thread = pthread_self()
        self.maximumValueSize = maximumValueSize
    }

    /// The fork epoch of its callback: a forked child's thread may compare equal to
    /// the parent's, but the transaction is the parent's.
    let epoch = sd_fork_epoch()
}

/// What the getters and setters work on: a suite, or a transaction inside its callback.
struct Target {
    let store: any SuiteWritable
    let maximumValueSize: Int

    /// The suite of a handle, outside its own update callbacks: there the library
    /// would stop the process, so the call is refused.
    static func suite(_ handle: OpaquePointer?) throws -> Suite {
        let suite = try Handles.suites.object(handle)
        if suite.isInsideUpdateOnCurrentThread {
            throw Refusal(Status.invalidArgument, "The suite \(suite.name) was used inside its own sd_update callback; "
                          + "use the sd_tx handle the callback was given instead.")
        }
        return suite
    }

    init(suite handle: OpaquePointer?) throws {
        let suite = try Target.suite(handle)
        store = suite
        maximumValueSize = suite.options.maximumValueSize
    }

    init(transaction handle: OpaquePointer?) throws {
        let transaction = try Handles.transactions.object(handle)
        guard pthread_equal(transaction.thread, pthread_self()) != 0, transaction.epoch == sd_fork_epoch() else {
            throw Refusal(Status.invalidHandle, "The transaction handle was used on another thread than its sd_update callback's, or in a forked child.")
        }
        store = transaction.transaction
        maximumValueSize = transaction.maximumValueSize
    }

    // MARK: Reading

    /// The stored value of `key`; SD_ABSENT (no message: an answer) when none is.
    func value(_ key: UnsafePointer<CChar>?) throws -> (key: String, value: SuiteValue) {
        let key = try CInput.key(key)
        guard let value = store.value(forKey: key) else { throw QuietStatus(status: Status.absent) }
        return (key, value)
    }

    /// The stored value of `key` as a `T`; SD_TYPE_MISMATCH when it is of another type.
    func value<T: SuiteStorable>(_ key: UnsafePointer<CChar>?, as type: T.Type, _ typeName: String) throws -> T {
        let (key, value) = try value(key)
        guard let typed = T(suiteValue: value) else {
            throw Refusal(Status.typeMismatch, "The value of \(key) is a \(value.typeName), not \(typeName).")
        }
        return typed
    }

    /// Reads a fixed-size value into `out`.
    func get<T: SuiteStorable>(_ key: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<T>?, _ typeName: String) throws -> Int32 {
        let out = try CInput.required(out, "the value")
        out.pointee = try value(key, as: T.self, typeName)
        return Status.ok
    }

    /// The bytes a variable-size getter returns: a string's UTF-8, data, or any value
    /// as typed JSON.
    enum Bytes {
        case string, data, json

        var isTerminated: Bool { self != .data }

        func of(_ target: Target, _ key: UnsafePointer<CChar>?) throws -> [UInt8] {
            switch self {
            case .string: Array(try target.value(key, as: String.self, "a string").utf8)
            case .data: [UInt8](try target.value(key, as: Data.self, "data"))
            case .json: Array(try target.value(key).value.jsonText(style: .typed).utf8)
            }
        }
    }

    func get(_ kind: Bytes, _ key: UnsafePointer<CChar>?, buffer: UnsafeMutableRawPointer?, capacity: UInt,
             length: UnsafeMutablePointer<UInt>?) throws -> Int32 {
        if capacity > 0 && buffer == nil {
            throw Refusal(Status.invalidArgument, "The buffer is NULL, with a capacity of \(capacity).")
        }
        return try COutput.copy(kind.of(self, key), terminated: kind.isTerminated, into: buffer, capacity: capacity, length: length)
    }

    func getAllocated(_ kind: Bytes, _ key: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
                      length: UnsafeMutablePointer<UInt>?) throws -> Int32 {
        let out = try CInput.required(out, "the value")
        let bytes = try kind.of(self, key)
        out.pointee = try COutput.allocated(bytes, terminated: kind.isTerminated)
        length?.pointee = UInt(bytes.count)
        return Status.ok
    }

    // MARK: Writing

    func set(_ key: UnsafePointer<CChar>?, _ value: () throws -> SuiteValue?) throws -> Int32 {
        let key = try CInput.key(key)
        try store.setValue(value(), forKey: key)
        return Status.ok
    }

    func setString(_ key: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?) throws -> Int32 {
        try set(key) { .string(try CInput.text(value, "the string", invalid: Status.invalidValue)) }
    }

    func setData(_ key: UnsafePointer<CChar>?, _ bytes: UnsafeRawPointer?, _ length: UInt) throws -> Int32 {
        try set(key) { .data(try CInput.data(bytes, length, maximumValueSize: maximumValueSize)) }
    }

    func setJSON(_ key: UnsafePointer<CChar>?, _ json: UnsafePointer<CChar>?) throws -> Int32 {
        try set(key) { try CInput.json(json) }
    }
}
