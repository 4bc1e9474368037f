import ChildProcess
import Foundation
@_spi(Tools) import SuiteDefaults
import SuiteSync
import Testing
import TestSupport

/// One "machine" of the mirror tests: a suite directory of its own and its own
/// `suite-sync` process, which is killed and reaped when the machine goes away.
final class Machine: @unchecked Sendable {
    let name: String
    let directory = TemporaryDirectory("suite-sync-machine")
    let endpoints: [URL]
    let prefix: String
    let suites: [String]
    private let lock = NSLock()
    private var current: ChildProcess?
    /// Every line each process printed, in order, the current one's last.
    private var finishedLines: [String] = []

    /// Given to `suite-sync` before the suites (such as `--user` and `--password-file`).
    let options: [String]

    init(_ name: String, endpoints: [URL], prefix: String, suites: [String], options: [String] = []) {
        self.name = name
        self.endpoints = endpoints
        self.prefix = prefix
        self.suites = suites
        self.options = options
    }

    deinit {
        _ = current?.kill()
    }

    var arguments: [String] {
        ["--endpoints", endpoints.map(\.absoluteString).joined(separator: ","), "--prefix", prefix,
         "--dir", directory.path, "--json"] + options + suites
    }

    /// Starts `suite-sync`; with `waitUntilWatching`, returns once it reconciled and watches.
    @discardableResult
    func start(waitUntilWatching: Bool = true, timeout: Duration = .seconds(30)) async throws -> ChildProcess {
        try await offThePool { try self.startBlocking(waitUntilWatching: waitUntilWatching, timeout: timeout) }
    }

    func startBlocking(waitUntilWatching: Bool, timeout: Duration) throws -> ChildProcess {
        let process = try ChildProcess(executable: Products.path("suite-sync"), arguments: arguments)
        process.closeInput()
        lock.withLock { current = process }
        if waitUntilWatching {
            guard process.waitForLine(timeout: timeout, where: { $0.contains("\"event\":\"watching\"") }) != nil else {
                throw DeadlinePassed(what: "\(name)'s suite-sync watching; output \(process.lines.suffix(5)), errors \(process.standardError)")
            }
        }
        return process
    }

    /// SIGKILLs the running `suite-sync` and reaps it.
    func kill() async {
        await offThePool { self.killBlocking() }
    }

    func killBlocking() {
        let process = lock.withLock { defer { current = nil }; return current }
        guard let process else { return }
        _ = process.kill()
        lock.withLock { finishedLines += process.lines }
    }

    var process: ChildProcess? { lock.withLock { current } }

    /// Every status line so far, of every process this machine ran.
    var lines: [String] { lock.withLock { finishedLines + (current?.lines ?? []) } }

    /// What the running process wrote to standard error so far.
    var errors: String { lock.withLock { current?.standardError ?? "" } }

    func suite(_ name: String) throws -> Suite { try Suite(named: name, directory: directory.url) }

    /// Every stored value of `suite`, as typed JSON text by key.
    func values(_ suite: String) throws -> [String: String] {
        try self.suite(suite).storedValues().mapValues { $0.jsonText(style: .typed) }
    }

    /// Every suite's values as "SUITE/KEY" → typed JSON text, as etcd holds them.
    func allValues() throws -> [String: String] {
        var all: [String: String] = [:]
        for suite in suites {
            for (key, value) in try values(suite) { all["\(suite)/\(key)"] = value }
        }
        return all
    }
}

/// What most mirror tests start from: a fresh one-member etcd, a client of it, and machines
/// named `names` mirroring `suites` under `prefix` through it, their suite-sync not started.
/// The etcd runs as long as this is held.
struct MirrorRig {
    let cluster: EtcdCluster
    let client: EtcdClient
    let machines: [Machine]

    init(_ names: [String], prefix: String, suites: [String]) async throws {
        let cluster = try await EtcdCluster.start()
        self.cluster = cluster
        client = try EtcdClient(configuration: EtcdConfiguration(endpoints: cluster.endpoints))
        machines = names.map { Machine($0, endpoints: cluster.endpoints, prefix: prefix, suites: suites) }
    }

    /// Starts every machine's suite-sync in turn, each reconciled and watching before the next.
    func startAll() async throws {
        for machine in machines { try await machine.start() }
    }
}

/// What etcd holds under `prefix`/, as "SUITE/KEY" → value text, and the revision.
func etcdValues(_ client: EtcdClient, prefix: String) async throws -> (values: [String: String], revision: Int64) {
    let range = try await client.range(prefix: Data((prefix + "/").utf8))
    var values: [String: String] = [:]
    for keyValue in range.keyValues {
        let key = String(decoding: keyValue.key, as: UTF8.self).dropFirst(prefix.count + 1)
        values[String(key)] = String(decoding: keyValue.value, as: UTF8.self)
    }
    return (values, range.revision)
}

/// Polls `condition` until it holds, or throws `DeadlinePassed` saying `what` (and the
/// last state `describe` gives) at the deadline.
func eventually(_ timeout: Duration, _ what: String, describe: () async throws -> String = { "" },
                _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    // Asked once more after the deadline: a task that was not run for a while (the
    // test process's cooperative threads busy with a long synchronous test) wakes past
    // it, and must not fail without looking at what happened meanwhile.
    while true {
        if try await condition() { return }
        if ContinuousClock.now >= deadline { break }
        try await Task.sleep(for: .milliseconds(20))
    }
    throw DeadlinePassed(what: "\(what) (\(try await describe()))")
}

/// Waits until every machine's suites equal each other and etcd's prefix; returns etcd's values.
@discardableResult
func converge(_ machines: [Machine], _ client: EtcdClient, prefix: String, within timeout: Duration = .seconds(30))
    async throws -> [String: String] {
    var last: [String: String] = [:]
    var lastLocal: [[String: String]] = []
    try await eventually(timeout, "convergence", describe: {
        "etcd \(last.count) keys, machines \(lastLocal.map(\.count)) keys; differing: "
            + "\(Set(last.keys).union(lastLocal.flatMap(\.keys)).filter { key in lastLocal.contains { $0[key] != last[key] } }.sorted().prefix(5)); "
            // What each suite-sync said last, so that a failure under load can be told from a lost change.
            + machines.map { "\($0.name): \($0.lines.suffix(4)) \($0.errors.suffix(300))" }.joined(separator: "; ")
    }) {
        do {
            last = try await etcdValues(client, prefix: prefix).values
        } catch let error as EtcdError {
            // Asked during an election (a killed leader), every member may answer
            // "unavailable" for a moment: the suites have not converged yet, no more.
            guard case .unavailable = error else { throw error }
            return false
        }
        lastLocal = try machines.map { try $0.allValues() }
        return lastLocal.allSatisfy { $0 == last }
    }
    return last
}

/// Runs blocking process work off the cooperative pool.
func blocking<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await offThePool(work)
}
