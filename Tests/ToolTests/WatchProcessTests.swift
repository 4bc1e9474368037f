import ChildProcess
import Foundation
import Glibc
import Testing
import TestSupport
@_spi(Tools) @testable import SuiteDefaults

/// One line of `suite-watch --json`.
struct WatchedLine: Equatable, CustomStringConvertible {
    var suite: String
    var key: String
    var old: JSONNode
    var new: JSONNode
    var sequence: UInt64
    var pid: JSONNode
    var kind: String

    init?(_ line: String) {
        guard case .object(let members) = try? JSONParser.parse(line) else { return nil }
        let fields = Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
        guard case .string(let suite) = fields["suite"], case .string(let key) = fields["key"],
              case .number(let sequence) = fields["seq"], case .string(let kind) = fields["kind"],
              let old = fields["old"], let new = fields["new"], let pid = fields["pid"], fields["time"] != nil,
              let number = UInt64(sequence)
        else { return nil }
        (self.suite, self.key, self.old, self.new, self.sequence, self.pid, self.kind) = (suite, key, old, new, number, pid, kind)
    }

    var description: String { "\(suite) \(key): \(old.text) → \(new.text) seq \(sequence) \(kind)" }
}

/// Starts `suite-watch --json ...` and waits until it watches.
func startWatch(_ arguments: [String], in directory: TemporaryDirectory) throws -> ChildProcess {
    let watch = try ChildProcess(executable: Products.path("suite-watch"), arguments: ["--dir", directory.path, "--json"] + arguments)
    #expect(watch.waitForError(containing: "suite-watch: watching", timeout: .seconds(60)), "\(watch.standardError)")
    return watch
}

/// Checks that a watcher saw every one of `commits` commits, in order, each key's
/// old value being the new value before it; returns the final values.
func checkEveryCommit(_ lines: [String], commits: Int, sourceLocation: SourceLocation = #_sourceLocation) -> [String: JSONNode] {
    let changes = lines.compactMap(WatchedLine.init)
    #expect(changes.count == lines.count, "every line is a change", sourceLocation: sourceLocation)
    #expect(changes.map(\.sequence) == (1...UInt64(commits)).map { $0 }, "every commit, once, in order", sourceLocation: sourceLocation)
    var model: [String: JSONNode] = [:]
    for change in changes {
        #expect(change.kind == "commit", sourceLocation: sourceLocation)
        #expect(change.old == (model[change.key] ?? .null), "\(change)", sourceLocation: sourceLocation)
        model[change.key] = change.new
    }
    return model
}

@Suite("suite-watch and observers in several processes", .serialized)
struct WatchProcessTests {
    let directory = TemporaryDirectory()

    @Test func fourWatchersSeeEveryChangeOfTwoWriters() throws {
        let perWriter = 150
        // The watchers start before the suite exists.
        let watchers = try (0..<4).map { _ in try startWatch(["--count", "\(2 * perWriter)", "stream"], in: directory) }
        let writers = try (0..<2).map { index in
            try startWorker("write-keys", in: directory, suite: "stream", ["prefix": "w\(index)", "count": "\(perWriter)", "keys": "5"])
        }
        for writer in writers { writer.expectSuccess() }
        let stored = try Suite(named: "stream", directory: directory.url).storedValues()
        for watcher in watchers {
            watcher.expectSuccess()
            let model = checkEveryCommit(watcher.lines, commits: 2 * perWriter)
            #expect(model == stored.mapValues { $0.jsonNode(style: .plain) })
        }
    }

    @Test func aStoppedWatcherCatchesUpAcrossACompaction() throws {
        let suite = try Suite(named: "paused", directory: directory.url)
        let watcher = try startWatch(["--count", "5", "paused"], in: directory)
        // Once the watcher has read the file, stop it, and replace the file under it.
        try suite.set(0, forKey: "k")
        watcher.expectLine(startingWith: "{")
        #expect(watcher.stopHoldingNoLock(on: directory.file("paused.suite.lock").path))
        for value in 1...3 { try suite.set(value, forKey: "k") }
        try suite.compact()
        try suite.set(4, forKey: "k")
        watcher.signal(SIGCONT)
        watcher.expectSuccess()
        // The commits before the compaction are read from the replaced file: none is folded.
        _ = checkEveryCommit(watcher.lines, commits: 5)
    }

