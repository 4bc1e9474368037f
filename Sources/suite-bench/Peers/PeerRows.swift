import ChildProcess
import Foundation
import Glibc
import ToolSupport

/// `--peers`: SQLite and LMDB doing each row's job, with the row's own definition and
/// sample counts: in turns with ours for the rows compared most closely (`Turns`),
/// after ours for the others. Multi-process rows use peer workers (PeerWorker.swift).
extension Bench {
    /// Adds the peers' columns to every row that did not measure them with ours.
    func addPeers(to rows: inout [BenchRow], progress: (String) -> Void) throws {
        var cpuColumns: [Peer: BenchRow.PeerColumn] = [:], notify1Columns: [Peer: BenchRow.PeerColumn] = [:]
        for index in rows.indices {
            let name = rows[index].name
            progress("SQLite and LMDB: \(name)")
            let measuredWithTheRow = rows[index].peers
            rows[index].peers = try Peer.allCases.map { peer in
                // A row that measured its peers with ours keeps them (in turns, or in one
                // loop: spawn_to_first_read).
                if let column = measuredWithTheRow?.first(where: { $0.peer == peer }) { return column }
                guard peer.isInstalled else { return .init(peer: peer, figure: nil, note: peer.notInstalled) }
                // notify_1's pollers give notify_cpu too, and stand beside notify_1_watcher_thread
                // (a poller has no threads to choose between).
                if name == "notify_1" {
                    let measured = try notification(peer, watchers: 1)
                    cpuColumns[peer] = measured.cpu
                    notify1Columns[peer] = measured.latency
                    return measured.latency
                }
                if name == "notify_1_watcher_thread" {
                    return notify1Columns[peer] ?? .init(peer: peer, figure: nil, note: "measured with notify_1, which did not run")
                }
                if name == "notify_cpu" {
                    return cpuColumns[peer] ?? .init(peer: peer, figure: nil, note: "measured with notify_1, which did not run")
                }
                return try peerColumn(peer, row: rows[index])
            }
        }
    }

    private func peerColumn(_ peer: Peer, row: BenchRow) throws -> BenchRow.PeerColumn {
        func column(_ samples: Samples, _ note: String) -> BenchRow.PeerColumn {
            .init(peer: peer, figure: .init(samples), note: note)
        }
        switch row.name {
        case "scale_10", "scale_1000", "scale_10000", "scale_1mib_value":
            let keys = ["scale_10": 10, "scale_1000": 1_000, "scale_10000": 10_000][row.name] ?? 100
            let store = try peerStore(peer, row.name, keys: keys)
            if row.name == "scale_1mib_value" { try store.setZeroes(1 << 20, forKey: "big") }
            let samples = try measureEach(options.samples(5_000, quick: 500), warmUp: 200) { index in
                let (key, value) = Bench.write(index)
                try store.set(value, forKey: key)
            }
            return column(samples, "set on a store of \(row.name == "scale_1mib_value" ? "100 keys and one 1 MiB value" : "\(keys) keys")")
        case "notify_1", "notify_8":
            return try notification(peer, watchers: row.name == "notify_1" ? 1 : 8).latency
        case "cold_start":
            return try coldStart(peer)
        case "durable_set":
            let store = try peerStore(peer, "durable", keys: 100, durable: true)
            let samples = try measureEach(options.samples(500, quick: 50), warmUp: 10) { index in
                let (key, value) = Bench.write(index)
                try store.set(value, forKey: key)
            }
            return column(samples, peer == .sqlite ? "synchronous=FULL in WAL mode (the WAL is synced at each commit)"
                : "without MDB_NOSYNC (each commit is synced)")
        case "memory":
            return try memory(peer, ours: row)
        default:
            return .init(peer: peer, figure: nil, note: "not applicable")
        }
    }

    /// A peer's share of a row measured in turns with ours (`Turns`): what it does,
    /// and how it measures the samples of the indices it is given.
    struct PeerTurn {
        let peer: Peer
        let note: String
        let measure: (Range<Int>) throws -> Samples
    }

