import ChildProcess
import Foundation
import Glibc
import Testing
import TestSupport
import ToolSupport
@_spi(Testing) @testable import SuiteDefaults

/// A process that may only read a suite catches up by reading the whole file
/// (`loadWithoutRepair`) where another would repair it: when it has read nothing yet
/// and the shared header cannot be trusted (a writer died inside its commit, the
/// machine restarted), or when it finds damage. That read used to leave the view
/// without the data file and the length it read, so the next locked catch-up took the
/// file for a new one and replayed it whole to the process's observers: every key
/// removed, then every commit again. They must hear only the real changes.
@Suite("A process that may only read, after reading the whole file", .serialized)
struct ReadOnlyCatchUpTests: EngineStateTesting {
    let directory = TemporaryDirectory()

    /// Leaves the suite at `place` so that a process opening it cannot trust the
    /// shared header: a writer killed inside its commit (the generation stays odd), or
    /// the header as a restart leaves it (another boot's ID: not set up since boot).
    static func untrustHeader(_ situation: String, at place: URL, suite name: String) {
        let lockPath = place.appendingPathComponent(name + ".suite.lock").path
        switch situation {
        case "aWriterDied":
            HostileRoundNineTests.killAWriterInsideItsCommit(at: place, suite: name)
            #expect(headerWord(lockPath, at: 16).map { $0 & 1 == 1 } == true, "the generation is not odd")
        default:
            let descriptor = open(lockPath, O_RDWR)
            var zeros = [UInt8](repeating: 0, count: 16)
            #expect(descriptor >= 0 && pwrite(descriptor, &zeros, 16, 48) == 16)
            if descriptor >= 0 { close(descriptor) }
        }
    }

    /// The 8 bytes of the shared header at `offset`, as the process maps them.
    static func headerWord(_ lockPath: String, at offset: Int) -> UInt64? {
        let descriptor = open(lockPath, O_RDONLY)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var word: UInt64 = 0
        return pread(descriptor, &word, 8, off_t(offset)) == 8 ? word : nil
    }

    /// A process that may only read the suite starts observing it when the header
    /// cannot be trusted, so its first read is of the whole file. Then a process that
    /// may write commits twice (repairing the header first): the observer hears
    /// exactly those two commits, with no key removed and no earlier commit again.
    @Test(.enabled(if: HostileRoundNineTests.canDropCapabilities, "needs root and setpriv, to make a process that may only read"),
          arguments: ["aWriterDied", "theMachineRestarted"])
    func anObserverThatReadTheWholeFileHearsOnlyTheNewCommits(situation: String) throws {
        let name = "ro-whole"
        let place = directory.file("ro-\(situation)")
        let suite = try Suite(named: name, directory: place, options: .init(lockTimeout: .seconds(30)))
        for index in 0..<20 { try suite.set("v\(index)", forKey: "k\(index % 5)") }
        Self.untrustHeader(situation, at: place, suite: name)
        let lockPath = place.appendingPathComponent(name + ".suite.lock").path
        let dataPath = place.appendingPathComponent(name + ".suite").path
        let header = [16, 48, 56].map { Self.headerWord(lockPath, at: $0) }
        #expect(chmod(dataPath, 0o440) == 0 && chmod(lockPath, 0o440) == 0 && chmod(place.path, 0o550) == 0)
        defer { _ = chmod(place.path, 0o700) }

        let watcher = try HostileRoundNineTests.startWithoutCapabilities(
            Products.path("suite-watch"), ["--json", "--initial", "--dir", place.path, name])
        defer { _ = watcher.kill() }
        let initial = situation == "aWriterDied" ? 6 : 5
        #expect(watcher.waitForLines(timeout: .seconds(30)) { HostileRoundNineTests.parse($0).count >= initial },
                "\(watcher.lines) \(watcher.standardError)")
        #expect(watcher.waitForError(containing: "watching", timeout: .seconds(30)), "\(watcher.standardError)")
        // It could not set the header up again: its read was of the whole file.
        #expect([16, 48, 56].map { Self.headerWord(lockPath, at: $0) } == header)

        try suite.set("y", forKey: "after")
        try suite.set("z", forKey: "end")
        #expect(watcher.waitForLines(timeout: .seconds(30)) { HostileRoundNineTests.parse($0).contains { $0.key == "end" } },
                "\(watcher.lines) \(watcher.standardError)")
        let changes = HostileRoundNineTests.parse(watcher.lines).filter { $0.kind != "initial" }
        #expect(changes.map { "\($0.key): \($0.old ?? "-") -> \($0.new ?? "-") \($0.kind)" }
                    == ["after: - -> y commit", "end: - -> z commit"],
                "observed \(changes.count): \(changes.prefix(12))")
    }

    // MARK: Damage found by a process that may only read (the engine, in this process)

    /// A reader that may only read, collecting changes, finds the data file longer
    /// than committed (a record cut short past the end, appended without the lock,
    /// and a generation moved on, as a member of the group can make it): it reads the
    /// whole file and hears nothing, since nothing committed changed. Then a writer
    /// cuts the tail off and commits once: the reader hears exactly that commit.
    @Test func aReaderThatFoundATornTailHearsOnlyTheNextCommit() throws {
        let name = "ro-torn"
        let writer = try openState(name)
        for index in 0..<10 { try commit("k\(index % 3)", "v\(index)", in: writer) }
        let reader = try openState(name)
        reader.writable = false
        #expect(try !catchUpReadOnly(reader))
        reader.collectsChanges = true

        let operation = try SuiteDefaults.Operation.validated(.string("torn"), forKey: "k0", suite: name, maximumValueSize: 1 << 20)
        let tail = RecordFormat.encode(Record(kind: .transaction, sequence: 11, timestamp: 0, pid: 1, operations: [operation], flags: []))
        let data = try #require(FileHandle(forWritingAtPath: directory.file(name + ".suite").path))
        try data.seekToEnd()
        try data.write(contentsOf: tail.dropLast(3))
        try data.close()
        let header = try #require(writer.header)
        header.publish(generation: header.generation &+ 2)
        #expect(try catchUpReadOnly(reader), "the reader did not read the whole file")
        #expect(takeChanges(reader, withKinds: true) == [])
        #expect(reader.contents.values["k0"] == .string("v9"))

        try commit("after", "y", in: writer)
        #expect(try !catchUpReadOnly(reader), "the reader did not read on")
        #expect(takeChanges(reader, withKinds: true) == [#"after: - -> "y" commit"#])
        #expect(reader.contents.values.count == 4)
    }
}
