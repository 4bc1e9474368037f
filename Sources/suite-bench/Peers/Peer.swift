import Foundation

/// A store beside ours in `suite-bench --peers`, loaded with dlopen at run time.
enum Peer: String, CaseIterable, Sendable {
    case sqlite, lmdb

    var title: String {
        switch self {
        case .sqlite: "SQLite"
        case .lmdb: "LMDB"
        }
    }

    /// The Debian package that installs the library.
    var package: String {
        switch self {
        case .sqlite: "libsqlite3-0"
        case .lmdb: "liblmdb0"
        }
    }

    var isInstalled: Bool {
        switch self {
        case .sqlite: SQLiteLibrary.shared != nil
        case .lmdb: LMDBLibrary.shared != nil
        }
    }

    var notInstalled: String { "not installed (apt-get install \(package))" }

    /// The library's version and how this run uses it.
    var description: String {
        switch self {
        case .sqlite:
            guard let sqlite = SQLiteLibrary.shared else { return "SQLite: \(notInstalled)" }
            return "SQLite \(sqlite.version().map { String(cString: $0) } ?? "?") (\(SQLiteLibrary.soname)): WAL, synchronous=NORMAL (FULL for durable_set), busy_timeout, one table \"\(SQLiteStore.schema)\", prepared statements"
        case .lmdb:
            guard let lmdb = LMDBLibrary.shared else { return "LMDB: \(notInstalled)" }
            let version = lmdb.version(nil, nil, nil).map { String(cString: $0) } ?? "LMDB"
            return "\(version) (\(LMDBLibrary.soname)): MDB_NOSYNC (default sync for durable_set), MDB_NOTLS, MDB_NOSUBDIR, 64 MiB map, one environment per process"
        }
    }

    /// The file of the store `name` in the run's directory.
    func path(_ name: String, in directory: URL) -> String {
        directory.appendingPathComponent("peer-\(name).\(self == .sqlite ? "sqlite" : "mdb")").path
    }

    /// Opens (creating if needed) the store at `path`. `setUp: false` only opens an
    /// existing store, as a process that reads it would.
    func open(_ path: String, durable: Bool = false, setUp: Bool = true) throws -> any PeerStore {
        switch self {
        case .sqlite: try SQLiteStore(path: path, durable: durable, setUp: setUp)
        case .lmdb: try LMDBStore(path: path, durable: durable)
        }
    }
}

/// What the peer rows do with a store: the same jobs as ours.
protocol PeerStore: AnyObject {
    /// One committed write, visible to other processes when it returns.
    func set(_ value: String, forKey key: String) throws
    func set(_ value: Int, forKey key: String) throws
    func setZeroes(_ count: Int, forKey key: String) throws
    /// A read of the last value any process committed, copied into a String.
    func string(forKey key: String) throws -> String?
    func integer(forKey key: String) throws -> Int?
    /// Read, +1, write, atomically across processes.
    func increment(_ key: String) throws
    /// "key.0" ... "key.N-1" with short strings, in one transaction.
    func fill(_ keys: Int) throws
    /// A number that changes when another process commits (what a poller watches).
    func changeStamp() throws -> UInt64
    /// Reads every key once; the number of keys.
    func readAll() throws -> Int
}