    /// With --peers, each installed peer's turn at the hot-path row `row` (set, get,
    /// writes100, update); none without.
    func peerTurns(_ row: String) throws -> [PeerTurn] {
        guard options.peers else { return [] }
        return try Peer.allCases.filter(\.isInstalled).map { peer in
            let store = try peerStore(peer, row, keys: 100)
            let write = peer == .sqlite ? "INSERT OR REPLACE, committed on its own" : "a write transaction with one mdb_put"
            switch row {
            case "set":
                return PeerTurn(peer: peer, note: "one write on a 100-key store: \(write)") { indices in
                    try measureEach(indices, warmUp: 100) { index in
                        let (key, value) = Bench.write(index)
                        try store.set(value, forKey: key)
                    }
                }
            case "get":
                let read = peer == .sqlite ? "a SELECT on a prepared statement, outside a transaction"
                    : "mdb_get in a read transaction (mdb_txn_renew ... mdb_txn_reset)"
                return PeerTurn(peer: peer, note: "\(read), the value copied into a String (per call, timed in batches of 1,000)") { batches in
                    var found = 0
                    let samples = measureBatches(batches, of: 1_000) { index in
                        if (try? store.string(forKey: Bench.keys[index % 100])) != nil { found += 1 }
                    }
                    guard found > 0 else { throw PeerError("\(peer.title) found no key") }
                    return samples
                }
            case "writes100":
                return PeerTurn(peer: peer, note: "100 writes in a row, each \(write)") { rounds in
                    try measureWrites100(rounds) { key, value in try store.set(value, forKey: key) }
                }
            case "update":
                return PeerTurn(peer: peer, note: incrementNote(peer)) { indices in
                    try measureEach(indices, warmUp: 100) { _ in try store.increment("counter") }
                }
            default:
                throw PeerError("no turns for \(row)")
            }
        }
    }

    /// The columns of the peers that took `turns`, from the samples of the run.
    func peerColumns(_ turns: [PeerTurn], _ samples: [Turns.Contender: Samples]) -> [BenchRow.PeerColumn]? {
        guard options.peers else { return nil }
        return turns.map { turn in
            BenchRow.PeerColumn(peer: turn.peer, figure: samples[.peer(turn.peer)].flatMap(BenchRow.Figure.init), note: turn.note)
        }
    }

    private func incrementNote(_ peer: Peer) -> String {
        peer == .sqlite ? "BEGIN IMMEDIATE, SELECT, INSERT OR REPLACE, COMMIT" : "mdb_get and mdb_put in one write transaction"
    }

    /// A store of the run's directory, filled with `keys` keys.
    func peerStore(_ peer: Peer, _ name: String, keys: Int, durable: Bool = false) throws -> any PeerStore {
        let store = try peer.open(peer.path(name, in: root), durable: durable)
        try store.fill(keys)
        return store
    }

    /// With --peers, each installed peer's turn at update_contended: four processes
    /// incrementing one counter, each read and write in one transaction; a turn's
    /// sample is the seconds it took.
    func contendedPeerTurns() throws -> [PeerTurn] {
        guard options.peers else { return [] }
        return try Peer.allCases.filter(\.isInstalled).map { peer in
            try peerStore(peer, "contended", keys: 0).set(0, forKey: "counter")
            return PeerTurn(peer: peer, note: incrementNote(peer)) { part in
                Samples([try contend("\(peer.rawValue)-contend", suite: "contended", each: part.count)])
            }
        }
    }

    /// The column of a peer that took turns at update_contended, with its counter
    /// checked: `each` increments per process in all.
    func contendedPeerColumn(_ turn: PeerTurn, seconds: Samples?, each: Int) throws -> (BenchRow.PeerColumn, exact: Bool) {
        let peer = turn.peer
        let final = try peer.open(peer.path("contended", in: root)).integer(forKey: "counter") ?? 0
        let exact = final == 4 * each
        let total = seconds?.values.reduce(0, +) ?? 0
        return (.init(peer: peer, figure: total > 0 ? .init(median: Double(4 * each) / total, p99: nil) : nil,
                      note: "commits per second across 4 processes, each \(turn.note); ended at \(final) of \(4 * each) (\(exact ? "exact" : "WRONG"))"),
                exact)
    }

