import ChildProcess
import FitnessShared
import Foundation
import Glibc
import SuiteDefaults
import Testing
import TestSupport
import UnitPreferences

/// The example programs, run as the binaries they are.
@Suite("The example programs")
struct ExampleProgramTests {
    let directory = TemporaryDirectory()

    /// Runs a program to its end; its locale is `LANG`, unless the caller sets more.
    func run(_ program: String, _ arguments: [String], environment: [String: String] = ["LANG": "en_US.UTF-8"],
             input: String? = nil) throws -> ProgramRun {
        var variables = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("LC_") && $0.key != "LANG" }
        variables.merge(environment) { $1 }
        return try TestSupport.run(program: program, ["--dir", directory.path] + arguments, input: input, environment: variables)
    }

    func suite() throws -> Suite { try Suite(named: FitnessSuite.name, directory: directory.url) }

    @Test func theAppDetectsSetsAndShowsTheUnits() throws {
        #expect(try run("fitness-app", ["units"]).lines == ["Units: Imperial (mi, lbs)"], "detected from en_US")
        #expect(try run("fitness-app", ["units"], environment: ["LANG": "de_DE.UTF-8"]).lines == ["Units: Imperial (mi, lbs)"],
                "stored on first access: the locale no longer matters")
        #expect(try run("fitness-app", ["units", "metric"]).lines == ["Units set to Metric (km, kg)"])
        #expect(try UnitSystem.current(in: suite()) == .metric)
        #expect(try run("fitness-app", ["units", "auto"], environment: ["LANG": "en_LR.UTF-8"]).lines
            == ["Units set to Imperial (mi, lbs) (from the locale)"])
        #expect(try run("fitness-app", ["units"], environment: ["LANG": "es_ES.UTF-8"]).lines == ["Units: Imperial (mi, lbs)"])
        try UnitSystem.setCurrent(.metric, in: suite())
        #expect(try run("fitness-app", ["units"], environment: ["LANG": "pt_BR.UTF-8"]).lines == ["Units: Métrico (km, kg)"])
        #expect(try run("fitness-app", ["units", "furlongs"]).status == .exited(2))
    }

    @Test func theAppLogsInTheUsersUnitsAndStoresMetric() throws {
        try UnitSystem.setCurrent(.imperial, in: suite())
        #expect(try run("fitness-app", ["log-run", "3.1"]).lines == ["Logged a run of 3.1 mi"])
        #expect(try run("fitness-app", ["log-run", "5 km"]).lines == ["Logged a run of 3.1 mi"])
        #expect(try run("fitness-app", ["log-lift", "198 lbs"]).lines == ["Logged a lift of 198 lbs"])
        let workouts = try suite().value(for: .workouts)
        #expect(workouts.map(\.kind) == [.run, .run, .lift])
        #expect(abs(workouts[0].amount - 3.1 * 1_609.344) < 1e-9, "stored in metres")
        #expect(workouts[1].amount == 5_000)
        #expect(abs(workouts[2].amount - 198 * 0.453_592_37) < 1e-9, "stored in kilograms")

        let refused = try run("fitness-app", ["log-run", "5 kg"])
        #expect(refused.status == .exited(1))
        #expect(refused.errors.contains("unit of weight"))
        #expect(try run("fitness-app", ["log-lift", "-3"]).status == .exited(1))
        #expect(try suite().value(for: .workouts).count == 3, "refused input stored nothing")

        try UnitSystem.setCurrent(.metric, in: suite())
        let history = try run("fitness-app", ["history"], environment: ["LANG": "es_ES.UTF-8"])
        #expect(history.lines.count == 3)
        #expect(history.lines.map { $0.split(separator: " ").suffix(3).joined(separator: " ") } == ["run 5,0 km", "run 5,0 km", "lift 90 kg"])
    }

    @Test func widgetsRenderOnceAndRedrawOnChanges() throws {
        #expect(try run("distance-widget", ["--once"]).lines == ["Last run: none"])
        #expect(try run("weight-widget", ["--once"]).lines == ["Last lift: none"])
        try UnitSystem.setCurrent(.metric, in: suite())
        try suite().log(Workout(kind: .run, amount: 5_000))
        try suite().log(Workout(kind: .lift, amount: 90))
        #expect(try run("distance-widget", ["--once"]).lines == ["Last run: 5.0 km"])
        #expect(try run("weight-widget", ["--once"], environment: ["LANG": "de_DE"]).lines == ["Last lift: 90 kg"])

        var variables = ProcessInfo.processInfo.environment
        variables["LANG"] = "en_US.UTF-8"
        let widget = try ChildProcess(executable: Products.path("distance-widget"), arguments: ["--dir", directory.path],
                                      environment: variables)
        widget.expectLine(startingWith: "Last run: 5.0 km")
        try UnitSystem.setCurrent(.imperial, in: suite())
        widget.expectLine(startingWith: "Last run: 3.1 mi")
        try suite().log(Workout(kind: .run, amount: 10_000))
        widget.expectLine(startingWith: "Last run: 6.2 mi")
        widget.signal(SIGTERM)
        #expect(widget.wait(timeout: .seconds(60)) == .exited(0))
    }

    @Test func thePriceComesBackExactly() throws {
        #expect(try run("price-ticker", ["show"]).lines == ["BTC: no price yet"])
        #expect(try run("price-ticker", ["set", "68901.23", "usd"]).lines == ["Stored BTC: 68901.23 USD"])
        let shown = try run("price-ticker", ["show"])
        #expect(shown.lines.first == "BTC: 68901.23 USD")
        #expect(shown.lines.last == "  stored exactly as 68901.23; through a Double it would read 68901.22999999998976")
        let quote = try suite().decodable(PriceQuote.self, forKey: PriceQuote.storageKey)
        #expect(quote?.value == Decimal(string: "68901.23"))
        #expect(try run("price-ticker", ["watch", "--once"]).lines == ["BTC: 68901.23 USD"])
        #expect(try run("price-ticker", ["set", "abc", "USD"]).status == .exited(1))
        #expect(try run("price-ticker", ["set", "1e5", "USD"]).status == .exited(1))
    }

    @Test func aDamagedPriceReadsAsAbsentWithADiagnostic() throws {
        try suite().setValue(.json(Data("{\"value\": \"not a number\"}".utf8)), forKey: PriceQuote.storageKey)
        let shown = try run("price-ticker", ["show"])
        #expect(shown.status == .exited(0))
        #expect(shown.lines == ["BTC: no price yet"])
        #expect(shown.errors.contains("unreadable"))
    }

    /// Two machines through a local etcd: a change on either shows on both machines' widgets.
    @Test(.enabled(if: EtcdCluster.executable != nil, Comment(rawValue: EtcdCluster.missingMessage)))
    func theSyncDemoShowsBothMachinesFollowing() throws {
        let demo = try TestSupport.run(program: "sync-demo", [], within: .seconds(120))
        #expect(demo.status == .exited(0), "\(demo.lines) \(demo.errors)")
        #expect(demo.lines.last?.hasPrefix("Both machines' widgets followed every change: 8 redraws") == true, "\(demo.lines)")
        // After each change, both machines' widgets show it; the other machine's through etcd.
        for (change, distance, weight) in [("machine A app> units imperial", "Last run: 3.1 mi", "Last lift: 198 lbs"),
                                           ("machine B app> units metric", "Last run: 5.0 km", "Last lift: 90 kg")] {
            let after = demo.lines.drop { !$0.hasPrefix(change) }.dropFirst().prefix(4)
            #expect(after.count == 4, "\(change): \(demo.lines)")
            for machine in ["A", "B"] {
                #expect(after.contains { $0.contains("machine \(machine) distance-widget") && $0.contains(distance) && $0.contains("redrawn") },
                        "\(change): machine \(machine)'s distance widget: \(after)")
                #expect(after.contains { $0.contains("machine \(machine) weight-widget") && $0.contains(weight) && $0.contains("redrawn") },
                        "\(change): machine \(machine)'s weight widget: \(after)")
            }
            #expect(after.filter { $0.hasSuffix("(through etcd)") }.count == 2)
        }
        // It leaves no process and no directory behind.
        for line in demo.lines where line.contains("(pid ") {
            let pid = line.split(separator: "(pid ").last.flatMap { Int32($0.prefix { $0.isNumber }) } ?? 0
            #expect(pid > 0 && kill(pid, 0) != 0, "process \(pid) is gone")
        }
        let path = demo.lines.first { $0.contains("suite-sync on machine A") }?.split(separator: " ")
            .first { $0.contains("sync-demo.") }.map { String($0.dropLast()) } ?? ""
        let root = URL(fileURLWithPath: path).deletingLastPathComponent().path
        #expect(root.contains("sync-demo.") && !FileManager.default.fileExists(atPath: root), "\(root)")
    }

    /// Without etcd the sync demo says how to install it and exits 0.
    @Test func theSyncDemoWithoutEtcdSaysHowToInstallIt() throws {
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = "/nonexistent"
        let demo = try TestSupport.run(program: "sync-demo", [], environment: environment)
        #expect(demo.status == .exited(0), "\(demo.errors)")
        #expect(demo.lines.first?.contains("etcd is not installed") == true, "\(demo.lines)")
        #expect(demo.lines.contains { $0.contains("apt-get install -y etcd-server") }, "\(demo.lines)")
    }

    @Test func theDemoRunsEndToEnd() throws {
        let demo = try TestSupport.run(program: "suite-demo", [], within: .seconds(120))
        #expect(demo.status == .exited(0), "\(demo.lines) \(demo.errors)")
        #expect(demo.lines.last?.hasPrefix("Every widget showed every state: 9 redraws") == true, "\(demo.lines)")
        #expect(demo.lines.filter { $0.contains("redrawn") }.count == 9)
        #expect(demo.lines.contains { $0.contains("Last run: 3.1 mi") })
        #expect(demo.lines.contains { $0.contains("Last lift: 198 lbs") })
        // It leaves no process and no directory behind.
        let directoryLine = demo.lines.first ?? ""
        let path = String(directoryLine.split(separator: " ").last ?? "")
        #expect(path.contains("suite-demo.") && !FileManager.default.fileExists(atPath: path))
        for pidLine in demo.lines where pidLine.contains("(pid ") {
            let pid = pidLine.split(separator: "(pid ").last.flatMap { Int32($0.prefix { $0.isNumber }) } ?? 0
            #expect(pid > 0 && kill(pid, 0) != 0, "process \(pid) is gone")
        }
    }
}