    /// Stops a watcher, then writes across two compactions made by a suite with
    /// `options`, and returns the changes the watcher prints once continued.
    /// `meanwhile` runs after the second compaction, before the watcher goes on.
    func changesAcrossTwoCompactions(_ name: String, options: Suite.Options,
                                     meanwhile: () throws -> Void = {}) throws -> [WatchedLine] {
        let suite = try Suite(named: name, directory: directory.url, options: options)
        let watcher = try startWatch([name], in: directory)
        try suite.set(0, forKey: "k")
        watcher.expectLine(startingWith: "{")
        #expect(watcher.stopHoldingNoLock(on: directory.file(name + ".suite.lock").path))
        try suite.set(1, forKey: "k")
        try suite.compact()
        try suite.set(2, forKey: "k")
        try suite.compact()
        try suite.set(3, forKey: "j")
        try meanwhile()
        watcher.signal(SIGCONT)
        let last = watcher.waitForLine(timeout: .seconds(60)) { $0.contains("\"key\":\"j\"") }
        #expect(last != nil)
        watcher.signal(SIGTERM)
        #expect(watcher.wait(timeout: .seconds(60)) == .exited(0))
        return watcher.lines.compactMap(WatchedLine.init)
    }

    @Test func twoCompactionsWhileStoppedFoldNothing() throws {
        // The commit in the file the watcher had is read from it, the one in the file
        // in between from that file, kept as history; the last file's own commits
        // come one by one.
        let changes = try changesAcrossTwoCompactions("kept", options: Suite.Options())
        #expect(changes.map(\.kind) == ["commit", "commit", "commit", "commit"], "\(changes)")
        #expect(changes.map(\.new) == [.number("0"), .number("1"), .number("2"), .number("3")])
        #expect(changes.map(\.old) == [.null, .number("0"), .number("1"), .null])
        #expect(changes.map(\.sequence) == [1, 2, 3, 4])
    }

    @Test func beyondTheHistoryCommitsFoldIntoTheNetChange() throws {
        // Without history, the commit in the file in between is folded into the jump
        // to the last file.
        let changes = try changesAcrossTwoCompactions("folded", options: Suite.Options(changeHistorySize: 0))
        #expect(changes.map(\.kind) == ["commit", "commit", "net", "commit"], "\(changes)")
        #expect(changes.map(\.new) == [.number("0"), .number("1"), .number("2"), .number("3")])
        #expect(changes.map(\.old) == [.null, .number("0"), .number("1"), .null])
        #expect(changes.map(\.sequence) == [1, 2, 3, 4])
        #expect(!directory.names().contains { $0.hasPrefix("folded.suite.h.") })
    }

    /// Another suite's file put under each of the suite's history names (as an
    /// exchange of the two suites' data files during a compaction could, before
    /// history was linked by descriptor): it is not this suite's history, so its
    /// records are not delivered; the commits it stood for fold into the net change.
    /// Fails when a history file's tag is not checked (the other suite's keys arrive).
    @Test func anotherSuitesFileUnderAHistoryNameIsNotReadAsHistory() throws {
        let other = try Suite(named: "other", directory: directory.url)
        for index in 0..<3 { try other.set(index, forKey: "intruder\(index)") }
        let changes = try changesAcrossTwoCompactions("kept", options: Suite.Options()) {
            let history = directory.names().filter { $0.hasPrefix("kept.suite.h.") }
            #expect(!history.isEmpty)
            for name in history {
                let planted = directory.file("planted").path
                #expect(link(directory.file("other.suite").path, planted) == 0 && rename(planted, directory.file(name).path) == 0)
            }
        }
        #expect(!changes.contains { $0.key.hasPrefix("intruder") }, "\(changes)")
        #expect(changes.map(\.kind) == ["commit", "commit", "net", "commit"], "\(changes)")
        #expect(changes.map(\.new) == [.number("0"), .number("1"), .number("2"), .number("3")])
    }

