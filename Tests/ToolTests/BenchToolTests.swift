import ChildProcess
import Foundation
import Testing
import TestSupport

/// suite-bench --quick runs to the end and its counts verify. Timings are not
/// asserted: these machines are shared and noisy; Docs/Performance.md has the figures.
@Suite("suite-bench, quick", .serialized)
struct BenchToolTests {
    let home = TemporaryDirectory("suite-bench-home")
    let directory = TemporaryDirectory()

    @Test func completesWithEveryRowAndAnExactCount() throws {
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = home.path
        environment["XDG_CONFIG_HOME"] = nil
        let bench = try run(program: "suite-bench",
                            ["--quick", "--json", "--dir", directory.path, "--svg", directory.file("chart.svg").path],
                            environment: environment, within: .seconds(600))
        #expect(bench.status == .exited(0), "\(bench.errors.suffix(500))")
        let json = try #require(bench.lines.last)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect((object["machine"] as? String)?.isEmpty == false)
        let rows = try #require(object["rows"] as? [[String: Any]])
        #expect(rows.compactMap { $0["name"] as? String } == [
            "set", "get", "get_foundation_sync", "writes100", "update", "update_contended", "scale_10", "scale_1000",
            "scale_10000", "scale_1mib_value", "notify_1", "notify_8", "notify_cpu", "cold_start", "durable_set", "memory",
        ])
        for row in rows {
            for field in ["ours_median_us", "ours_p99_us", "foundation_median_us", "foundation_p99_us", "floor_median_us", "floor_p99_us", "note"] {
                #expect(row.keys.contains(field), "\(row["name"] ?? "") lacks \(field)")
            }
            #expect(row["ours_median_us"] is Double || row["ours_median_us"] is Int, "\(row["name"] ?? "")")
            #expect(row["peers"] == nil, "without --peers the report is as it was")
        }
        let contended = rows.first { $0["name"] as? String == "update_contended" }
        #expect((contended?["note"] as? String)?.contains("(exact)") == true)
        #expect((contended?["note"] as? String)?.contains("commits per second") == true)
        #expect(((rows.first { $0["name"] as? String == "memory" })?["note"] as? String)?.hasPrefix("MiB") == true)
        #expect(rows.first { $0["name"] as? String == "notify_8" }?["foundation_median_us"] is NSNull)
        let cpu = rows.first { $0["name"] as? String == "notify_cpu" }
        #expect((cpu?["note"] as? String)?.hasPrefix("ms of CPU") == true)
        #expect((cpu?["ours_median_us"] as? Double).map { $0 > 0 } == true, "a watcher's CPU is measured: \(cpu ?? [:])")
        // The chart was written, and UserDefaults wrote nothing into the user's configuration.
        let chart = try String(contentsOf: directory.file("chart.svg"), encoding: .utf8)
        #expect(chart.hasPrefix("<svg") && chart.contains("faster than Foundation"))
        #expect(!FileManager.default.fileExists(atPath: home.file(".config").path), "\(home.names())")
        #expect(directory.names() == ["chart.svg"], "the run's own directory was removed")
    }

    /// suite-bench --quick --peers: every row has SQLite's and LMDB's column, a figure or a
    /// note, and the peers' contended counts are exact. A peer that is not installed is
    /// reported as such and its numbers are not checked; timings are not asserted.
    @Test func peersHaveAColumnOnEveryRow() throws {
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = home.path
        environment["XDG_CONFIG_HOME"] = nil
        let bench = try run(program: "suite-bench",
                            ["--quick", "--peers", "--json", "--dir", directory.path, "--svg", directory.file("chart.svg").path],
                            environment: environment, within: .seconds(900))
        #expect(bench.status == .exited(0), "\(bench.errors.suffix(500))")
        let json = try #require(bench.lines.last)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let rows = try #require(object["rows"] as? [[String: Any]])
        #expect(rows.count == 16)
        var installed = ["sqlite": true, "lmdb": true]
        for row in rows {
            let name = row["name"] as? String ?? ""
            let peers = try #require(row["peers"] as? [String: [String: Any]], "\(name) lacks peers")
            #expect(Set(peers.keys) == ["sqlite", "lmdb"], "\(name)")
            for (peer, column) in peers {
                for field in ["median_us", "p99_us", "note"] { #expect(column.keys.contains(field), "\(name).\(peer) lacks \(field)") }
                let note = column["note"] as? String ?? ""
                if note.hasPrefix("not installed") {
                    #expect(note.contains(peer == "sqlite" ? "libsqlite3-0" : "liblmdb0"), "\(note)")
                    installed[peer] = false
                } else {
                    // Every row of this run applies to both peers.
                    #expect(column["median_us"] is Double || column["median_us"] is Int, "\(name).\(peer): \(note)")
                }
            }
        }
        for (peer, isInstalled) in installed.sorted(by: { $0.key < $1.key }) where !isInstalled {
            print("suite-bench --peers: \(peer) is not installed here; its numbers were not checked")
        }
        let contended = try #require(rows.first { $0["name"] as? String == "update_contended" }?["peers"] as? [String: [String: Any]])
        for (peer, column) in contended where installed[peer] == true {
            #expect((column["note"] as? String)?.contains("(exact)") == true, "\(peer): \(column["note"] ?? "")")
        }
        for name in ["notify_1", "notify_8"] {
            let peers = try #require(rows.first { $0["name"] as? String == name }?["peers"] as? [String: [String: Any]])
            for (peer, column) in peers where installed[peer] == true {
                #expect((column["note"] as? String)?.contains("idle poller uses") == true, "\(name).\(peer)")
            }
        }
        let chart = try String(contentsOf: directory.file("chart.svg"), encoding: .utf8)
        for (peer, title) in [("sqlite", "SQLite"), ("lmdb", "LMDB")] where installed[peer] == true {
            #expect(chart.contains("Ours beside \(title)"))
        }
        #expect(!FileManager.default.fileExists(atPath: home.file(".config").path), "\(home.names())")
        #expect(directory.names() == ["chart.svg"], "the run's own directory was removed")
    }
}
