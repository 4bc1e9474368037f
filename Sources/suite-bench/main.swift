// suite-bench: this library, Foundation's UserDefaults and the bare system calls,
// measured side by side in one run.
//
//     suite-bench [--quick] [--json] [--peers] [--dir DIR] [--svg FILE] [--static-probe FILE]
//
// It prints a table of medians and 99th percentiles with the ratios, and whether each
// target is met; --json prints one object instead, and --svg writes a chart.
import Foundation
import Glibc
import SuiteDefaults
import ToolSupport

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "worker" { BenchWorker.run(Array(arguments.dropFirst())) }

let options: BenchOptions
do {
    options = try BenchOptions(BenchOptions.syntax.parseCommandLine())
} catch {
    error.exit()
}

// A directory of our own, where UserDefaults must keep its files too, never in the
// user's ~/.config. Foundation reads XDG_CONFIG_HOME before main runs, so the
// program starts itself again with it set.
let rootVariable = "SUITE_BENCH_RUN_DIRECTORY"
guard let rootPath = ProcessInfo.processInfo.environment[rootVariable] else {
    let made: String
    do {
        made = try makeTemporaryDirectory(prefix: "suite-bench", in: options.directory).path
    } catch {
        error.exit()
    }
    setenv(rootVariable, made, 1)
    setenv("XDG_CONFIG_HOME", made, 1)
    let argv = CommandLine.arguments.map { strdup($0) } + [nil]
    execv("/proc/self/exe", argv)
    ToolError.usage("cannot start again: \(String(cString: strerror(errno)))").exit()
}
let root = URL(fileURLWithPath: rootPath, isDirectory: true)
let bench = Bench(options: options, root: root)
let machine = Report.machine(directory: root)

func progress(_ text: String) {
    if !options.json { FileHandle.standardError.write(Data("measuring \(text)…\n".utf8)) }
}

var rows: [BenchRow] = []
// Without the contended row (`--only`), there is no count to verify.
var verified = !options.measures("contended")
/// Measures the rows of `group` unless `--only` leaves it out.
@MainActor func measure(_ group: String, _ text: String, _ body: () throws -> [BenchRow]) rethrows {
    guard options.measures(group) else { return }
    progress(text)
    rows += try body()
}
do {
    try measure("set", "set") { [try bench.setRow()] }
    try measure("get", "get") { try bench.getRows() }
    try measure("writes100", "100 writes") { [try bench.writes100Row()] }
    try measure("update", "update") { [try bench.updateRow()] }
    try measure("contended", "contended update") {
        let (contended, exact) = try bench.contendedUpdateRow()
        verified = exact
        return [contended]
    }
    try measure("scaling", "scaling") { try bench.scalingRows() }
    try measure("notify", "notification latency") { try bench.notificationRows() }
    try measure("cold", "cold start") { [try bench.coldStartRow()] }
    try measure("spawn", "spawn to first read") { [try bench.spawnToFirstReadRow()] }
    try measure("durable", "durable set") { [try bench.durableRow()] }
    try measure("memory", "memory") { [try bench.memoryRow(), try bench.widgetMemoryRow()] }
    try measure("sync", "sync through etcd") { try bench.syncRows() }
    if options.peers { try bench.addPeers(to: &rows, progress: progress) }
} catch {
    try? FileManager.default.removeItem(at: root)
    ToolError(status: 1, message: "\(error)").exit()
}
try? FileManager.default.removeItem(at: root)

if options.json {
    print(Report.json(rows, machine: machine))
} else {
    print("suite-bench\(options.quick ? " --quick" : ""), \(machine)\n")
    print(Report.table(rows))
    // Rows that could not measure (sync without etcd) say why.
    for row in rows where !row.ours.median.isFinite { print("\(row.name): \(row.note)") }
    if options.peers {
        print("\nPeers:")
        for note in Report.peerNotes(rows) { print("  \(note)") }
    }
    print("\nTargets:")
    for (target, met) in Report.targets(rows, verified: verified) { print("  \(met ? "met   " : "MISSED") \(target)") }
}
if let svg = options.svg {
    do {
        try Chart.svg(rows, machine: machine).write(to: svg, atomically: true, encoding: .utf8)
    } catch {
        ToolError(status: 1, message: "cannot write \(svg.path): \(error)").exit()
    }
}
// Timings vary; a count that does not verify is a failure.
exit(verified ? 0 : 1)
