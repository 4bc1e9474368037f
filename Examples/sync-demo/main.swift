// sync-demo: two "machines", each with the fitness app and two widgets, following each
// other's unit changes through etcd.
//
// Each machine is a suite directory of its own. The demo starts a local etcd on loopback
// (its data in a temporary directory), one suite-sync per machine, and on each machine the
// distance and weight widgets and the fitness app, all real child processes. It sets
// imperial in machine A's app and shows the widgets of both machines redraw, then metric
// in machine B's app, and the same. Every process is stopped and every directory removed
// at the end. The exit status is 0 when every widget showed every state (or when etcd is
// not installed: it says how to install it), 1 otherwise.
import ChildProcess
import FitnessShared
import Foundation
import Glibc
import LocalEtcd
import SuiteDefaults
import ToolSupport
import UnitPreferences

let deadline = Duration.seconds(30)
let programs = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
    ?? CommandLine.arguments[0]).deletingLastPathComponent()

let syntax = CommandLineSyntax(synopsis: ["sync-demo"], options: [], notes: """
    Needs etcd (Debian, Ubuntu: apt-get install -y etcd-server); the demo starts its own on
    loopback and stops it at the end.
    """)
let commandLine = syntax.parseCommandLine()
if let unexpected = commandLine.arguments.first { commandLine.usageError("unknown argument \(unexpected)").exit() }

guard LocalEtcd.executable != nil else {
    Output.line("sync-demo: etcd is not installed, so there is nothing to sync through.")
    Output.line("Install it (Debian, Ubuntu: sudo \(LocalEtcd.installCommand)) and run sync-demo again.")
    exit(0)
}

/// A line of a program started with --timestamps: when it was written, and what.
func stamped(_ line: String) -> (UInt64, String)? {
    guard let space = line.firstIndex(of: " "), let nanoseconds = UInt64(line[..<space]) else { return nil }
    return (nanoseconds, String(line[line.index(after: space)...]))
}

func milliseconds(_ nanoseconds: Int64) -> String { String(format: "%.2f ms", Double(nanoseconds) / 1e6) }

func padded(_ text: String, _ width: Int) -> String { text.padding(toLength: max(width, text.count), withPad: " ", startingAt: 0) }

// One directory of our own for both machines and etcd's data, never the user's suites.
let root: URL
do {
    root = try makeTemporaryDirectory(prefix: "sync-demo")
} catch {
    ToolError(status: 1, message: error.message).exit()
}
var children: [ChildProcess] = []
var etcd: LocalEtcd?

@MainActor func finish(_ status: Int32) -> Never {
    // The widgets and apps first, then the suite-syncs, then etcd: each asked to stop, then killed if it lingers.
    for child in children.reversed() { child.signal(SIGTERM) }
    for child in children.reversed() where child.wait(timeout: .seconds(10)) == nil { child.kill() }
    children.removeAll()
    etcd?.shutDown()
    try? FileManager.default.removeItem(at: root)
    exit(status)
}

@MainActor func start(_ program: String, _ arguments: [String]) -> ChildProcess {
    do {
        let child = try ChildProcess(executable: programs.appendingPathComponent(program).path, arguments: arguments)
        children.append(child)
        return child
    } catch {
        Output.line("sync-demo: cannot start \(program) (\(error)); build the examples with `swift build`.")
        finish(1)
    }
}

/// One machine: its suite directory, and the programs running on it.
struct Machine {
    var name: String
    var directory: URL
    var widgets: [(name: String, process: ChildProcess)] = []
    var app: ChildProcess?

    init(_ name: String) {
        self.name = name
        directory = root.appendingPathComponent("machine-\(name)", isDirectory: true)
    }
}
var machines = [Machine("A"), Machine("B")]
for machine in machines { try? FileManager.default.createDirectory(at: machine.directory, withIntermediateDirectories: true) }

// Machine A's state before anything runs: metric, a 5 km run and a 90 kg lift.
let run = 5_000.0, lift = 90.0
do {
    let suite = try Suite(named: FitnessSuite.name, directory: machines[0].directory)
    try UnitSystem.setCurrent(.metric, in: suite)
    try suite.log(Workout(kind: .run, amount: run))
    try suite.log(Workout(kind: .lift, amount: lift))
} catch {
    Output.line("sync-demo: cannot set up machine A's suite: \(error)")
    finish(1)
}

do {
    etcd = try LocalEtcd.start(in: root)
} catch {
    Output.line("sync-demo: etcd did not start: \(error)")
    finish(1)
}
let endpoint = etcd!.endpoints[0]
Output.line("Two machines, A and B, each with the fitness app and two widgets, sharing \(FitnessSuite.name) through etcd at \(endpoint) (pid \(etcd!.processIDs.first ?? 0), started here)")

