import Foundation
import ToolSupport

/// The command line of a scenario run.
struct StressOptions: Sendable {
    var scenario: String
    var processes: Int?
    var threads: Int?
    var iterations: Int?
    /// Seconds to go on repeating the scenario for; nil runs it once.
    var duration: Double?
    var directory: URL?
    var json: Bool
    var againstFoundation: Bool
    var quick: Bool
    /// sync: machines (suite directories, each with its own suite-sync), etcd members,
    /// and SIGKILLs of suite-sync processes.
    var machines: Int?
    var members: Int?
    var kills: Int?

    static let syntax = CommandLineSyntax(
        synopsis: ["suite-stress SCENARIO [--processes N] [--threads T] [--iterations K] [--duration S]",
                   "                      [--dir DIR] [--json] [--against foundation]",
                   "suite-stress sync [--machines N] [--members M] [--kills K] [--iterations K] [--json]",
                   "suite-stress all [--quick] [--json]"],
        arguments: [
            CommandLineArgument("SCENARIO", help: """
                counter, distinct-keys, first-access, readers, crash, corrupt, notify, disk-full, fuzz,
                fork, hostile, sync (needs etcd); all runs every one
                """),
        ],
        options: [
            .value("--processes", "N", help: "worker processes (each scenario has its own default)"),
            .value("--threads", "T", help: "threads in each worker, or readers"),
            .value("--iterations", "K", help: "operations of each thread"),
            .value("--duration", "S", help: """
                repeats the scenario, round after round, until S seconds have passed,
                and adds the rounds up; it stops at the first round that finds a failure
                """),
            .value("--dir", "DIR", help: "where the run makes its directory (default: the temporary directory)"),
            .flag("--json", help: "one JSON object instead of the lines"),
            .value("--against", "foundation", help: "runs the scenario on Foundation's UserDefaults too"),
            .flag("--quick", help: "smaller counts, for a smoke run"),
            .value("--machines", "N", help: "sync: machines, each a suite directory with its own suite-sync and writer"),
            .value("--members", "M", help: "sync: etcd members (default 1); with 3 or more, the leader is killed midway"),
            .value("--kills", "K", help: "sync: suite-sync processes SIGKILLed (and restarted) at random instants"),
        ],
        notes: """
            Each ends with one line: SCENARIO: OPS ops, LOST lost, TORN torn, ERRORS errors, SECONDS s
            The exit status is 1 when an invariant failed, 2 for a usage error. Where etcd is not
            installed, sync says "skipped" and counts as passed.
            """
    )

    init(_ commandLine: ParsedCommandLine) throws(ToolError) {
        func positive(_ option: String) throws(ToolError) -> Int? {
            try commandLine.value(option, { Int($0).flatMap { $0 > 0 ? $0 : nil } }, else: "\(option) needs a positive number")
        }
        processes = try positive("--processes")
        threads = try positive("--threads")
        iterations = try positive("--iterations")
        machines = try positive("--machines")
        members = try positive("--members")
        kills = try commandLine.value("--kills", { Int($0).flatMap { $0 >= 0 ? $0 : nil } }, else: "--kills needs a number")
        duration = try commandLine.value("--duration", { Double($0).flatMap { $0 > 0 ? $0 : nil } }, else: "--duration needs seconds")
        directory = commandLine.value("--dir").map { URL(fileURLWithPath: $0, isDirectory: true) }
        json = commandLine.isSet("--json")
        quick = commandLine.isSet("--quick")
        againstFoundation = try commandLine.value("--against", { $0 == "foundation" ? true : nil }, else: "--against takes foundation") ?? false
        guard let scenario = commandLine.arguments.first else { throw commandLine.usageError("name a scenario") }
        if let unexpected = commandLine.arguments.dropFirst().first {
            throw commandLine.usageError("one scenario at a time; unexpected \(unexpected)")
        }
        self.scenario = scenario
    }

    /// A count given on the command line, else the quick or the default one.
    func count(_ given: Int?, quick quickCount: Int, normal: Int) -> Int {
        given ?? (quick ? quickCount : normal)
    }
}