    @Test(.enabled(if: geteuid() == 0, "lowering the inotify queue limit needs root; the in-process test simulates the overflow"))
    func aRealQueueOverflowIsCaughtUp() throws {
        // Both suites exist, and the watcher has read the one it watches.
        let left = try Suite(named: "left", directory: directory.url), right = try Suite(named: "right", directory: directory.url)
        try left.set(-1, forKey: "k")
        try right.set(-1, forKey: "k")
        // The kernel sizes an inotify queue when it is created: lower the limit just
        // for the watcher's start, then put it back. The limit is machine-wide, so
        // test processes running at once take turns (an flock on the setting itself),
        // and each reads the true original.
        let limitPath = "/proc/sys/fs/inotify/max_queued_events"
        let turn = open(limitPath, O_RDONLY | O_CLOEXEC)
        #expect(turn >= 0 && flock(turn, LOCK_EX) == 0)
        defer { close(turn) }
        let original = try String(contentsOfFile: limitPath, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let watcher: ChildProcess
        do {
            try "4".write(toFile: limitPath, atomically: false, encoding: .utf8)
            defer { try? original.write(toFile: limitPath, atomically: false, encoding: .utf8) }
            watcher = try startWatch(["--count", "30", "left"], in: directory)
        }
        #expect(try String(contentsOfFile: limitPath, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines) == original)
        flock(turn, LOCK_UN)
        #expect(watcher.stopHoldingNoLock(on: directory.file("left.suite.lock").path))
        // Alternating files, so that the kernel cannot merge consecutive events.
        for value in 0..<30 {
            try left.set(value, forKey: "k")
            try right.set(value, forKey: "k")
        }
        watcher.signal(SIGCONT)
        watcher.expectSuccess()
        #expect(watcher.standardError.contains("changeEventsLost"), "the queue overflowed: \(watcher.standardError)")
        // The journal still holds every commit: none is lost, none folded.
        let changes = watcher.lines.compactMap(WatchedLine.init)
        #expect(changes.map(\.new) == (0..<30).map { .number("\($0)") })
        #expect(changes.allSatisfy { $0.kind == "commit" })
    }

    @Test func suiteWatchShowsWhatSuiteDefaultsWrites() throws {
        let watcher = try startWatch(["--count", "3", "--initial", "cli", "units.system", "count"], in: directory)
        func write(_ arguments: String...) throws {
            #expect(try run(program: "suite-defaults", ["--dir", directory.path] + arguments).status == .exited(0))
        }
        try write("write", "cli", "units.system", "metric")
        try write("write", "cli", "ignored", "x")
        try write("write", "cli", "units.system", "imperial")
        try write("write", "cli", "count", "--int", "7")
        watcher.expectSuccess()
        let changes = watcher.lines.compactMap(WatchedLine.init)
        #expect(changes.map(\.key) == ["units.system", "units.system", "count"])
        #expect(changes.map(\.old) == [.null, .string("metric"), .null])
        #expect(changes.map(\.new) == [.string("metric"), .string("imperial"), .number("7")])
        #expect(changes.map(\.sequence) == [1, 3, 4])
        #expect(changes.allSatisfy { if case .number = $0.pid { true } else { false } })
    }

    @Test func suiteWatchPrintsCurrentValuesFirstAndReadableLines() throws {
        let suite = try Suite(named: "human", directory: directory.url)
        try suite.set("metric", forKey: "units.system")
        let watcher = try ChildProcess(executable: Products.path("suite-watch"),
                                       arguments: ["--dir", directory.path, "--initial", "--count", "1", "human"])
        #expect(watcher.waitForError(containing: "watching", timeout: .seconds(60)))
        try suite.set("imperial", forKey: "units.system")
        watcher.expectSuccess()
        #expect(watcher.lines.count == 2)
        #expect(watcher.lines.first?.hasSuffix("human units.system: \"metric\" (current)") == true, "\(watcher.lines)")
        #expect(watcher.lines.last?.contains("human units.system: \"metric\" → \"imperial\" (pid \(getpid()), seq 2)") == true,
                "\(watcher.lines)")
    }

    @Test func suiteWatchExitsWithClearStatuses() throws {
        func run(_ arguments: [String]) throws -> ProgramRun { try TestSupport.run(program: "suite-watch", arguments) }
        let missing = try run(["--dir", directory.file("nowhere").path, "s"])
        #expect(missing.status == .exited(2) && missing.errors.contains("does not exist"))
        #expect(try run(["--dir", directory.path]).status == .exited(2))
        #expect(try run(["--dir", directory.path, "--count", "x", "s"]).status == .exited(2))
        #expect(try run(["--dir", directory.path, "--all", "s"]).status == .exited(2))
        #expect(try run(["--dir", directory.path, "a/b"]).status == .exited(2))
        #expect(try run(["--dir", directory.path, "--bogus", "s"]).status == .exited(2))
        let timedOut = try run(["--dir", directory.path, "--count", "1", "--timeout", "0.2", "quiet"])
        #expect(timedOut.status == .exited(1) && timedOut.errors.contains("0 of 1"))

        let interrupted = try startWatch(["quiet"], in: directory)
        interrupted.signal(SIGINT)
        #expect(interrupted.wait(timeout: .seconds(60)) == .exited(0))
    }
}
