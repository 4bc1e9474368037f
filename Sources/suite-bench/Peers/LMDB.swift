import Glibc
import SuiteDefaults

/// MDB_val: a size and a pointer, as lmdb.h lays it out (passed to C as a raw pointer:
/// a Swift struct has no C type).
struct MDBValue {
    var size: Int
    var data: UnsafeMutableRawPointer?
}

/// LMDB's C functions, loaded from liblmdb.so.0 and declared here, without its header.
final class LMDBLibrary: @unchecked Sendable {
    typealias Handle = OpaquePointer
    let envCreate: @convention(c) (UnsafeMutablePointer<Handle?>?) -> Int32
    let envSetMapSize: @convention(c) (Handle?, Int) -> Int32
    let envOpen: @convention(c) (Handle?, UnsafePointer<CChar>?, UInt32, mode_t) -> Int32
    let envClose: @convention(c) (Handle?) -> Void
    /// MDB_envinfo (48 bytes): map address, map size, last page, last transaction id, readers.
    let envInfo: @convention(c) (Handle?, UnsafeMutableRawPointer?) -> Int32
    let txnBegin: @convention(c) (Handle?, Handle?, UInt32, UnsafeMutablePointer<Handle?>?) -> Int32
    let txnCommit: @convention(c) (Handle?) -> Int32
    let txnAbort: @convention(c) (Handle?) -> Void
    let txnReset: @convention(c) (Handle?) -> Void
    let txnRenew: @convention(c) (Handle?) -> Int32
    let dbiOpen: @convention(c) (Handle?, UnsafePointer<CChar>?, UInt32, UnsafeMutablePointer<UInt32>?) -> Int32
    let get: @convention(c) (Handle?, UInt32, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Int32
    let put: @convention(c) (Handle?, UInt32, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UInt32) -> Int32
    let cursorOpen: @convention(c) (Handle?, UInt32, UnsafeMutablePointer<Handle?>?) -> Int32
    let cursorGet: @convention(c) (Handle?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, Int32) -> Int32
    let cursorClose: @convention(c) (Handle?) -> Void
    let errorString: @convention(c) (Int32) -> UnsafePointer<CChar>?
    let version: @convention(c) (UnsafeMutablePointer<Int32>?, UnsafeMutablePointer<Int32>?, UnsafeMutablePointer<Int32>?) -> UnsafePointer<CChar>?

    static let soname = "liblmdb.so.0"
    /// Nil when LMDB is not installed.
    static let shared: LMDBLibrary? = DynamicLibrary(soname).flatMap { try? LMDBLibrary($0) }

    private init(_ library: DynamicLibrary) throws(PeerError) {
        envCreate = try library.function("mdb_env_create")
        envSetMapSize = try library.function("mdb_env_set_mapsize")
        envOpen = try library.function("mdb_env_open")
        envClose = try library.function("mdb_env_close")
        envInfo = try library.function("mdb_env_info")
        txnBegin = try library.function("mdb_txn_begin")
        txnCommit = try library.function("mdb_txn_commit")
        txnAbort = try library.function("mdb_txn_abort")
        txnReset = try library.function("mdb_txn_reset")
        txnRenew = try library.function("mdb_txn_renew")
        dbiOpen = try library.function("mdb_dbi_open")
        get = try library.function("mdb_get")
        put = try library.function("mdb_put")
        cursorOpen = try library.function("mdb_cursor_open")
        cursorGet = try library.function("mdb_cursor_get")
        cursorClose = try library.function("mdb_cursor_close")
        errorString = try library.function("mdb_strerror")
        version = try library.function("mdb_version")
    }

    static let noSubdirectory: UInt32 = 0x4000, noSync: UInt32 = 0x10000, readOnly: UInt32 = 0x20000, noTLS: UInt32 = 0x20_0000
    static let notFound: Int32 = -30798
    static let first: Int32 = 0, next: Int32 = 8

    func check(_ status: Int32, _ call: String) throws(PeerError) {
        guard status == 0 else { throw PeerError("\(call): \(String(cString: errorString(status)!))") }
    }
}

/// One LMDB environment per process (a file and its "-lock" file), MDB_NOTLS, a 64 MiB
/// map, MDB_NOSYNC unless durable. Each write is its own write transaction; each read
/// renews one read transaction, so that it sees the last commit of any process.
final class LMDBStore: PeerStore {
    private let lmdb: LMDBLibrary
    private var environment: OpaquePointer?
    private var reader: OpaquePointer?
    private var database: UInt32 = 0

    init(path: String, durable: Bool = false) throws {
        guard let lmdb = LMDBLibrary.shared else { throw PeerError("LMDB is not installed") }
        self.lmdb = lmdb
        try lmdb.check(lmdb.envCreate(&environment), "mdb_env_create")
        try lmdb.check(lmdb.envSetMapSize(environment, 64 << 20), "mdb_env_set_mapsize")
        let flags = LMDBLibrary.noSubdirectory | LMDBLibrary.noTLS | (durable ? 0 : LMDBLibrary.noSync)
        try lmdb.check(lmdb.envOpen(environment, path, flags, 0o600), "mdb_env_open \(path)")
        // The main database needs no write transaction to open.
        try lmdb.check(lmdb.txnBegin(environment, nil, LMDBLibrary.readOnly, &reader), "mdb_txn_begin")
        try lmdb.check(lmdb.dbiOpen(reader, nil, 0, &database), "mdb_dbi_open")
        lmdb.txnReset(reader)
    }

