import Foundation
import ToolSupport

/// `suite-bench [--quick] [--json] [--peers] [--dir DIR] [--svg FILE] [--static-probe FILE] [--only GROUP,...]`
struct BenchOptions: Sendable {
    var quick: Bool
    var json: Bool
    /// SQLite and LMDB columns beside ours (Peers/).
    var peers: Bool
    var directory: URL?
    var svg: URL?
    /// suite-first-read built with --static-swift-stdlib, if not at the package's .build-static.
    var staticProbe: String?
    /// The groups of rows to measure; nil for all.
    var only: Set<String>?

    /// The groups of rows `--only` names, in the order they are measured.
    static let groups = ["set", "get", "writes100", "update", "contended", "scaling", "notify", "cold", "spawn", "durable", "memory", "sync"]

    static let syntax = CommandLineSyntax(
        synopsis: ["suite-bench [--quick] [--json] [--peers] [--dir DIR] [--svg FILE] [--static-probe FILE] [--only GROUP,...]"],
        options: [
            .flag("--quick", help: "fewer samples, for a smoke run"),
            .flag("--json", help: "one JSON object instead of the table"),
            .flag("--peers", help: "also measure SQLite (WAL) and LMDB, loaded at run time, for every row where they apply"),
            .value("--dir", "DIR", help: "where the run makes its directory (default: the temporary directory)"),
            .value("--svg", "FILE", help: "also write a chart of the rows to FILE"),
            .value("--static-probe", "FILE", help: "suite-first-read built as the docs recommend for widgets, for spawn_to_first_read and widget_memory (default: the package's \(StartUpPrograms.staticProbePath), which Scripts/build-widget-static makes)"),
            .value("--only", "GROUP,...", help: "measure only these groups of rows: \(groups.joined(separator: ", "))"),
        ]
    )

    init(_ commandLine: ParsedCommandLine) throws(ToolError) {
        quick = commandLine.isSet("--quick")
        json = commandLine.isSet("--json")
        peers = commandLine.isSet("--peers")
        directory = commandLine.value("--dir").map { URL(fileURLWithPath: $0) }
        svg = commandLine.value("--svg").map { URL(fileURLWithPath: $0) }
        staticProbe = commandLine.value("--static-probe")
        if let list = commandLine.value("--only") {
            let named = Set(list.split(separator: ",").map(String.init))
            if let unknown = named.subtracting(Self.groups).sorted().first {
                throw commandLine.usageError("--only: no group \(unknown); the groups are \(Self.groups.joined(separator: ", "))")
            }
            only = named
        }
        if let unexpected = commandLine.arguments.first { throw commandLine.usageError("unknown argument \(unexpected)") }
    }

    /// Whether the rows of `group` are measured.
    func measures(_ group: String) -> Bool { only?.contains(group) ?? true }

    /// A sample count: fewer with --quick.
    func samples(_ normal: Int, quick quickCount: Int) -> Int { quick ? quickCount : normal }
}
