import Glibc
import Testing
import TestSupport
@testable import SuiteDefaults

/// A shared header that says the suite has no data file while it has one: what a lock
/// file cut short while a process set its header up leaves (the fields go, the magic
/// and boot ID come back after). Seen once in CI as a worker's write failing with
/// "A suite file appeared that no process wrote under the lock": the catch-up had
/// believed the header, dropped the file it held and every value, and the write then
/// found the file in its way.
@Suite("A header that names no data file while the suite has one is repaired, not believed")
struct HeaderWithNoDataFileTests: EngineStateTesting {
    let directory = TemporaryDirectory()

    @Test func aWriterThatHoldsTheDataFileKeepsEveryValueAndWrites() throws {
        let name = "forged-writer"
        let suite = try Suite(named: name, directory: directory.url)
        try suite.set("kept", forKey: "k")
        try suite.set(5, forKey: "counter")
        try forgeNoDataFile(name)
        try suite.update { try $0.set(($0.integer(forKey: "counter") ?? 0) + 1, forKey: "counter") }
        #expect(suite.integer(forKey: "counter") == 6)
        #expect(suite.string(forKey: "k") == "kept")
        #expect(try readHeaderWord(name, at: 32) != 0, "the header names the data file again")
    }

    @Test func aReaderThatHoldsTheDataFileStillReadsItsValues() throws {
        let name = "forged-reader"
        let suite = try Suite(named: name, directory: directory.url)
        try suite.set("kept", forKey: "k")
        try forgeNoDataFile(name)
        #expect(suite.string(forKey: "k") == "kept")
        try suite.set("after", forKey: "k2")
        let worker = try startWorker("get", in: directory, suite: name, ["key": "k"])
        let line = worker.waitForLine(timeout: .seconds(60)) { $0.hasPrefix("value") || $0.hasPrefix("absent") } ?? "no answer"
        worker.expectSuccess()
        #expect(line == "value \"kept\"")
        #expect(suite.string(forKey: "k2") == "after")
    }

    /// A process that opened the suite before anything was written holds no data file:
    /// the file under the data file's name is what tells it the header is wrong.
    @Test func aReaderThatOpenedTheSuiteEmptyReadsWhatAnotherProcessWrote() throws {
        let name = "forged-empty"
        let suite = try Suite(named: name, directory: directory.url)
        #expect(suite.string(forKey: "k") == nil)
        try startWorker("try-set", in: directory, suite: name, ["key": "k", "value": "theirs"]).expectSuccess(within: .seconds(60))
        try forgeNoDataFile(name)
        #expect(suite.string(forKey: "k") == "theirs")
        try suite.set("mine", forKey: "k2")
        #expect(suite.string(forKey: "k") == "theirs" && suite.string(forKey: "k2") == "mine")
    }

    /// The engine itself, under the shared lock: the catch-up asks for the exclusive
    /// one rather than drop the file it holds.
    @Test func theSharedLockCatchUpAsksForTheExclusiveLock() throws {
        let name = "forged-engine"
        let state = try openState(name)
        try commit("k", "kept", in: state)
        try forgeNoDataFile(name)
        #expect(try state.tryLockFile(.shared))
        defer { state.unlockFile() }
        #expect(throws: NeedsExclusiveLock.self) { try state.catchUp(exclusive: false) }
        #expect(state.contents["k"] == .string("kept"))
    }
}
