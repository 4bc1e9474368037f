// suite-demo: a fitness app and three widgets, separate processes, sharing one suite.
//
// It starts the widgets (distance, weight, price) and the app as real child processes
// on a fresh temporary suite, logs a run and a lift, caches a price, and toggles
// metric and imperial a few times. Each widget's redrawn line is shown as it arrives,
// with the time from the start of the change's write to the redraw. The exit status is 0 when every widget
// showed every state, 1 otherwise; nothing is left running.
//
// With --all-languages, the distance widget in C (Examples/c-widget, compiled with the system's cc
// against libsuitedefaults.so) and in Python (Examples/python-widget, ctypes) run beside the Swift
// ones, when cc and python3 are installed.
import ChildProcess
import FitnessShared
import Foundation
import Glibc
import SuiteDefaults
import ToolSupport
import UnitPreferences

let deadline = Duration.seconds(30)
let programs = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
    ?? CommandLine.arguments[0]).deletingLastPathComponent()
/// The package, for the C and Python widgets' sources.
let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

let syntax = CommandLineSyntax(synopsis: ["suite-demo [--all-languages]"], options: [
    .flag("--all-languages", help: "also run the distance widget in C and in Python (when cc and python3 are installed)"),
])
let commandLine = syntax.parseCommandLine()
if let unexpected = commandLine.arguments.first { commandLine.usageError("unknown argument \(unexpected)").exit() }
let allLanguages = commandLine.isSet("--all-languages")

/// A program on $PATH; nil when there is none.
func which(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").map { "\($0)/\(name)" }.first { access($0, X_OK) == 0 }
}

/// A line of a program started with --timestamps: when it was written, and what.
func stamped(_ line: String) -> (UInt64, String)? {
    guard let space = line.firstIndex(of: " "), let nanoseconds = UInt64(line[..<space]) else { return nil }
    return (nanoseconds, String(line[line.index(after: space)...]))
}

func milliseconds(_ nanoseconds: Int64) -> String {
    String(format: "%.2f ms", Double(nanoseconds) / 1e6)
}

// A fresh suite of our own, never the user's; and a directory for the C widget's build.
let directory: String
let buildDirectory: String
do {
    directory = try makeTemporaryDirectory(prefix: "suite-demo").path
    buildDirectory = try makeTemporaryDirectory(prefix: "suite-demo-build").path
} catch {
    ToolError(status: 1, message: error.message).exit()
}
var children: [ChildProcess] = []

@MainActor func finish(_ status: Int32) -> Never {
    for child in children { child.signal(SIGTERM) }
    for child in children where child.wait(timeout: .seconds(10)) == nil { child.kill() }
    children.removeAll()
    try? FileManager.default.removeItem(atPath: directory)
    try? FileManager.default.removeItem(atPath: buildDirectory)
    exit(status)
}

@MainActor func start(_ program: String, _ arguments: [String]) -> ChildProcess {
    start(executable: programs.appendingPathComponent(program).path, arguments)
}

@MainActor func start(executable: String, _ arguments: [String]) -> ChildProcess {
    do {
        let child = try ChildProcess(executable: executable, arguments: arguments + ["--dir", directory])
        children.append(child)
        return child
    } catch {
        Output.line("suite-demo: cannot start \(executable) (\(error)); build the examples with `swift build`.")
        finish(1)
    }
}

/// Compiles Examples/c-widget/widget.c against libsuitedefaults.so (linked through a
/// directory of the build's own, with the soname's link, and an rpath): its path, or
/// nil with the reason printed.
@MainActor func compileCWidget(with cc: String) -> String? {
    let library = programs.appendingPathComponent("libsuitedefaults.so").path
    let lib = buildDirectory + "/lib", output = buildDirectory + "/c-widget"
    do {
        try FileManager.default.createDirectory(atPath: lib, withIntermediateDirectories: true)
        for link in ["libsuitedefaults.so", "libsuitedefaults.so.1"] {
            try FileManager.default.createSymbolicLink(atPath: lib + "/" + link, withDestinationPath: library)
        }
        let compiler = try ChildProcess(executable: cc, arguments: [
            "-std=c99", "-O2", package.appendingPathComponent("Examples/c-widget/widget.c").path,
            "-I", package.appendingPathComponent("include").path, "-L", lib, "-Wl,-rpath,\(lib)", "-lsuitedefaults", "-o", output,
        ])
        compiler.closeInput()
        guard compiler.wait(timeout: .seconds(120)) == .exited(0) else {
            compiler.kill()
            Output.line("suite-demo: the C widget did not compile: \(compiler.standardError)")
            return nil
        }
        return output
    } catch {
        Output.line("suite-demo: cannot compile the C widget: \(error)")
        return nil
    }
}

// The app's state before the widgets start: metric, nothing logged.
do {
    let suite = try Suite(named: FitnessSuite.name, directory: URL(fileURLWithPath: directory))
    try UnitSystem.setCurrent(.metric, in: suite)
} catch {
    Output.line("suite-demo: cannot set up the suite: \(error)")
    finish(1)
}
Output.line("A fitness app and \(allLanguages ? "widgets in Swift, C and Python" : "three widgets") share \(FitnessSuite.name) in \(directory)")

