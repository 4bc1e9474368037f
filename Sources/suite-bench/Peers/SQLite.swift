import Glibc
import SuiteDefaults

/// SQLite's C functions, loaded from libsqlite3.so.0 and declared here, without its header.
final class SQLiteLibrary: @unchecked Sendable {
    typealias Handle = OpaquePointer
    let open: @convention(c) (UnsafePointer<CChar>?, UnsafeMutablePointer<Handle?>?, Int32, UnsafePointer<CChar>?) -> Int32
    let close: @convention(c) (Handle?) -> Int32
    let exec: @convention(c) (Handle?, UnsafePointer<CChar>?, UnsafeRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Int32
    let prepare: @convention(c) (Handle?, UnsafePointer<CChar>?, Int32, UnsafeMutablePointer<Handle?>?, UnsafeMutableRawPointer?) -> Int32
    let step: @convention(c) (Handle?) -> Int32
    let reset: @convention(c) (Handle?) -> Int32
    let finalize: @convention(c) (Handle?) -> Int32
    /// The last parameter is the destructor, a function pointer or SQLITE_STATIC (0).
    let bindText: @convention(c) (Handle?, Int32, UnsafeRawPointer?, Int32, Int) -> Int32
    let bindInt64: @convention(c) (Handle?, Int32, Int64) -> Int32
    let bindZeroBlob: @convention(c) (Handle?, Int32, Int32) -> Int32
    let columnText: @convention(c) (Handle?, Int32) -> UnsafePointer<UInt8>?
    let columnBytes: @convention(c) (Handle?, Int32) -> Int32
    let columnInt64: @convention(c) (Handle?, Int32) -> Int64
    let busyTimeout: @convention(c) (Handle?, Int32) -> Int32
    let errorMessage: @convention(c) (Handle?) -> UnsafePointer<CChar>?
    let version: @convention(c) () -> UnsafePointer<CChar>?

    static let soname = "libsqlite3.so.0"
    /// Nil when SQLite is not installed.
    static let shared: SQLiteLibrary? = DynamicLibrary(soname).flatMap { try? SQLiteLibrary($0) }

    private init(_ library: DynamicLibrary) throws(PeerError) {
        open = try library.function("sqlite3_open_v2")
        close = try library.function("sqlite3_close_v2")
        exec = try library.function("sqlite3_exec")
        prepare = try library.function("sqlite3_prepare_v2")
        step = try library.function("sqlite3_step")
        reset = try library.function("sqlite3_reset")
        finalize = try library.function("sqlite3_finalize")
        bindText = try library.function("sqlite3_bind_text")
        bindInt64 = try library.function("sqlite3_bind_int64")
        bindZeroBlob = try library.function("sqlite3_bind_zeroblob")
        columnText = try library.function("sqlite3_column_text")
        columnBytes = try library.function("sqlite3_column_bytes")
        columnInt64 = try library.function("sqlite3_column_int64")
        busyTimeout = try library.function("sqlite3_busy_timeout")
        errorMessage = try library.function("sqlite3_errmsg")
        version = try library.function("sqlite3_libversion")
    }

    static let ok: Int32 = 0, row: Int32 = 100, done: Int32 = 101
    static let openReadWrite: Int32 = 0x2, openCreate: Int32 = 0x4, openNoMutex: Int32 = 0x8000
}

/// One connection to a key-value table in WAL mode: synchronous=NORMAL, or FULL when durable.
/// Every statement is prepared once; a write outside a transaction commits on its own.
final class SQLiteStore: PeerStore {
    private let sqlite: SQLiteLibrary
    private var database: OpaquePointer?
    private var statements: [String: OpaquePointer] = [:]
    private let select: OpaquePointer, insert: OpaquePointer

    static let schema = "CREATE TABLE IF NOT EXISTS kv(key TEXT PRIMARY KEY NOT NULL, value) WITHOUT ROWID"

    /// `setUp` sets the journal mode and creates the table; a process that only reads an
    /// existing database (a cold start) skips it: WAL mode is stored in the file.
    init(path: String, durable: Bool = false, setUp: Bool = true) throws {
        guard let sqlite = SQLiteLibrary.shared else { throw PeerError("SQLite is not installed") }
        self.sqlite = sqlite
        let status = sqlite.open(path, &database, SQLiteLibrary.openReadWrite | SQLiteLibrary.openCreate | SQLiteLibrary.openNoMutex, nil)
        guard status == SQLiteLibrary.ok else {
            _ = sqlite.close(database)
            throw PeerError("sqlite3_open_v2 \(path): \(status)")
        }
        _ = sqlite.busyTimeout(database, 60_000)
        if setUp {
            try SQLiteStore.exec(sqlite, database, "PRAGMA journal_mode=WAL")
            try SQLiteStore.exec(sqlite, database, "PRAGMA synchronous=\(durable ? "FULL" : "NORMAL")")
            try SQLiteStore.exec(sqlite, database, SQLiteStore.schema)
        }
        select = try SQLiteStore.prepare(sqlite, database, "SELECT value FROM kv WHERE key = ?1")
        insert = try SQLiteStore.prepare(sqlite, database, "INSERT OR REPLACE INTO kv(key, value) VALUES(?1, ?2)")
    }

    deinit {
        _ = sqlite.finalize(select)
        _ = sqlite.finalize(insert)
        for statement in statements.values { _ = sqlite.finalize(statement) }
        _ = sqlite.close(database)
    }

