import ChildProcess
import Foundation
import Testing
import TestSupport

/// suite-bench --quick runs to the end and its counts verify. Timings are not
/// asserted: these machines are shared and noisy; Docs/Performance.md has the figures.
@Suite("suite-bench, quick")
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
            "scale_10000", "scale_1mib_value", "notify_1", "notify_8", "cold_start", "durable_set", "memory",
        ])
        for row in rows {
            for field in ["ours_median_us", "ours_p99_us", "foundation_median_us", "foundation_p99_us", "floor_median_us", "floor_p99_us", "note"] {
                #expect(row.keys.contains(field), "\(row["name"] ?? "") lacks \(field)")
            }
            #expect(row["ours_median_us"] is Double || row["ours_median_us"] is Int, "\(row["name"] ?? "")")
        }
        let contended = rows.first { $0["name"] as? String == "update_contended" }
        #expect((contended?["note"] as? String)?.contains("(exact)") == true)
        #expect((contended?["note"] as? String)?.contains("commits per second") == true)
        #expect(((rows.first { $0["name"] as? String == "memory" })?["note"] as? String)?.hasPrefix("MiB") == true)
        #expect(rows.first { $0["name"] as? String == "notify_8" }?["foundation_median_us"] is NSNull)
        // The chart was written, and UserDefaults wrote nothing into the user's configuration.
        let chart = try String(contentsOf: directory.file("chart.svg"), encoding: .utf8)
        #expect(chart.hasPrefix("<svg") && chart.contains("faster than Foundation"))
        #expect(!FileManager.default.fileExists(atPath: home.file(".config").path), "\(home.names())")
        #expect(directory.names() == ["chart.svg"], "the run's own directory was removed")
    }
}