// suite-sync on each machine: A's first, so that etcd has A's state when B's starts and takes it.
for machine in machines {
    let sync = start("suite-sync", ["--endpoints", endpoint, "--prefix", "/suite-defaults/demo", "--dir", machine.directory.path,
                                    "--json", FitnessSuite.name])
    sync.closeInput()
    guard let watching = sync.waitForLine(timeout: deadline, where: { $0.contains("\"event\":\"watching\"") }) else {
        Output.line("sync-demo: suite-sync on machine \(machine.name) did not start: \(sync.lines.suffix(3)) \(sync.standardError)")
        finish(1)
    }
    let reconciled = sync.lines.first { $0.contains("\"event\":\"reconciled\"") }
        .flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    let sent = reconciled?["sent"] as? Int ?? 0, applied = reconciled?["applied"] as? Int ?? 0
    _ = watching
    Output.line("  suite-sync on machine \(machine.name) (pid \(sync.pid)): \(machine.directory.path); \(sent) key(s) sent to etcd, \(applied) taken from it")
}

func distance(_ system: UnitSystem) -> String { "Last run: \(formatDistance(meters: run, system: system))" }
func weight(_ system: UnitSystem) -> String { "Last lift: \(formatWeight(kilograms: lift, system: system))" }

// Each machine's widgets, then its app.
for index in machines.indices {
    for program in ["distance-widget", "weight-widget"] {
        let widget = start(program, ["--dir", machines[index].directory.path, "--timestamps"])
        machines[index].widgets.append((program, widget))
    }
    for (number, widget) in machines[index].widgets.enumerated() {
        let expected = number == 0 ? distance(.metric) : weight(.metric)
        guard widget.process.waitForLine(timeout: deadline, where: { stamped($0)?.1 == expected }) != nil else {
            Output.line("sync-demo: machine \(machines[index].name)'s \(widget.name) did not show \"\(expected)\": \(widget.process.lines.suffix(2)) \(widget.process.standardError)")
            finish(1)
        }
        Output.line("  machine \(machines[index].name) \(padded(widget.name, 15)) (pid \(widget.process.pid))  \(expected)")
    }
    let app = start("fitness-app", ["--dir", machines[index].directory.path, "shell"])
    machines[index].app = app
}

/// One thing the user does on one machine; every widget on both machines must follow.
struct Step {
    var machine: Int
    var command: String
    var system: UnitSystem
}
let steps = [Step(machine: 0, command: "units imperial", system: .imperial), Step(machine: 1, command: "units metric", system: .metric)]
var failures: [String] = []
var local: [Int64] = [], remote: [Int64] = []
for step in steps {
    let machine = machines[step.machine]
    guard let app = machine.app else { finish(1) }
    app.send(step.command + "\n")
    guard let reply = app.nextLine(timeout: deadline), reply.hasPrefix("ok "), let answer = stamped(String(reply.dropFirst(3))) else {
        Output.line("sync-demo: machine \(machine.name)'s app did not do \"\(step.command)\": \(app.lines.last ?? "") \(app.standardError)")
        finish(1)
    }
    Output.line(padded("machine \(machine.name) app> \(step.command)", 34) + answer.1)
    // The machine's own widgets first, then the other machine's, which the change reaches through etcd.
    for (index, other) in [step.machine, 1 - step.machine].map({ ($0, machines[$0]) }) {
        for (number, widget) in other.widgets.enumerated() {
            let expected = number == 0 ? distance(step.system) : weight(step.system)
            guard let (drawnAt, line) = widget.process.waitForLine(timeout: deadline, where: { stamped($0)?.1 == expected }).flatMap(stamped)
            else {
                failures.append("machine \(other.name)'s \(widget.name) never showed \"\(expected)\" after \(step.command) on machine \(machine.name)")
                Output.line("  machine \(other.name) \(padded(widget.name, 15)) MISSING \(expected)")
                continue
            }
            let latency = Int64(drawnAt) - Int64(answer.0)
            let through = index == step.machine ? "" : " (through etcd)"
            if index == step.machine { local.append(latency) } else { remote.append(latency) }
            Output.line("  machine \(other.name) \(padded(widget.name, 15)) \(padded(line, 20)) redrawn \(milliseconds(latency)) after the change\(through)")
        }
    }
}

if failures.isEmpty {
    remote.sort()
    local.sort()
    Output.line("Both machines' widgets followed every change: \(local.count + remote.count) redraws; on the machine of the change \(milliseconds(local[local.count / 2])) median, on the other machine \(milliseconds(remote[remote.count / 2])) median and \(milliseconds(remote.last!)) at most.")
    finish(0)
}
Output.line("sync-demo: \(failures.count) state(s) never shown:")
for failure in failures { Output.line("  \(failure)") }
finish(1)
