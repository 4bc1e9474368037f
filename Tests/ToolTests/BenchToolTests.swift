import ChildProcess
import Foundation
import SuiteDefaults
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
            "scale_10000", "scale_1mib_value", "notify_1", "notify_1_watcher_thread", "notify_8", "notify_cpu", "cold_start", "spawn_to_first_read",
            "durable_set", "memory", "widget_memory", "sync_latency", "sync_throughput",
        ])
        for row in rows {
            for field in ["ours_median_us", "ours_p99_us", "foundation_median_us", "foundation_p99_us", "floor_median_us", "floor_p99_us", "note"] {
                #expect(row.keys.contains(field), "\(row["name"] ?? "") lacks \(field)")
            }
            #expect(row["ours_median_us"] is Double || row["ours_median_us"] is Int || Self.etcdMissing(row), "\(row["name"] ?? "")")
            #expect(row["peers"] == nil, "without --peers the report is as it was")
        }
        // The set row says what our commit's system calls alone cost, the nearest to the
        // floor this design can come.
        let set = try #require(rows.first { $0["name"] as? String == "set" })
        #expect((set["system_calls_median_us"] as? Double).map { $0 > 0 } == true, "\(set)")
        #expect((set["note"] as? String)?.contains("five system calls") == true)
        let contended = rows.first { $0["name"] as? String == "update_contended" }
        #expect((contended?["note"] as? String)?.contains("(exact)") == true)
        #expect((contended?["note"] as? String)?.contains("commits per second") == true)
        #expect(((rows.first { $0["name"] as? String == "memory" })?["note"] as? String)?.hasPrefix("MiB") == true)
        // Every row names the unit its `*_us` fields hold.
        let units = Dictionary(rows.compactMap { row in (row["name"] as? String).map { ($0, row["unit"] as? String) } }) { first, _ in first }
        #expect(units["set"] == "µs" && units["memory"] == "MiB" && units["widget_memory"] == "MiB"
                && units["update_contended"] == "per second" && units["notify_cpu"] == "ms of CPU per 1,000 changes", "\(units)")
        #expect(rows.first { $0["name"] as? String == "notify_8" }?["foundation_median_us"] is NSNull)
        // The widget's start: ours as swift build links it, always; the static build, a
        // figure or "not built" with the command that builds it; the C floor when cc is here.
        let spawn = try #require(rows.first { $0["name"] as? String == "spawn_to_first_read" })
        #expect((spawn["ours_median_us"] as? Double).map { $0 > 0 } == true, "\(spawn)")
        #expect((spawn["note"] as? String)?.contains("posix_spawn") == true)
        let staticBuild = try #require(spawn["ours_static"] as? [String: Any], "\(spawn)")
        let staticNote = staticBuild["note"] as? String ?? ""
        if staticNote.hasPrefix("not built") {
            #expect(staticNote.contains("--static-swift-stdlib") && staticBuild["median_us"] is NSNull, "\(staticNote)")
        } else {
            #expect((staticBuild["median_us"] as? Double).map { $0 > 0 } == true, "\(staticBuild)")
        }
        #expect(spawn["floor_median_us"] is Double || (spawn["note"] as? String)?.contains("none:") == true, "\(spawn)")
        // A widget's memory above the same program opening nothing: a positive figure in
        // MiB, for the static build too when it was built.
        let widgetMemory = try #require(rows.first { $0["name"] as? String == "widget_memory" })
        #expect((widgetMemory["note"] as? String)?.hasPrefix("MiB") == true, "\(widgetMemory)")
        #expect((widgetMemory["ours_median_us"] as? Double).map { $0 > 0 } == true, "\(widgetMemory)")
        let widgetStatic = try #require(widgetMemory["ours_static"] as? [String: Any], "\(widgetMemory)")
        if ["not built", "not measured"].contains(where: (widgetStatic["note"] as? String ?? "").hasPrefix) {
            #expect(widgetStatic["median_us"] is NSNull, "\(widgetStatic)")
        } else {
            #expect((widgetStatic["median_us"] as? Double).map { $0 > 0 } == true, "\(widgetStatic)")
        }
        // Sync through a local etcd: a figure, or the note naming the package where etcd is missing.
        for name in ["sync_latency", "sync_throughput"] {
            let row = try #require(rows.first { $0["name"] as? String == name })
            let note = row["note"] as? String ?? ""
            if EtcdCluster.executable == nil {
                #expect(Self.etcdMissing(row) && note == "not installed (apt-get install etcd-server)", "\(row)")
            } else {
                #expect((row["ours_median_us"] as? Double).map { $0 > 0 } == true, "\(row)")
                #expect(note.contains(name == "sync_latency" ? "observer" : "all \(200) arrived"), "\(note)")
            }
        }
        if EtcdCluster.executable == nil { print("suite-bench: etcd is not installed here; the sync rows were not measured") }
        let cpu = rows.first { $0["name"] as? String == "notify_cpu" }
        #expect((cpu?["note"] as? String)?.hasPrefix("ms of CPU") == true)
        #expect((cpu?["note"] as? String)?.contains("with delivery on the watcher's thread") == true, "\(cpu ?? [:])")
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
        #expect(rows.count == 21)
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
                } else if name.hasPrefix("sync_") {
                    // Neither peer syncs machines.
                    #expect(note == "not applicable" && column["median_us"] is NSNull, "\(name).\(peer): \(note)")
                } else if name == "widget_memory" {
                    // A C program has no Swift runtime to compare a bare one with.
                    #expect(note.hasPrefix("not measured") && column["median_us"] is NSNull, "\(name).\(peer): \(note)")
                } else if name == "spawn_to_first_read" && (peer == "sqlite" || note.contains("cc")) {
                    // No C program for SQLite; LMDB's needs a C compiler, which a machine may lack.
                    #expect(note.hasPrefix("not measured") || note.contains("cc"), "\(name).\(peer): \(note)")
                } else {
                    // Every other row of this run applies to both peers.
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
        for name in ["notify_1", "notify_1_watcher_thread", "notify_8"] {
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

    /// A sync row without a figure because etcd is not installed.
    static func etcdMissing(_ row: [String: Any]) -> Bool {
        (row["name"] as? String)?.hasPrefix("sync_") == true && row["ours_median_us"] is NSNull
            && (row["note"] as? String)?.hasPrefix("not installed") == true
    }

    /// --only measures the groups it names and no other, and refuses a group it does not know.
    /// A static probe that is broken (one that answers nothing the probe would, or
    /// figures that cannot be) costs its rows' static lines, with a note, not the run.
    @Test func aBrokenStaticProbeIsNotedAndTheRunGoesOn() throws {
        let garbage = directory.file("garbage-probe")
        try "#!/bin/sh\necho garbage\n".write(to: garbage, atomically: true, encoding: .utf8)
        // Answers --bare as the probe does, then peaks lower opening a suite than opening nothing.
        let impossible = directory.file("impossible-probe")
        try """
            #!/bin/sh
            if [ "$1" = --bare ] && [ -z "$2" ]; then echo bare; exit 0; fi
            if [ "$1" = --bare ]; then echo "peak_rss_kib 900000 keys 0"; exit 0; fi
            if [ "$1" = --memory ]; then echo "peak_rss_kib 1 keys 10000"; exit 0; fi
            echo nonsense; exit 4

            """.write(to: impossible, atomically: true, encoding: .utf8)
        for script in [garbage, impossible] { #expect(chmod(script.path, 0o755) == 0) }
        let runs = directory.file("runs")
        try FileManager.default.createDirectory(at: runs, withIntermediateDirectories: true)
        for (probe, reason) in [(garbage.path, "printed \"garbage\\n\""), (impossible.path, "peaked lower opening a suite"),
                                (directory.file("absent").path, "is not an executable file")] {
            let bench = try run(program: "suite-bench", ["--quick", "--json", "--only", "memory", "--dir", runs.path, "--static-probe", probe],
                                within: .seconds(300))
            #expect(bench.status == .exited(0), "\(bench.errors.suffix(500))")
            let object = try #require(try JSONSerialization.jsonObject(with: Data((bench.lines.last ?? "").utf8)) as? [String: Any])
            let rows = try #require(object["rows"] as? [[String: Any]])
            let widget = try #require(rows.first { $0["name"] as? String == "widget_memory" })
            let staticBuild = try #require(widget["ours_static"] as? [String: Any], "\(widget)")
            let note = staticBuild["note"] as? String ?? ""
            #expect(note.hasPrefix("not measured") && note.contains(reason) && staticBuild["median_us"] is NSNull, "\(note)")
            #expect((widget["ours_median_us"] as? Double).map { $0 > 0 } == true, "the build swift build made is still measured: \(widget)")
        }
        #expect((try? FileManager.default.contentsOfDirectory(atPath: runs.path))?.isEmpty == true, "the runs' own directories were removed")
    }

    @Test func onlyMeasuresTheNamedGroups() throws {
        let bench = try run(program: "suite-bench", ["--quick", "--json", "--only", "set,notify", "--dir", directory.path],
                            within: .seconds(300))
        #expect(bench.status == .exited(0), "\(bench.errors.suffix(500))")
        let object = try #require(try JSONSerialization.jsonObject(with: Data((bench.lines.last ?? "").utf8)) as? [String: Any])
        let rows = try #require(object["rows"] as? [[String: Any]])
        #expect(rows.compactMap { $0["name"] as? String } == ["set", "notify_1", "notify_1_watcher_thread", "notify_8", "notify_cpu"])
        let unknown = try run(program: "suite-bench", ["--only", "set,nothing", "--dir", directory.path])
        #expect(unknown.status == .exited(2) && unknown.errors.contains("no group nothing"), "\(unknown.errors)")
        #expect(directory.names().isEmpty, "the runs' own directories were removed")
    }

    /// suite-first-read, the widget probe that spawn_to_first_read starts, as a real
    /// process: it prints the value it is asked for, its peak memory, or, bare, nothing of a suite.
    @Test func widgetProbePrintsTheValue() throws {
        let suite = try Suite(named: "group.widget", directory: directory.url)
        try suite.set("imperial ✓", forKey: "units.system")
        for index in 0..<50 { try suite.set("value \(index)", forKey: "key.\(index)") }
        let read = try run(program: "suite-first-read", [directory.path, "group.widget", "units.system"])
        #expect(read.status == .exited(0), "\(read.errors)")
        #expect(read.lines == ["imperial ✓"])
        let absent = try run(program: "suite-first-read", [directory.path, "group.widget", "absent"])
        #expect(absent.status == .exited(1) && absent.lines.isEmpty)
        let memory = try run(program: "suite-first-read", ["--memory", directory.path, "group.widget"])
        let fields = memory.lines.first?.split(separator: " ") ?? []
        #expect(memory.status == .exited(0) && fields.count == 4 && fields[0] == "peak_rss_kib" && fields[3] == "51", "\(memory.lines)")
        #expect(fields.count == 4 && (Int(fields[1]) ?? 0) > 0)
        #expect(try run(program: "suite-first-read", ["--bare"]).lines == ["bare"])
        #expect(try run(program: "suite-first-read", ["--bare", "--memory"]).lines.first?.hasPrefix("peak_rss_kib ") == true)
        #expect(try run(program: "suite-first-read", ["too", "few"]).status == .exited(2))
    }
}