    deinit {
        lmdb.txnAbort(reader)
        lmdb.envClose(environment)
    }

    /// A write transaction around `body`, committed when it returns.
    private func write<R>(_ body: (OpaquePointer?) throws -> R) throws -> R {
        var transaction: OpaquePointer?
        try lmdb.check(lmdb.txnBegin(environment, nil, 0, &transaction), "mdb_txn_begin")
        do {
            let result = try body(transaction)
            try lmdb.check(lmdb.txnCommit(transaction), "mdb_txn_commit")
            return result
        } catch {
            lmdb.txnAbort(transaction)
            throw error
        }
    }

    private func put(_ transaction: OpaquePointer?, _ key: String, _ bytes: UnsafeRawBufferPointer) throws {
        var key = key
        try key.withUTF8 { keyBytes in
            var name = MDBValue(size: keyBytes.count, data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
            var data = MDBValue(size: bytes.count, data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
            try lmdb.check(lmdb.put(transaction, database, &name, &data, 0), "mdb_put")
        }
    }

    /// mdb_get: the value's bytes stay valid until the transaction ends.
    private func get<R>(_ transaction: OpaquePointer?, _ key: String, _ body: (UnsafeRawBufferPointer) -> R) throws -> R? {
        var key = key
        return try key.withUTF8 { keyBytes in
            var name = MDBValue(size: keyBytes.count, data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
            var data = MDBValue(size: 0, data: nil)
            let status = lmdb.get(transaction, database, &name, &data)
            if status == LMDBLibrary.notFound { return nil }
            try lmdb.check(status, "mdb_get")
            return body(UnsafeRawBufferPointer(start: data.data, count: data.size))
        }
    }

    /// A read in a renewed read transaction: the last commit of any process.
    private func read<R>(_ key: String, _ body: (UnsafeRawBufferPointer) -> R) throws -> R? {
        try lmdb.check(lmdb.txnRenew(reader), "mdb_txn_renew")
        defer { lmdb.txnReset(reader) }
        return try get(reader, key, body)
    }

    private static func integer(_ bytes: UnsafeRawBufferPointer) -> Int? {
        bytes.count == 8 ? bytes.loadUnaligned(as: Int.self) : nil
    }

    func set(_ value: String, forKey key: String) throws {
        var value = value
        try value.withUTF8 { bytes in try write { try put($0, key, UnsafeRawBufferPointer(bytes)) } }
    }

    func set(_ value: Int, forKey key: String) throws {
        try withUnsafeBytes(of: value) { bytes in try write { try put($0, key, bytes) } }
    }

    func setZeroes(_ count: Int, forKey key: String) throws {
        let zeroes = [UInt8](repeating: 0, count: count)
        try zeroes.withUnsafeBytes { bytes in try write { try put($0, key, bytes) } }
    }

    func string(forKey key: String) throws -> String? {
        try read(key) { String(decoding: $0, as: UTF8.self) }
    }

    func integer(forKey key: String) throws -> Int? {
        try read(key) { LMDBStore.integer($0) } ?? nil
    }

    /// Read, +1, write in one write transaction: LMDB's writers take turns on its mutex.
    func increment(_ key: String) throws {
        try write { transaction in
            let count = try get(transaction, key) { LMDBStore.integer($0) } ?? nil
            try withUnsafeBytes(of: (count ?? 0) + 1) { try put(transaction, key, $0) }
        }
    }

    func fill(_ keys: Int) throws {
        try write { transaction in
            for index in 0..<keys {
                var value = "value \(index)"
                try value.withUTF8 { try put(transaction, "key.\(index)", UnsafeRawBufferPointer($0)) }
            }
        }
    }

    /// The last committed transaction's id, from the shared lock file (mdb_env_info).
    func changeStamp() throws -> UInt64 {
        var info = (UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        try withUnsafeMutableBytes(of: &info) { try lmdb.check(lmdb.envInfo(environment, $0.baseAddress), "mdb_env_info") }
        return info.3
    }

    func readAll() throws -> Int {
        try lmdb.check(lmdb.txnRenew(reader), "mdb_txn_renew")
        defer { lmdb.txnReset(reader) }
        var cursor: OpaquePointer?
        try lmdb.check(lmdb.cursorOpen(reader, database, &cursor), "mdb_cursor_open")
        defer { lmdb.cursorClose(cursor) }
        var name = MDBValue(size: 0, data: nil), data = MDBValue(size: 0, data: nil)
        var count = 0, bytes = 0
        var status = lmdb.cursorGet(cursor, &name, &data, LMDBLibrary.first)
        while status == 0 {
            count += 1
            if let start = data.data?.assumingMemoryBound(to: UInt8.self) { for offset in 0..<data.size { bytes &+= Int(start[offset]) } }
            status = lmdb.cursorGet(cursor, &name, &data, LMDBLibrary.next)
        }
        if status != LMDBLibrary.notFound { try lmdb.check(status, "mdb_cursor_get") }
        withExtendedLifetime(bytes) {}
        return count
    }
}