    /// SQLite's message for the last failure on `database`.
    private static func message(_ sqlite: SQLiteLibrary, _ database: OpaquePointer?) -> String {
        sqlite.errorMessage(database).map { String(cString: $0) } ?? "no message"
    }

    private static func exec(_ sqlite: SQLiteLibrary, _ database: OpaquePointer?, _ sql: String) throws(PeerError) {
        guard sqlite.exec(database, sql, nil, nil, nil) == SQLiteLibrary.ok else {
            throw PeerError("\(sql): \(message(sqlite, database))")
        }
    }

    private static func prepare(_ sqlite: SQLiteLibrary, _ database: OpaquePointer?, _ sql: String) throws(PeerError) -> OpaquePointer {
        var statement: OpaquePointer?
        guard sqlite.prepare(database, sql, -1, &statement, nil) == SQLiteLibrary.ok, let statement else {
            throw PeerError("\(sql): \(message(sqlite, database))")
        }
        return statement
    }

    /// A statement prepared on first use and kept.
    private func statement(_ sql: String) throws(PeerError) -> OpaquePointer {
        if let statement = statements[sql] { return statement }
        let statement = try SQLiteStore.prepare(sqlite, database, sql)
        statements[sql] = statement
        return statement
    }

    /// Runs a statement that returns no row, and resets it.
    private func run(_ statement: OpaquePointer) throws(PeerError) {
        let status = sqlite.step(statement)
        _ = sqlite.reset(statement)
        guard status == SQLiteLibrary.done else { throw PeerError("sqlite3_step: \(status) \(SQLiteStore.message(sqlite, database))") }
    }

    /// Runs `body` with `text` bound to parameter `index` of `statement` without a
    /// copy (SQLITE_STATIC): the statement must run inside `body`, while the bytes live.
    private func withBound<R>(_ text: String, to index: Int32, of statement: OpaquePointer, _ body: () throws -> R) throws -> R {
        var text = text
        return try text.withUTF8 { bytes in
            _ = sqlite.bindText(statement, index, bytes.baseAddress, Int32(bytes.count), 0)
            return try body()
        }
    }

    func set(_ value: String, forKey key: String) throws {
        try withBound(key, to: 1, of: insert) {
            try withBound(value, to: 2, of: insert) { try run(insert) }
        }
    }

    func set(_ value: Int, forKey key: String) throws {
        try withBound(key, to: 1, of: insert) {
            _ = sqlite.bindInt64(insert, 2, Int64(value))
            try run(insert)
        }
    }

    func setZeroes(_ count: Int, forKey key: String) throws {
        try withBound(key, to: 1, of: insert) {
            _ = sqlite.bindZeroBlob(insert, 2, Int32(count))
            try run(insert)
        }
    }

    /// A fresh read of `key`'s value, by `column` (given the statement); nil when absent.
    /// Outside a transaction, each SELECT sees the last commit of any process.
    private func selectValue<R>(_ key: String, _ column: (OpaquePointer) -> R?) throws -> R? {
        try withBound(key, to: 1, of: select) {
            defer { _ = sqlite.reset(select) }
            switch sqlite.step(select) {
            case SQLiteLibrary.row: return column(select)
            case SQLiteLibrary.done: return nil
            case let status: throw PeerError("SELECT: \(status) \(SQLiteStore.message(sqlite, database))")
            }
        }
    }

    func string(forKey key: String) throws -> String? {
        try selectValue(key) { select in
            guard let text = sqlite.columnText(select, 0) else { return nil }
            return String(decoding: UnsafeBufferPointer(start: text, count: Int(sqlite.columnBytes(select, 0))), as: UTF8.self)
        }
    }

    func integer(forKey key: String) throws -> Int? {
        try selectValue(key) { Int(sqlite.columnInt64($0, 0)) }
    }

    /// Read, +1, write in one BEGIN IMMEDIATE transaction (the write lock from the start,
    /// so that two processes never both read the same count).
    func increment(_ key: String) throws {
        try run(try statement("BEGIN IMMEDIATE"))
        do {
            let count = try integer(forKey: key) ?? 0
            try set(count + 1, forKey: key)
            try run(try statement("COMMIT"))
        } catch {
            try? run(try statement("ROLLBACK"))
            throw error
        }
    }

    func fill(_ keys: Int) throws {
        try run(try statement("BEGIN IMMEDIATE"))
        for index in 0..<keys { try set("value \(index)", forKey: "key.\(index)") }
        try run(try statement("COMMIT"))
    }

    /// PRAGMA data_version: changes when another connection commits.
    func changeStamp() throws -> UInt64 {
        let statement = try statement("PRAGMA data_version")
        defer { _ = sqlite.reset(statement) }
        guard sqlite.step(statement) == SQLiteLibrary.row else { throw PeerError("PRAGMA data_version failed") }
        return UInt64(bitPattern: sqlite.columnInt64(statement, 0))
    }

    /// Reads every key and value once, keeping none: what a process holding the store touches.
    func readAll() throws -> Int {
        let statement = try statement("SELECT key, value FROM kv")
        defer { _ = sqlite.reset(statement) }
        var count = 0, bytes = 0
        while sqlite.step(statement) == SQLiteLibrary.row {
            _ = sqlite.columnText(statement, 1)
            bytes &+= Int(sqlite.columnBytes(statement, 1))
            count += 1
        }
        withExtendedLifetime(bytes) {}
        return count
    }
}
