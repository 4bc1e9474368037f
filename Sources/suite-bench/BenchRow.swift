import Foundation

/// One row of the table: ours, Foundation's UserDefaults doing the same job, and the
/// floor (the bare system calls that give the same guarantee), each where it applies.
struct BenchRow: Sendable {
    var name: String
    var ours: Figure
    var foundation: Figure?
    var floor: Figure?
    var note: String
    /// With --peers: SQLite's and LMDB's columns, in Peer.allCases order.
    var peers: [PeerColumn]? = nil
    /// For set: the system calls of one of our commits and nothing else
    /// (`Floor.commitSystemCalls`), the nearest to the floor a commit of this design
    /// can come.
    var systemCalls: Figure? = nil
    /// For a row that starts a program of ours (spawn_to_first_read, widget_memory): the same program
    /// built as the docs recommend for widgets (Scripts/build-widget-static), or why
    /// there is no figure (not built).
    var oursStatic: BuildColumn? = nil

    /// A median and a 99th percentile, in microseconds unless the row's note says otherwise.
    struct Figure: Sendable {
        var median: Double
        var p99: Double?

        init(median: Double, p99: Double?) {
            self.median = median
            self.p99 = p99
        }

        init?(_ samples: Samples) {
            guard let median = samples.median else { return nil }
            self.init(median: median, p99: samples.p99)
        }
    }

    /// A peer's figure for the row, or why it has none (not installed, does not apply).
    struct PeerColumn: Sendable {
        var peer: Peer
        var figure: Figure?
        var note: String
    }

    /// Another build of ours: its figure, or why it has none, and which build it is.
    struct BuildColumn: Sendable {
        var figure: Figure?
        var note: String
    }

    /// The row as the static build has it: its figure as ours, beside the same floor and
    /// peers, for the table's and the chart's second line. Nil when it was not measured.
    var staticBuildRow: BenchRow? {
        guard let figure = oursStatic?.figure else { return nil }
        return BenchRow(name: name + Self.staticSuffix, ours: figure, foundation: nil, floor: floor, note: "", peers: peers)
    }

    /// What ends the name of a static build's row.
    private static let staticSuffix = " (static)"

    /// What a target of such a row judges: the static build's figure when it was
    /// measured (the build the docs recommend for widgets), else ours, and which it is.
    var judged: (figure: Figure, build: String) {
        oursStatic?.figure.map { ($0, "static build") } ?? (ours, "dynamic build, the static one not measured")
    }

    /// What the figures measure.
    enum Kind {
        /// Microseconds; less is better.
        case time
        /// Commits per second; more is better.
        case throughput
        /// MiB of resident memory; less is better.
        case memory
        /// CPU milliseconds per 1,000 changes delivered; less is better.
        case cpu

        /// The unit of the row's figures, which the JSON report's `*_us` fields hold
        /// whatever it is (their names are older than the rows that are not times).
        var unit: String {
            switch self {
            case .time: "µs"
            case .throughput: "per second"
            case .memory: "MiB"
            case .cpu: "ms of CPU per 1,000 changes"
            }
        }
    }

    var kind: Kind {
        // A static build's row (staticBuildRow) measures what its row does.
        switch name.hasSuffix(Self.staticSuffix) ? String(name.dropLast(Self.staticSuffix.count)) : name {
        case "update_contended", "sync_throughput": .throughput
        case "memory", "widget_memory": .memory
        case "notify_cpu": .cpu
        default: .time
        }
    }

    /// How many times better ours is than Foundation's (above 1: ours is better).
    var foundationRatio: Double? {
        guard let foundation, ours.median > 0, foundation.median > 0 else { return nil }
        return kind == .throughput ? ours.median / foundation.median : foundation.median / ours.median
    }

    /// How many times better ours is than a peer's (below 1: the peer is better).
    func peerRatio(_ column: PeerColumn) -> Double? {
        guard let figure = column.figure, ours.median > 0, figure.median > 0 else { return nil }
        return kind == .throughput ? ours.median / figure.median : figure.median / ours.median
    }

    /// How many times the floor's time ours takes (1 would be the floor itself).
    var floorRatio: Double? {
        guard let floor, floor.median > 0, kind == .time else { return nil }
        return ours.median / floor.median
    }

    /// The row as the JSON report has it; nulls where a column does not apply.
    var jsonObject: [String: Any] {
        func number(_ value: Double?) -> Any {
            guard let value, value.isFinite else { return NSNull() }
            return (value * 1000).rounded() / 1000
        }
        var object: [String: Any] = [
            "name": name, "unit": kind.unit,
            "ours_median_us": number(ours.median), "ours_p99_us": number(ours.p99),
            "foundation_median_us": number(foundation?.median), "foundation_p99_us": number(foundation?.p99),
            "floor_median_us": number(floor?.median), "floor_p99_us": number(floor?.p99),
            "note": note,
        ]
        if let systemCalls {
            object["system_calls_median_us"] = number(systemCalls.median)
        }
        if let oursStatic {
            object["ours_static"] = ["median_us": number(oursStatic.figure?.median), "p99_us": number(oursStatic.figure?.p99),
                                     "note": oursStatic.note] as [String: Any]
        }
        if let peers {
            object["peers"] = Dictionary(uniqueKeysWithValues: peers.map { column in
                (column.peer.rawValue, ["median_us": number(column.figure?.median), "p99_us": number(column.figure?.p99), "note": column.note] as [String: Any])
            })
        }
        return object
    }
}
