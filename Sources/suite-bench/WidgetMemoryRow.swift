import Foundation
import ToolSupport

extension Bench {
    /// What opening a suite adds to a widget's peak memory: the widget probe
    /// (suite-first-read) opening a 10,000-key suite by name and reading every value once,
    /// keeping none, less the same program opening nothing (`--bare --memory`), in MiB. Ours
    /// as `swift build` links it, and as the docs recommend building a widget (the static
    /// build, when built). The four runs of a round take turns; each build's figure is the
    /// median over the rounds of its own difference in that round.
    func widgetMemoryRow() throws -> BenchRow {
        let name = "widget-memory", keys = 10_000
        _ = try suite(name, keys: keys)
        let staticProbe = StartUpPrograms.staticProbe(given: options.staticProbe)
        var builds = ["dynamic": StartUpPrograms.dynamicProbe]
        if let path = staticProbe.path { builds["static"] = path }

        func peakKiB(_ path: String, _ arguments: [String], keys expected: Int) throws -> Double {
            let run = try TimedSpawn(path, arguments)
            let fields = run.output.split(whereSeparator: \.isWhitespace)
            guard run.status == 0, fields.count == 4, fields[0] == "peak_rss_kib", let peak = Double(fields[1]), peak > 0,
                  fields[3] == "\(expected)"
            else {
                throw ToolError(status: 1, message: "\(path) \(arguments.joined(separator: " ")) ended with \(run.status): \(run.output.suffix(300))")
            }
            return peak
        }
        var above: [String: Samples] = [:], bare: [String: Samples] = [:]
        var staticNote = staticProbe.note
        for round in 0..<options.samples(15, quick: 3) {
            // Each round starts with the other build, so that neither always runs first.
            for build in builds.keys.sorted(by: { round % 2 == 0 ? $0 < $1 : $0 > $1 }) {
                let path = builds[build]!
                do {
                    let opened = try peakKiB(path, ["--memory", root.path, name, "\(keys)"], keys: keys)
                    let nothing = try peakKiB(path, ["--bare", "--memory"], keys: 0)
                    guard opened >= nothing else {
                        throw ToolError(status: 1, message: "\(path) peaked lower opening a suite (\(Int(opened)) KiB) than opening nothing (\(Int(nothing)) KiB)")
                    }
                    above[build, default: Samples()].add((opened - nothing) / 1_024)
                    bare[build, default: Samples()].add(nothing / 1_024)
                } catch where build == "static" {
                    // A broken static build costs its line, not the run.
                    builds["static"] = nil
                    above["static"] = nil
                    bare["static"] = nil
                    staticNote = "not measured: \((error as? ToolError)?.message ?? "\(error)")"
                }
            }
        }

        func mebibytes(_ samples: Samples?) -> String { samples?.median.map { String(format: "%.1f MiB", $0) } ?? "not measured" }
        var row = BenchRow(
            name: "widget_memory", ours: .init(above["dynamic"]!)!, foundation: nil, floor: nil,
            note: "MiB, not µs: how much higher the peak RSS (VmHWM) of suite-first-read, which links only SuiteDefaults, is when it opens a 10,000-key suite by name and reads every value once, keeping none, than when it opens nothing (--bare --memory: a bare Swift process with the same libraries); "
                + "the bare program peaks at \(mebibytes(bare["dynamic"])) as swift build links it and at \(mebibytes(bare["static"])) in the static build; "
                + "\(options.samples(15, quick: 3)) rounds, the builds taking turns, the median of each round's difference")
        row.oursStatic = .init(figure: above["static"].flatMap { .init($0) }, note: staticNote)
        if options.peers {
            row.peers = Peer.allCases.map {
                .init(peer: $0, figure: nil, note: "not measured: a C program has no Swift runtime to be compared with (the memory row has each peer's own peak)")
            }
        }
        return row
    }
}
