import ChildProcess
import FitnessShared
import Foundation
import Glibc
import SuiteDefaults
import Testing
import TestSupport
import UnitPreferences

/// The C interface as C and Python programs use it: libsuitedefaults.so (which
/// `swift build` builds beside the test binary), include/suite_defaults.h, the
/// examples, and Tests/CPrograms/sd-test.c, compiled with the system's `cc` and run
/// as real processes.
enum CInterface {
    static let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let header = package.appendingPathComponent("include/suite_defaults.h")
    static let exportsMap = package.appendingPathComponent("Sources/SuiteDefaultsC/exports.map")
    static let library = Products.directory.appendingPathComponent("libsuitedefaults.so")

    /// A program on $PATH; nil when there is none.
    static func which(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { access($0, X_OK) == 0 }
    }

    static let cc = which("cc")
    static let python3 = which("python3")
    static let nm = which("nm")
    static let readelf = which("readelf")
    static let pkgConfig = which("pkg-config")

    /// What the children run with: the "C" locale, so that every widget, in every
    /// language, shows metric numbers with a decimal point.
    static let environment: [String: String] = {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("LC_") && $0.key != "LANG" }
        environment["LC_ALL"] = "C"
        return environment
    }()

    /// Compiles `sources` (relative to the package) against the library into
    /// `directory`, linking it through a lib/ directory of its own there (with the
    /// soname's link), with an rpath, so that the program runs with no
    /// LD_LIBRARY_PATH.
    static func compile(_ sources: [String], named name: String, in directory: TemporaryDirectory,
                        flags: [String]? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let lib = directory.file("lib")
        try FileManager.default.createDirectory(at: lib, withIntermediateDirectories: true)
        for link in ["libsuitedefaults.so", "libsuitedefaults.so.1"] where !FileManager.default.fileExists(atPath: lib.appendingPathComponent(link).path) {
            try FileManager.default.createSymbolicLink(atPath: lib.appendingPathComponent(link).path, withDestinationPath: library.path)
        }
        let output = directory.file(name).path
        let linking = flags ?? ["-I", package.appendingPathComponent("include").path, "-L", lib.path, "-Wl,-rpath,\(lib.path)", "-lsuitedefaults"]
        let arguments = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-pthread"]
            + sources.map { package.appendingPathComponent($0).path } + linking + ["-lm", "-o", output]
        let compiled = try run(program: cc!, arguments, within: .seconds(120))
        try #require(compiled.status == .exited(0), "cc \(arguments.joined(separator: " ")): \(compiled.errors)",
                     sourceLocation: sourceLocation)
        return output
    }

    /// Whether the library was built; the tests need `swift build` to have made it.
    static var libraryBuilt: Bool { FileManager.default.fileExists(atPath: library.path) }

    /// The `sd_` functions the header declares.
    static func headerFunctions() throws -> Set<String> {
        let text = try String(contentsOf: header, encoding: .utf8)
        // A declaration: a return type, the name, "(": "sd_status sd_get_int64(", "int sd_watch_fd(".
        let declaration = /(?m)^(?:const\s+)?[a-z_0-9]+\s*\*?\s*(sd_[a-z0-9_]+)\(/
        return Set(text.matches(of: declaration).map { String($0.output.1) })
    }

    /// The status constants of the header: name and number.
    static func headerStatuses() throws -> [String: Int32] {
        let text = try String(contentsOf: header, encoding: .utf8)
        guard let start = text.range(of: "typedef int32_t sd_status;"),
              let end = text.range(of: "};", range: start.upperBound..<text.endIndex)
        else { return [:] }
        var statuses: [String: Int32] = [:]
        for match in text[start.upperBound..<end.lowerBound].matches(of: /(SD_[A-Z_]+) = ([0-9]+)/) {
            statuses[String(match.output.1)] = Int32(match.output.2)
        }
        return statuses
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test only when `cc` and the built library are there, saying why not.
    static var needsCompiler: Self {
        .enabled(if: CInterface.cc != nil, "cc is not installed: the C interface tests need a C compiler (apt-get install gcc)")
    }

    static var needsPython: Self {
        .enabled(if: CInterface.python3 != nil, "python3 is not installed: the Python widget cannot run")
    }
}

@Suite("The C interface, from C and Python processes", .needsCompiler)
struct CInterfaceTests {
    let directory = TemporaryDirectory("suite-defaults-c")

    init() throws {
        try #require(CInterface.libraryBuilt, "\(CInterface.library.path) is missing; build it with `swift build`")
    }

    // MARK: The ABI

    @Test(.enabled(if: CInterface.nm != nil && CInterface.readelf != nil, "nm and readelf (binutils) are not installed"))
    func exportsExactlyTheHeadersFunctionsUnderItsSoname() throws {
        let declared = try CInterface.headerFunctions()
        #expect(declared.count >= 40, "the header parses: \(declared.sorted())")

        // Global definitions only: the linker keeps some local symbols in .dynsym for
        // its relocations, which no other object can bind to.
        let symbols = try run(program: CInterface.nm!, ["-D", "--defined-only", CInterface.library.path])
        #expect(symbols.status == .exited(0), "\(symbols.errors)")
        let exported = Set(symbols.lines.compactMap { line -> String? in
            let fields = line.split(separator: " ")
            guard fields.count == 3, let type = fields[1].first, type.isUppercase else { return nil }
            return String(fields[2].split(separator: "@").first!)
        })
        #expect(exported.filter { !$0.hasPrefix("sd_") }.isEmpty, "only sd_ symbols are exported")
        #expect(declared.subtracting(exported).isEmpty, "declared in the header, not exported: \(declared.subtracting(exported).sorted())")
        #expect(exported.subtracting(declared).isEmpty, "exported, not in the header: \(exported.subtracting(declared).sorted())")

        let map = try String(contentsOf: CInterface.exportsMap, encoding: .utf8)
        let listed = Set(map.matches(of: /(sd_[a-z0-9_]+);/).map { String($0.output.1) })
        #expect(listed == declared, "exports.map lists the header's functions")

        let dynamic = try run(program: CInterface.readelf!, ["-d", CInterface.library.path])
        #expect(dynamic.lines.contains { $0.contains("(SONAME)") && $0.contains("[libsuitedefaults.so.1]") },
                "the soname is libsuitedefaults.so.1: \(dynamic.lines.filter { $0.contains("SONAME") })")
        #expect(dynamic.lines.contains { $0.contains("RUNPATH") || $0.contains("RPATH") },
                "the library finds the Swift runtime by its run path")
    }

    @Test func statusesMirrorTheLibrarysErrorCodes() throws {
        let statuses = try CInterface.headerStatuses()
        #expect(statuses["SD_OK"] == 0)
        #expect(Set(statuses.values).count == statuses.count, "each status has a number of its own")
        for code in SuiteError.Code.allCases {
            let name = "SD_" + code.rawValue.replacing(/[A-Z]/) { "_" + $0.output }.uppercased()
            #expect(statuses[name] != nil, "SuiteError.Code.\(code) has a status in the header, \(name)")
        }
        // The library names each status as the header does.
        let program = try CInterface.compile(["Tests/CPrograms/sd-test.c"], named: "sd-test", in: directory)
        let names = try run(program: program, ["status-names"])
        #expect(names.status == .exited(0))
        var named: [Int32: String] = [:]
        for line in names.lines {
            let fields = line.split(separator: " ")
            named[Int32(fields[0])!] = String(fields[1])
        }
        for (name, number) in statuses { #expect(named[number] == name, "sd_status_name(\(number))") }
        #expect(named.filter { $0.value != "SD_UNKNOWN" }.count == statuses.count, "no other number has a name")
    }

    // MARK: Every call, well and badly used

    @Test func everyCallAnswersWithTheRightStatus() throws {
        let program = try CInterface.compile(["Tests/CPrograms/sd-test.c"], named: "sd-test", in: directory)
        let checked = try run(program: program, ["api", directory.file("suites").path], environment: CInterface.environment)
        let failed = checked.lines.filter { $0.hasPrefix("FAIL") }
        #expect(failed.isEmpty, "\(failed.joined(separator: "\n"))")
        #expect(checked.lines.filter { $0.hasPrefix("ok ") }.count >= 150, "every check ran: \(checked.lines.suffix(3))")
        #expect(checked.status == .exited(0), "\(checked.status.map(\.description) ?? "did not end"): \(checked.errors)")
    }

    // MARK: Processes of both languages

    @Test func swiftAndCProcessesLoseNoIncrement() throws {
        let program = try CInterface.compile(["Tests/CPrograms/sd-test.c"], named: "sd-test", in: directory)
        let suites = directory.file("suites")
        let increments = 1_000
        let swift = try (0..<2).map { _ in
            try startWorker("increment", at: suites, suite: "mixed", ["threads": "1", "count": "\(increments)", "key": "counter"])
        }
        let c = try (0..<2).map { _ in
            try ChildProcess(executable: program, arguments: ["increment", suites.path, "mixed", "counter", "\(increments)"])
        }
        for worker in swift { worker.expectLine(startingWith: "done \(increments)", within: .seconds(120)) }
        for process in c { process.expectLine(startingWith: "done \(increments)", within: .seconds(120)) }
        for process in swift + c { process.expectSuccess() }
        let suite = try Suite(named: "mixed", directory: suites)
        #expect(suite.integer(forKey: "counter") == 4 * increments, "2 Swift and 2 C processes, \(increments) increments each")
    }

    @Test func aCWatcherSeesEverySwiftWriteInOrder() throws {
        let program = try CInterface.compile(["Tests/CPrograms/sd-test.c"], named: "sd-test", in: directory)
        let suites = directory.file("suites")
        let writes = 300
        // Every write, then the removal this process makes.
        let watcher = try ChildProcess(executable: program, arguments: ["watch", suites.path, "watched", "w.0", "\(writes + 1)"])
        watcher.expectLine(startingWith: "ready")
        let writer = try startWorker("write-keys", at: suites, suite: "watched", ["prefix": "w", "count": "\(writes)", "keys": "1"])
        writer.expectLine(startingWith: "done", within: .seconds(120))
        writer.expectSuccess()
        let suite = try Suite(named: "watched", directory: suites)
        try suite.removeValue(forKey: "w.0")
        watcher.expectLine(startingWith: "done", within: .seconds(120))
        watcher.expectSuccess()

        let changes = watcher.lines.filter { $0.hasPrefix("change ") }.map { $0.split(separator: " ").map(String.init) }
        try #require(changes.count == writes + 1, "\(changes.count) changes: \(watcher.lines.suffix(3)) \(watcher.standardError)")
        var previousSequence: UInt64 = 0
        for (index, fields) in changes.enumerated() {
            let sequence = UInt64(fields[1])!
            #expect(sequence > previousSequence, "sequences increase: \(fields)")
            previousSequence = sequence
            #expect(fields[3] == "0", "a commit: \(fields)")
            let expected = index < writes
                ? (old: index == 0 ? "-" : "\(index - 1)", new: "\(index)", pid: "\(writer.pid)")
                : (old: "\(writes - 1)", new: "-", pid: "\(getpid())")
            #expect(fields[4] == expected.old && fields[5] == expected.new, "change \(index): \(fields)")
            #expect(fields[2] == expected.pid, "change \(index) names its writer: \(fields)")
        }
    }

    // MARK: The widgets

    /// Runs a widget beside the Swift app's writes: after each, it must show what the
    /// Swift distance widget shows.
    func expectWidgetFollowsTheSwiftOne(_ executable: String, _ arguments: [String]) throws {
        let suites = directory.file("suites")
        let suite = try Suite(named: FitnessSuite.name, directory: suites)
        try UnitSystem.setCurrent(.metric, in: suite)
        let widget = try ChildProcess(executable: executable, arguments: arguments + ["--dir", suites.path],
                                      environment: CInterface.environment)
        defer {
            widget.signal(SIGTERM)
            let ended = widget.wait(timeout: .seconds(10))
            #expect(ended == .exited(0), "the widget ends cleanly on SIGTERM: \(ended.map(\.description) ?? "it did not"); \(widget.standardError)")
        }
        #expect(widget.nextLine(timeout: .seconds(30)) == "Last run: none", "\(widget.standardError)")

        // The last steps break the log, as no Swift process would write it: a log of
        // which one workout does not read as a Workout is no log to the Swift widget; the
        // others must agree, and then follow the good log again.
        var goodLog: [Workout] = []
        let broken = #"[5, {"amount": 5000, "date": 0, "kind": "run"}]"#
        let steps: [(name: String, step: () throws -> Void, shows: String?)] = [
            ("a run", { try suite.log(Workout(kind: .run, amount: 5_000)) }, nil),
            ("imperial", { try UnitSystem.setCurrent(.imperial, in: suite) }, nil),
            ("a lift, then a run", { try suite.log(Workout(kind: .lift, amount: 90)); try suite.log(Workout(kind: .run, amount: 12_345)) }, nil),
            ("metric", { try UnitSystem.setCurrent(.metric, in: suite) }, "Last run: 12.3 km"),
            ("a broken log", {
                goodLog = suite.value(for: .workouts)
                try suite.setValue(.json(Data(broken.utf8)), forKey: "fitness.workouts")
            }, nil),
            ("the log again", { try suite.set(goodLog, for: .workouts) }, "Last run: 12.3 km"),
        ]
        for (name, step, shows) in steps {
            try step()
            let swift = try run(program: "distance-widget", ["--dir", suites.path, "--once"], environment: CInterface.environment)
            let expected = try #require(swift.lines.first, "the Swift widget: \(swift.errors)")
            let shown = widget.waitForLine(timeout: .seconds(30)) { $0 == expected }
            #expect(shown != nil, "after \(name), the widget shows \"\(expected)\" as the Swift one does: \(widget.lines.suffix(3)) \(widget.standardError)")
            if let shows { #expect(widget.lines.last == shows, "after \(name)") }
        }
    }

    @Test func theCWidgetRedrawsAsTheSwiftOneDoes() throws {
        let widget = try CInterface.compile(["Examples/c-widget/widget.c"], named: "c-widget", in: directory)
        try expectWidgetFollowsTheSwiftOne(widget, [])
    }

    @Test(.needsPython) func thePythonWidgetRedrawsAsTheSwiftOneDoes() throws {
        let script = CInterface.package.appendingPathComponent("Examples/python-widget/widget.py").path
        try expectWidgetFollowsTheSwiftOne(CInterface.python3!, [script, "--library", CInterface.library.path])
    }

    @Test(.needsPython) func theDemoRunsTheWidgetsOfEveryLanguage() throws {
        let demo = try run(program: "suite-demo", ["--all-languages"], within: .seconds(180))
        #expect(demo.status == .exited(0), "\(demo.lines) \(demo.errors)")
        #expect(demo.lines.last?.hasPrefix("Every widget showed every state: 17 redraws") == true, "\(demo.lines)")
        for widget in ["c-widget", "python-widget"] {
            #expect(demo.lines.filter { $0.hasPrefix("  \(widget) ") && $0.contains("redrawn") }.count == 4, "\(widget): \(demo.lines)")
        }
    }

    // MARK: pkg-config, and installing

    @Test(.enabled(if: CInterface.pkgConfig != nil, "pkg-config is not installed (apt-get install pkg-config)"))
    func pkgConfigFlagsBuildTheWidgetFromTheBuildDirectoryAndFromAnInstall() throws {
        let script = CInterface.package.appendingPathComponent("Scripts/make-pkgconfig").path
        for install in [false, true] {
            let prefix = directory.file("prefix").path
            let made = try run(program: script, install ? ["--install", prefix, Products.directory.path] : [Products.directory.path])
            try #require(made.status == .exited(0), "\(made.errors)")
            var environment = CInterface.environment
            environment["PKG_CONFIG_PATH"] = made.lines.last!
            let flags = try run(program: CInterface.pkgConfig!, ["--cflags", "--libs", "suitedefaults"], environment: environment)
            try #require(flags.status == .exited(0), "\(flags.errors)")
            // An installed library in a prefix the loader does not search needs an rpath of
            // the program's own (or ldconfig, for a system directory).
            let linking = flags.lines.joined(separator: " ").split(separator: " ").map(String.init)
                + (install ? ["-Wl,-rpath,\(prefix)/lib"] : [])
            let output = install ? "installed-widget" : "c-widget"
            let widget = try CInterface.compile(["Examples/c-widget/widget.c"], named: output, in: directory, flags: linking)
            let shown = try run(program: widget, ["--dir", directory.file("suites").path, "--once"], environment: CInterface.environment)
            #expect(shown.status == .exited(0) && shown.lines == ["Last run: none"], "\(shown.lines) \(shown.errors)")
            if install {
                #expect(FileManager.default.fileExists(atPath: "\(prefix)/include/suite_defaults.h"))
                let needed = try run(program: "/usr/bin/env", ["ldd", widget])
                #expect(needed.lines.contains { $0.contains("libsuitedefaults.so.1 => \(prefix)/lib/libsuitedefaults.so.1") },
                        "the installed copy is the one loaded: \(needed.lines)")
            }
        }
    }
}
