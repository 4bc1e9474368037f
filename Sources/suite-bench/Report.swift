import Foundation
import Glibc

/// The table, the targets, and the JSON report.
enum Report {
    /// What this machine is: processor, cores, kernel, and the file system measured on.
    static func machine(directory: URL) -> String {
        let cpu = ((try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? "").split(separator: "\n")
            .first { $0.hasPrefix("model name") }.map { String($0.split(separator: ":").last ?? "").trimmingCharacters(in: .whitespaces) } ?? "unknown processor"
        var names = utsname()
        uname(&names)
        let kernel = withUnsafeBytes(of: names.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        // The file system of the longest mount point that holds the directory.
        let mounts = ((try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8)) ?? "").split(separator: "\n")
            .map { $0.split(separator: " ").map(String.init) }.filter { $0.count >= 3 }
        let type = mounts.filter { directory.path.hasPrefix($0[1]) }.max { $0[1].count < $1[1].count }?[2] ?? "unknown file system"
        return "\(cpu), \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) cores, Linux \(kernel), \(type)"
    }

    static func format(_ value: Double?, unit: String) -> String {
        guard let value, value.isFinite else { return "—" }
        let number = value >= 1_000 ? String(format: "%.0f", value) : value >= 10 ? String(format: "%.1f", value) : String(format: "%.2f", value)
        return number + " " + unit
    }

    static func unit(_ row: BenchRow) -> String {
        switch row.kind {
        case .time: "µs"
        case .throughput: "/s"
        case .memory: "MiB"
        case .cpu: "ms CPU"
        }
    }

    /// "37.3× faster", "49.5× more", "1.2× less".
    static func comparison(_ row: BenchRow) -> String {
        guard let ratio = row.foundationRatio else { return "—" }
        let word = switch row.kind {
        case .time: "faster"
        case .throughput: "more"
        case .memory, .cpu: "less"
        }
        return String(format: "%.1f× ", ratio) + word
    }

    static func table(_ rows: [BenchRow]) -> String {
        // A figure wider than its column keeps one space before it.
        func pad(_ text: String, _ width: Int) -> String { " " + String(repeating: " ", count: max(width - 1 - text.count, 0)) + text }
        var lines = ["row                          ours p50       p99 |  Foundation p50       p99   ours is |   floor p50       p99  floor ×"]
        func line(_ row: BenchRow, label: String? = nil) -> String {
            let unit = unit(row)
            var line = (label ?? row.name).padding(toLength: 24, withPad: " ", startingAt: 0)
            line += pad(format(row.ours.median, unit: unit), 13) + pad(format(row.ours.p99, unit: unit), 10) + " |"
            line += pad(format(row.foundation?.median, unit: unit), 15) + pad(format(row.foundation?.p99, unit: unit), 10)
            line += pad(comparison(row), 15) + " |"
            line += pad(format(row.floor?.median, unit: unit), 12) + pad(format(row.floor?.p99, unit: unit), 10)
            line += pad(row.floorRatio.map { String(format: "%.1f×", $0) } ?? "—", 9)
            for column in row.peers ?? [] {
                line += " |" + pad(format(column.figure?.median, unit: unit), 13) + pad(format(column.figure?.p99, unit: unit), 10)
                line += pad(peerComparison(row, column), 15)
            }
            return line
        }
        for row in rows {
            lines.append(line(row))
            // A row with a static build has a second line for it, or says why it has none.
            if let staticRow = row.staticBuildRow {
                lines.append(line(staticRow, label: "  static build"))
            } else if let oursStatic = row.oursStatic {
                lines.append("\(row.name) (static): \(oursStatic.note)")
            }
        }
        if let peers = rows.first(where: { $0.peers != nil })?.peers {
            for column in peers { lines[0] += " |" + pad("\(column.peer.title) p50", 13) + pad("p99", 10) + pad("ours is", 15) }
        }
        return lines.joined(separator: "\n")
    }

    /// "2.1× faster", "1.6× slower", "1.3× fewer": ours beside a peer.
    static func peerComparison(_ row: BenchRow, _ column: BenchRow.PeerColumn) -> String {
        guard let ratio = row.peerRatio(column) else { return "—" }
        let (better, worse) = switch row.kind {
        case .time: ("faster", "slower")
        case .throughput: ("more", "fewer")
        case .memory, .cpu: ("less", "more")
        }
        return ratio >= 1 ? String(format: "%.1f× ", ratio) + better : String(format: "%.1f× ", 1 / ratio) + worse
    }

    /// With --peers: what each peer's column measures, row by row.
    static func peerNotes(_ rows: [BenchRow]) -> [String] {
        var notes = Peer.allCases.map(\.description)
        for row in rows {
            for column in row.peers ?? [] where !column.note.isEmpty && column.peer.isInstalled {
                notes.append("\(row.name), \(column.peer.title): \(column.note)")
            }
        }
        return notes
    }

    /// The targets of the benchmark issue, each met or missed.
    static func targets(_ rows: [BenchRow], verified: Bool) -> [(String, Bool)] {
        func row(_ name: String) -> BenchRow? { rows.first { $0.name == name } }
        var targets: [(String, Bool)] = []
        if let set = row("set") {
            targets.append(("set median ≤ 10 µs, within 5× of the append floor (\(format(set.ours.median, unit: "µs")), \(String(format: "%.1f×", set.floorRatio ?? 0)))",
                            set.ours.median <= 10 && (set.floorRatio ?? .infinity) <= 5))
            targets.append(("set ≥ 40× faster than Foundation's persisted set (\(String(format: "%.0f×", set.foundationRatio ?? 0)))",
                            (set.foundationRatio ?? 0) >= 40))
        }
        if let get = row("get") {
            targets.append(("fresh get ≤ 0.2 µs and faster than Foundation's stale cached get (\(format(get.ours.median, unit: "µs")) vs \(format(get.foundation?.median, unit: "µs")))",
                            get.ours.median <= 0.2 && get.ours.median < (get.foundation?.median ?? 0)))
        }
        if let writes = row("writes100") {
            targets.append(("100 writes ≤ 2 ms (\(format(writes.ours.median, unit: "µs")))", writes.ours.median <= 2_000))
        }
        if let contended = row("update_contended") {
            targets.append(("contended update ≥ 20,000 commits/s across 4 processes, exact count (\(format(contended.ours.median, unit: "/s")))",
                            contended.ours.median >= 20_000 && verified))
        }
        if let small = row("scale_10"), let large = row("scale_10000") {
            targets.append(("set at 10,000 keys within 2× of set at 10 keys (\(String(format: "%.2f×", large.ours.median / small.ours.median)))",
                            large.ours.median <= 2 * small.ours.median))
        }
        if let notify = row("notify_8") {
            targets.append(("notification with 8 watchers: p50 ≤ 250 µs, p99 ≤ 2 ms (\(format(notify.ours.median, unit: "µs")), \(format(notify.ours.p99, unit: "µs")))",
                            notify.ours.median <= 250 && (notify.ours.p99 ?? .infinity) <= 2_000))
        }
        if let cold = row("cold_start") {
            targets.append(("cold start to first read ≤ 0.3 ms for the library part (\(format(cold.ours.median, unit: "µs")))", cold.ours.median <= 300))
        }
        // The second round's (issue #12): ahead of LMDB, only with --peers.
        func lmdb(_ row: BenchRow) -> Double? {
            row.peers?.first(where: { $0.peer == .lmdb })?.figure.map(\.median).flatMap { $0 > 0 ? $0 : nil }
        }
        for name in ["set", "get", "update", "writes100"] {
            guard let row = row(name), let peer = lmdb(row) else { continue }
            targets.append(("\(name) at or below LMDB's (\(format(row.ours.median, unit: "µs")) vs \(format(peer, unit: "µs")), \(String(format: "%.2f×", row.ours.median / peer)))",
                            row.ours.median <= peer))
        }
        if let set = row("set") {
            // How near the floor this design can come at all: its commit's system calls.
            var calls = ""
            if let system = set.systemCalls?.median, let floor = set.floor?.median, floor > 0 {
                calls = String(format: "; our commit's system calls alone %.2f×", system / floor)
            }
            targets.append(("set within 1.6× of the flock + append floor (\(String(format: "%.1f×", set.floorRatio ?? 0))\(calls))",
                            (set.floorRatio ?? .infinity) <= 1.6))
        }
        if let contended = row("update_contended"), let peer = lmdb(contended) {
            // At least LMDB's, or 0.75× of it when flock's own hand-over (the floor) is
            // below LMDB's commits per second.
            let floor = contended.floor?.median ?? .infinity
            let needed = floor < peer ? 0.75 : 1
            targets.append(("contended update ≥ \(needed == 1 ? "" : "0.75× ")LMDB's commits/s (\(format(contended.ours.median, unit: "/s")) vs \(format(peer, unit: "/s")), \(String(format: "%.2f×", contended.ours.median / peer)); the flock floor \(format(floor, unit: "/s")))",
                            contended.ours.median >= needed * peer && verified))
        }
        // Judged with delivery on the watcher's thread, where an observation asks for it.
        for name in ["notify_1", "notify_1_watcher_thread"] {
            guard let notify = row(name), let floor = notify.floor?.median else { continue }
            guard floor > 0 else {
                // The bare reader, woken on the writer's processor, ran before the
                // writer's pwrite returned: no ratio to it means anything.
                targets.append(("\(name) p50 ≤ 3× the bare inotify wake: not judged, the floor came out negative (\(format(floor, unit: "µs")): its reader preempted the writer); run again", false))
                continue
            }
            targets.append(("\(name) p50 ≤ 3× the bare inotify wake (\(format(notify.ours.median, unit: "µs")), \(String(format: "%.1f×", notify.ours.median / floor)))",
                            notify.ours.median <= 3 * floor))
        }
        if let notify = row("notify_8") {
            targets.append(("notify_8 p99 ≤ 1 ms (\(format(notify.ours.p99, unit: "µs")))", (notify.ours.p99 ?? .infinity) <= 1_000))
        }
        // Only with --peers, beside the C program with LMDB; judged on the build the docs
        // recommend for widgets (static) when it was built.
        if let spawn = row("spawn_to_first_read"), let lmdb = spawn.peers?.first(where: { $0.peer == .lmdb })?.figure, lmdb.median > 0 {
            let (ours, build) = spawn.judged
            let ratio = ours.median / lmdb.median
            targets.append(("widget from posix_spawn to first value ≤ 3× a C program with LMDB (\(build): \(format(ours.median, unit: "µs")) vs \(format(lmdb.median, unit: "µs")), \(String(format: "%.2f×", ratio)))",
                            ratio <= 3))
        }
        // Judged on the static build when it was built, as spawn_to_first_read is.
        if let memory = row("widget_memory") {
            let (above, build) = memory.judged
            targets.append((String(format: "a widget's peak RSS within 2 MiB of a bare Swift process (%@: %.2f MiB above it, 10,000 keys)", build, above.median),
                            above.median <= 2))
        }
        // Sync through etcd (issue #15), where etcd is installed.
        if let sync = row("sync_latency"), sync.ours.median.isFinite {
            let p99 = sync.ours.p99 ?? .infinity
            targets.append((String(format: "sync from a set on machine A to an observer on machine B through etcd: p50 ≤ 5 ms, p99 ≤ 20 ms (%.2f ms, %.2f ms)",
                                   sync.ours.median / 1_000, p99 / 1_000),
                            sync.ours.median <= 5_000 && p99 <= 20_000))
        }
        return targets
    }

    static func json(_ rows: [BenchRow], machine: String) -> String {
        let object: [String: Any] = ["machine": machine, "rows": rows.map(\.jsonObject)]
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}