    /// Watchers that poll every 1 ms (neither peer can wake another process): from a
    /// write's return to the first poll that sees it or a later write.
    /// The latency column, and the pollers' CPU per 1,000 changes (notify_cpu's column).
    private func notification(_ peer: Peer, watchers: Int) throws -> (latency: BenchRow.PeerColumn, cpu: BenchRow.PeerColumn) {
        let writes = options.samples(500, quick: 50), idle = options.samples(1_000, quick: 200)
        let name = "notify\(watchers)"
        let store = try peerStore(peer, name, keys: 10)
        let processes = try (0..<watchers).map { _ in
            try worker("\(peer.rawValue)-watch", ["suite": name, "count": "\(writes)", "idle-ms": "\(idle)"])
        }
        var idleShares: [Double] = []
        var cpuPerThousand = Samples()
        for process in processes {
            let fields = try process.expect("idle ").split(separator: " ")
            guard fields.count == 3, let cpu = Double(fields[1]), let wall = Double(fields[2]), wall > 0 else {
                throw PeerError("a \(peer.title) poller reported \(fields)")
            }
            idleShares.append(cpu / wall)
            _ = try process.expect("ready")
        }
        var returned: [UInt64] = []
        for sequence in 0..<writes {
            try store.set(sequence, forKey: "t")
            returned.append(monotonicNanoseconds())
            // 1 to 2 ms apart, at random: writes 1 ms apart would keep one phase to the 1 ms polls.
            usleep(1_000 + UInt32.random(in: 0..<1_000))
        }
        var latencies = Samples(), seen = 0
        for process in processes {
            _ = try process.expect("got \(writes - 1) ")
            let cpu = try process.expect("cpu ").split(separator: " ")
            if cpu.count == 2, let nanoseconds = Double(cpu[1]) { cpuPerThousand.add(nanoseconds / Double(writes) * 1_000 / 1_000_000) }
            var next = 0
            for line in process.lines where line.hasPrefix("got ") {
                let fields = line.split(separator: " ")
                guard fields.count == 3, let value = Int(fields[1]), let arrived = UInt64(fields[2]) else { continue }
                seen += 1
                while next <= min(value, writes - 1) {
                    latencies.add((Double(arrived) - Double(returned[next])) / 1_000)
                    next += 1
                }
            }
            process.closeInput()
            _ = process.wait(timeout: .seconds(60))
        }
        guard latencies.values.count == watchers * writes else {
            throw PeerError("the \(peer.title) pollers saw \(latencies.values.count) of \(watchers * writes) changes")
        }
        let stamp = peer == .sqlite ? "PRAGMA data_version" : "the last transaction id (mdb_env_info)"
        let idleShare = idleShares.reduce(0, +) / Double(idleShares.count)
        let cpu = BenchRow.PeerColumn(peer: peer, figure: .init(cpuPerThousand),
                                      note: "the poller's CPU time per 1,000 changes delivered, while \(writes) changes came 1–2 ms apart; it polls whether or not anything changes")
        let latency = BenchRow.PeerColumn(peer: peer, figure: .init(latencies),
                     note: String(format: "%d %@ polling %@ every 1 ms (usleep), then reading t, writes 1–2 ms apart at random; a change counts as delivered at the first poll that sees it or a later one (%d of %d seen one by one); max %.0f µs; an idle poller uses %.1f%% of a core",
                                  watchers, watchers == 1 ? "process" : "processes", stamp, seen, watchers * writes, latencies.maximum ?? 0, idleShare * 100))
        return (latency, cpu)
    }

    /// The library part of a new process: from just before opening a 100-key store to its first value.
    private func coldStart(_ peer: Peer) throws -> BenchRow.PeerColumn {
        _ = try peerStore(peer, "cold", keys: 100)
        var samples = Samples()
        for _ in 0..<options.samples(60, quick: 10) {
            let process = try worker("\(peer.rawValue)-cold", ["suite": "cold"])
            let fields = try process.expect("cold").split(separator: " ")
            _ = process.wait(timeout: .seconds(60))
            guard fields.count == 4, let start = UInt64(fields[1]), let read = UInt64(fields[2]), fields[3] == "true" else {
                throw PeerError("a \(peer.title) cold start did not read its value: \(fields)")
            }
            samples.add(Double(read - start) / 1_000)
        }
        let open = peer == .sqlite ? "sqlite3_open_v2, prepare, one SELECT" : "mdb_env_create, mdb_env_open, a read transaction, mdb_get"
        return .init(peer: peer, figure: .init(samples),
                     note: "from just before opening a 100-key store to the first value read, in a new process (\(open)); the library was loaded (dlopen) before, as a linked program's would be")
    }

    /// Peak RSS of a process that opened a 10,000-key store and read every key once.
    private func memory(_ peer: Peer, ours: BenchRow) throws -> BenchRow.PeerColumn {
        _ = try peerStore(peer, "memory", keys: 10_000)
        let path = peer.path("memory", in: root)
        let fields = try worker("\(peer.rawValue)-memory", ["suite": "memory"]).expect("memory").split(separator: " ")
        guard fields.count == 4, let before = Double(fields[1]), let peak = Double(fields[2]), fields[3] == "10000" else {
            throw PeerError("a \(peer.title) memory probe did not read 10,000 keys: \(fields)")
        }
        let size = Double((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0) / 1_048_576
        return .init(peer: peer, figure: .init(median: peak / 1_024, p99: nil),
                     note: String(format: "MiB: peak RSS of a process that opened a 10,000-key store and read every value once (keeping none); %.2f MiB above the process before opening; the file is %.2f MiB",
                                  (peak - before) / 1_024, size))
    }
}
