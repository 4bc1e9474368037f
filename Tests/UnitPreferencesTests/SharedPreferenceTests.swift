import ChildProcess
import Foundation
import SuiteDefaults
import Testing
import TestSupport
import UnitPreferences

@Suite("The shared unit preference", .serialized)
struct SharedPreferenceTests {
    let directory = TemporaryDirectory()

    func open() throws -> Suite { try Suite(named: "group.com.example.fitness", directory: directory.url) }

    @Test func firstAccessStoresTheDetectedSystem() throws {
        let suite = try open()
        #expect(try UnitSystem.current(in: suite, environment: ["LANG": "en_US.UTF-8"]) == .imperial)
        #expect(suite.string(forKey: "units.system") == "imperial")
        // Once stored, the locale no longer matters.
        #expect(try UnitSystem.current(in: suite, environment: ["LANG": "de_DE.UTF-8"]) == .imperial)
    }

    @Test func anExplicitChoiceIsNeverOverwritten() throws {
        let suite = try open()
        try UnitSystem.setCurrent(.metric, in: suite)
        #expect(try UnitSystem.current(in: suite, environment: ["LANG": "en_US.UTF-8"]) == .metric)
        #expect(suite.string(forKey: SuiteKey.unitSystem.name) == "metric")
    }

    @Test func anInvalidStoredValueIsDetectedAgainWithADiagnostic() throws {
        let suite = try open()
        let diagnostics = DiagnosticsRecorder(directory)
        try suite.set("furlongs", forKey: "units.system")
        #expect(try UnitSystem.current(in: suite, environment: ["LANG": "en_LR"]) == .imperial)
        #expect(suite.string(forKey: "units.system") == "imperial")
        #expect(diagnostics.kinds == [.invalidStoredValue])
        try suite.set(42, forKey: "units.system")
        #expect(try UnitSystem.current(in: suite, environment: ["LANG": "fr_FR"]) == .metric)
    }

    @Test(.onThreadsOfItsOwn) func updatesGiveTheCurrentValueThenEveryChangeFromAnyProcess() async throws {
        let suite = try open()
        let updates = try UnitSystem.updates(in: suite, environment: ["LANG": "en_US"])
        var iterator = updates.makeAsyncIterator()
        #expect(try await iterator.next() == .imperial, "the detected value, stored")
        try UnitSystem.setCurrent(.metric, in: suite)
        #expect(try await iterator.next() == .metric)
        let worker = try startWorker("units-set", in: directory, suite: "group.com.example.fitness", ["system": "imperial"])
        worker.send("go\n")
        #expect(try await iterator.next() == .imperial, "a change from another process")
        // Removed: detected again (and stored), from this process's environment.
        try suite.removeValue(forKey: SuiteKey.unitSystem.name)
        try suite.set("metric", forKey: "units.system")
        #expect(try await iterator.next() == .metric)
        worker.expectSuccess()
    }

    @Test func theFirstAccessRaceAcrossProcessesNeverLosesTheUserChoice() throws {
        // Each trial: on a fresh suite, three processes ask for the current system
        // (detecting metric) while a fourth stores the user's choice, imperial, at
        // the same moment.
        for trial in 0..<12 {
            let name = "race\(trial)"
            let getters = try (0..<3).map { _ in
                try startWorker("units-current", in: directory, suite: name, ["lang": "de_DE.UTF-8"])
            }
            let setter = try startWorker("units-set", in: directory, suite: name, ["system": "imperial"])
            let everyone = getters + [setter]
            for process in everyone { process.expectLine(startingWith: "opened") }
            for process in everyone { process.send("go\n") }
            setter.expectLine(startingWith: "set imperial")
            let answers = getters.compactMap { $0.expectLine(startingWith: "current") }
            for process in everyone { process.expectSuccess() }

            let stored = try Suite(named: name, directory: directory.url).string(forKey: SuiteKey.unitSystem.name)
            #expect(stored == "imperial", "trial \(trial): the acknowledged choice was lost")
            // A getter answers what was stored when it looked: the detection, stored
            // before the choice, or the choice.
            #expect(answers.count == 3 && answers.allSatisfy { $0 == "current imperial" || $0 == "current metric" })
        }
    }
}