struct WidgetProcess {
    var name: String
    var process: ChildProcess
}
var widgets = [
    WidgetProcess(name: "distance-widget", process: start("distance-widget", ["--timestamps"])),
    WidgetProcess(name: "weight-widget", process: start("weight-widget", ["--timestamps"])),
    WidgetProcess(name: "price-ticker", process: start("price-ticker", ["watch", "--timestamps"])),
]
/// The widgets that show what the distance widget shows, in other languages.
var distanceWidgets = [0]
if allLanguages {
    if let cc = which("cc") {
        if let program = compileCWidget(with: cc) {
            widgets.append(WidgetProcess(name: "c-widget", process: start(executable: program, ["--timestamps"])))
            distanceWidgets.append(widgets.count - 1)
        }
    } else {
        Output.line("suite-demo: cc is not installed; the C widget does not run.")
    }
    if let python = which("python3") {
        let script = package.appendingPathComponent("Examples/python-widget/widget.py").path
        let library = programs.appendingPathComponent("libsuitedefaults.so").path
        widgets.append(WidgetProcess(name: "python-widget",
                                     process: start(executable: python, [script, "--library", library, "--timestamps"])))
        distanceWidgets.append(widgets.count - 1)
    } else {
        Output.line("suite-demo: python3 is not installed; the Python widget does not run.")
    }
}
var failures: [String] = []
for widget in widgets {
    guard let line = widget.process.nextLine(timeout: deadline).flatMap(stamped) else {
        Output.line("suite-demo: \(widget.name) did not start: \(widget.process.standardError)")
        finish(1)
    }
    Output.line("  started \(widget.name.padding(toLength: 15, withPad: " ", startingAt: 0)) (pid \(widget.process.pid))  \(line.1)")
}
let app = start("fitness-app", ["shell"])

/// One thing the user does, and what each widget must show after it.
struct Step {
    var command: String
    var expected: [Int: String]
}
let run = 5_000.0, lift = 90.0
func distance(_ system: UnitSystem) -> String { "Last run: \(formatDistance(meters: run, system: system))" }
func weight(_ system: UnitSystem) -> String { "Last lift: \(formatWeight(kilograms: lift, system: system))" }
/// What every distance widget shows, with `others` for the rest.
@MainActor func distances(_ system: UnitSystem, _ others: [Int: String] = [:]) -> [Int: String] {
    others.merging(distanceWidgets.map { ($0, distance(system)) }) { other, _ in other }
}
let steps = [
    Step(command: "log-run 5", expected: distances(.metric)),
    Step(command: "log-lift 90", expected: [1: weight(.metric)]),
    Step(command: "ticker set 68901.23 USD", expected: [2: "BTC: 68901.23 USD"]),
    Step(command: "units imperial", expected: distances(.imperial, [1: weight(.imperial)])),
    Step(command: "units metric", expected: distances(.metric, [1: weight(.metric)])),
    Step(command: "units imperial", expected: distances(.imperial, [1: weight(.imperial)])),
]

var latencies: [Int64] = []
for step in steps {
    // The write, and when it started.
    let startedAt: UInt64
    if step.command.hasPrefix("ticker ") {
        let setter = start("price-ticker", step.command.split(separator: " ").dropFirst().map(String.init) + ["--timestamps"])
        guard let reply = setter.nextLine(timeout: deadline).flatMap(stamped) else {
            Output.line("suite-demo: price-ticker set failed: \(setter.standardError)")
            finish(1)
        }
        Output.line("ticker> \(step.command.dropFirst(7))".padding(toLength: 28, withPad: " ", startingAt: 0) + reply.1)
        startedAt = reply.0
    } else {
        app.send(step.command + "\n")
        guard let reply = app.nextLine(timeout: deadline), reply.hasPrefix("ok "),
              let answer = stamped(String(reply.dropFirst(3)))
        else {
            Output.line("suite-demo: the app did not do \"\(step.command)\": \(app.lines.last ?? "") \(app.standardError)")
            finish(1)
        }
        Output.line("app> \(step.command)".padding(toLength: 28, withPad: " ", startingAt: 0) + answer.1)
        startedAt = answer.0
    }
    // Each widget concerned redraws with the new state.
    for (index, expected) in step.expected.sorted(by: { $0.key < $1.key }) {
        let widget = widgets[index]
        let arrived = widget.process.waitForLine(timeout: deadline) { stamped($0)?.1 == expected }.flatMap(stamped)
        guard let (drawnAt, line) = arrived else {
            failures.append("\(widget.name) never showed \"\(expected)\" after \(step.command)")
            Output.line("  \(widget.name.padding(toLength: 15, withPad: " ", startingAt: 0)) MISSING \(expected)")
            continue
        }
        let latency = Int64(drawnAt) - Int64(startedAt)
        latencies.append(latency)
        Output.line("  \(widget.name.padding(toLength: 15, withPad: " ", startingAt: 0)) \(line.padding(toLength: 22, withPad: " ", startingAt: 0)) redrawn \(milliseconds(latency)) after the change")
    }
}

latencies.sort()
if failures.isEmpty {
    Output.line("Every widget showed every state: \(latencies.count) redraws, \(milliseconds(latencies[latencies.count / 2])) median and \(milliseconds(latencies.last!)) at most from the change to the redraw.")
    finish(0)
}
Output.line("suite-demo: \(failures.count) state(s) never shown:")
for failure in failures { Output.line("  \(failure)") }
finish(1)
