import ChildProcess
import Foundation
import Glibc
@_spi(Tools) import SuiteDefaults
import SuiteSync
import Testing
import TestSupport

/// `suite-sync` against what a hostile or careless neighbour does to its files and its
/// suite: a second `suite-sync` on the same state, a FIFO where the state goes, the
/// longest suite name, an app stopped while it holds the suite's lock (also while a
/// restarted `suite-sync` opens the suite and reads its journal).
@Suite("suite-sync against hostile local conditions", .onThreadsOfItsOwn, .needsEtcd, .serialized)
struct MirrorHostileTests {
    static let prefix = "/suite-defaults/hostile"

    /// The state file's name for `suite` under `prefix`, as `MirrorState` makes it.
    static func stateFileName(_ suite: String, prefix: String = Self.prefix) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in prefix.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return suite + ".suite.sync-" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    @Test func aSecondSuiteSyncOnTheSameSuiteAndPrefixIsRefusedAndTheFirstGoesOn() async throws {
        let rig = try await MirrorRig(["a"], prefix: Self.prefix, suites: ["s"])
        let (client, machine) = (rig.client, rig.machines[0])
        try machine.suite("s").set("one", forKey: "k")
        let first = try await machine.start()

        // Another daemon, and a --once, on the same suite, prefix and directory: refused
        // at once, naming the reason, never sharing the state file.
        for extra in [[], ["--once"]] {
            let second = try await blocking { try run(program: "suite-sync", machine.arguments + extra, within: .seconds(20)) }
            #expect(second.status == .exited(3), "\(extra): \(second.status.map(\.description) ?? "still running"); \(second.errors)")
            #expect(second.errors.contains("another suite-sync mirrors this suite"), "\(second.errors)")
        }
        // Another prefix has a state file of its own, and is not refused.
        let otherArguments = machine.arguments.map { $0 == Self.prefix ? Self.prefix + "-other" : $0 } + ["--once"]
        let otherRun = try await blocking { try run(program: "suite-sync", otherArguments, within: .seconds(20)) }
        #expect(otherRun.status == .exited(0), "\(otherRun.errors)")

        // The first is unharmed: it still sends, and its state file is whole.
        #expect(first.wait(timeout: .milliseconds(1)) == nil)
        try machine.suite("s").set("two", forKey: "k")
        try await eventually(.seconds(20), "the first suite-sync sending") {
            try await etcdValues(client, prefix: Self.prefix).values["s/k"] == #""two""#
        }
        let state = try #require(FileManager.default.contents(atPath: machine.directory.url
            .appendingPathComponent(Self.stateFileName("s")).path))
        #expect((try? JSONSerialization.jsonObject(with: state)) != nil)
    }

    @Test func aStateFileRemovedUnderARunningSuiteSyncIsNotSharedWithASecondOne() async throws {
        let rig = try await MirrorRig(["a"], prefix: Self.prefix, suites: ["s"])
        let (client, machine) = (rig.client, rig.machines[0])
        try machine.suite("s").set("one", forKey: "k")
        let first = try await machine.start()
        let statePath = machine.directory.url.appendingPathComponent(Self.stateFileName("s")).path
        #expect(unlink(statePath) == 0)

        // With the file gone, nothing is locked at its name: a second one starts...
        let second = try ChildProcess(executable: Products.path("suite-sync"), arguments: machine.arguments)
        defer { _ = second.kill() }
        second.closeInput()
        #expect(try await blocking { second.waitForLine(timeout: .seconds(20)) { $0.contains("\"watching\"") } } != nil,
                "\(second.standardError)")
        // ...but the first, at its next save, finds the new file locked and stops.
        try machine.suite("s").set("two", forKey: "k")
        let firstEnded = try await blocking { first.wait(timeout: .seconds(20)) }
        #expect(firstEnded == .exited(3), "\(firstEnded.map(\.description) ?? "still running")")
        #expect(first.standardError.contains("another suite-sync holds the new one"), "\(first.standardError)")
        #expect(second.wait(timeout: .milliseconds(1)) == nil, "\(second.standardError)")
        try await eventually(.seconds(20), "the change in etcd") {
            try await etcdValues(client, prefix: Self.prefix).values["s/k"] == #""two""#
        }
        let state = try #require(FileManager.default.contents(atPath: statePath))
        #expect((try? JSONSerialization.jsonObject(with: state)) != nil)
    }

    @Test func aFIFOInPlaceOfTheStateFileIsRefusedWithoutHanging() async throws {
        let rig = try await MirrorRig(["a"], prefix: Self.prefix, suites: ["s"])
        let machine = rig.machines[0]
        try machine.suite("s").set("one", forKey: "k")
        let statePath = machine.directory.url.appendingPathComponent(Self.stateFileName("s")).path
        #expect(mkfifo(statePath, 0o600) == 0)
        let refused = try await blocking { try run(program: "suite-sync", machine.arguments + ["--once"], within: .seconds(20)) }
        #expect(refused.status == .exited(3), "\(refused.status.map(\.description) ?? "hung"); \(refused.errors)")
        #expect(refused.errors.contains("not a regular file"), "\(refused.errors)")
        // Left as it was.
        var status = stat()
        #expect(lstat(statePath, &status) == 0 && status.st_mode & S_IFMT == S_IFIFO)

        // A FIFO (or anything) left where the new state is written first is no obstacle.
        #expect(unlink(statePath) == 0)
        let temporaryPath = machine.directory.url
            .appendingPathComponent(Self.stateFileName("s").replacingOccurrences(of: ".suite.sync-", with: ".suite.synctmp-")).path
        #expect(mkfifo(temporaryPath, 0o600) == 0)
        let taken = try await blocking { try run(program: "suite-sync", machine.arguments + ["--once"], within: .seconds(20)) }
        #expect(taken.status == .exited(0), "\(taken.status.map(\.description) ?? "hung"); \(taken.errors)")
        #expect(FileManager.default.fileExists(atPath: statePath))
    }

    @Test func aSuiteWithTheLongestNameIsMirrored() async throws {
        let name = String(repeating: "n", count: 224)
        let rig = try await MirrorRig(["a"], prefix: Self.prefix, suites: [name])
        let (client, machine) = (rig.client, rig.machines[0])
        try machine.suite(name).set("one", forKey: "k")
        let once = try await blocking { try run(program: "suite-sync", machine.arguments + ["--once"], within: .seconds(20)) }
        #expect(once.status == .exited(0), "\(once.errors)")
        #expect(try await etcdValues(client, prefix: Self.prefix).values["\(name)/k"] == #""one""#)
        #expect(FileManager.default.fileExists(atPath: machine.directory.url.appendingPathComponent(Self.stateFileName(name)).path))
    }

    @Test func aStoppedAppHoldingTheLockDelaysAnApplyButNeitherStopsNorLosesIt() async throws {
        let rig = try await MirrorRig(["a"], prefix: Self.prefix, suites: ["s"])
        let (client, machine) = (rig.client, rig.machines[0])
        try machine.suite("s").set("one", forKey: "k")
        let mirror = try await machine.start()

        let holder = try startWorker("hold-lock", at: machine.directory.url, suite: "s")
        defer { _ = holder.kill() }
        holder.expectLine(startingWith: "holding")
        holder.signal(SIGSTOP)
        try await client.put(bytes("\(Self.prefix)/s/remote"), value: bytes(#""from etcd""#))

        // The suite's lock times out (2 s): suite-sync says so, and keeps trying.
        let said = try await blocking {
            mirror.waitForLine(timeout: .seconds(20)) { $0.contains("\"error\"") && $0.contains("retrying") }
        }
        #expect(said != nil, "\(mirror.lines.suffix(5)); \(mirror.standardError)")
        #expect(mirror.wait(timeout: .seconds(3)) == nil, "suite-sync stopped: \(mirror.standardError)")

        // Once the holder is gone, the change is applied.
        _ = holder.kill()
        try await eventually(.seconds(20), "the remote change applied", describe: { "\(mirror.lines.suffix(3))" }) {
            try machine.values("s")["remote"] == #""from etcd""#
        }
        #expect(mirror.wait(timeout: .milliseconds(1)) == nil)
    }

    /// A `suite-sync` restarted after a kill with a change still written ahead, while a
    /// stopped app holds the suite's lock: it says it waits, does not stop, and once the
    /// lock is free settles the change by the journal, so that the removal the user made
    /// while it was down is sent, not undone.
    @Test func aRestartWithAPendingChangeWaitsForALockedSuiteAndKeepsARemovalMadeWhileDown() async throws {
        let rig = try await MirrorRig(["a"], prefix: Self.prefix, suites: ["s"])
        let (client, machine) = (rig.client, rig.machines[0])
        try await Self.killAfterApplyingThenRemoveLocally(machine, client, key: "other")

        let holder = try Self.startStoppedLockHolder(of: "s", machine)
        defer { _ = holder.kill() }
        let mirror = try await machine.start(waitUntilWatching: false)
        try await Self.expectRetrying(mirror) { $0.contains("retrying") }
        #expect(mirror.wait(timeout: .seconds(3)) == nil, "suite-sync stopped: \(mirror.lines.suffix(3))")

        _ = holder.kill()
        try await Self.expectRemovalSent(of: "other", by: mirror, machine, client)
    }

    /// The same with the lock taken between the opening of the suite and the reading of
    /// its journal: by an app stopped inside a commit, which a reader must wait for.
    /// Suite `t`, opened after `s`, is locked first so that the app can stop in time.
    @Test func aRestartWhoseJournalReadMeetsAWriterStoppedInACommitWaitsAndKeepsTheRemoval() async throws {
        let rig = try await MirrorRig(["a"], prefix: Self.prefix, suites: ["s", "t"])
        let (client, machine) = (rig.client, rig.machines[0])
        try await Self.killAfterApplyingThenRemoveLocally(machine, client, key: "other")

        let holderOfT = try Self.startStoppedLockHolder(of: "t", machine)
        defer { _ = holderOfT.kill() }
        let mirror = try await machine.start(waitUntilWatching: false)
        // Said once s is open: suites are opened in order, and t's lock is waited for.
        try await Self.expectRetrying(mirror) { $0.contains(" t: ") && $0.contains("retrying") }

        let writer = try startWorker("pause", at: machine.directory.url, suite: "s",
                                     ["point": "commitStarted", "key": "x", "value": "y"])
        defer { _ = writer.kill() }
        writer.expectLine(startingWith: "paused commitStarted")
        _ = holderOfT.kill()
        let waitsForTheJournal = try await blocking {
            mirror.waitForLine(timeout: .seconds(20)) { $0.contains("\"error\"") && $0.contains("journal of s") && $0.contains("retrying") }
        }
        try #require(waitsForTheJournal != nil, "\(mirror.lines.suffix(5)); \(mirror.standardError)")
        #expect(mirror.wait(timeout: .seconds(3)) == nil, "suite-sync stopped: \(mirror.lines.suffix(3))")

        _ = writer.kill()
        try await Self.expectRemovalSent(of: "other", by: mirror, machine, client)
    }

    /// Leaves `machine` as a `suite-sync` SIGKILLed between its mirrored commit of a
    /// remote value of `key` (in suite `s`) and the save after it leaves it: the value
    /// still pending, the base not yet it. Then the user removes the key, as while no
    /// mirror runs.
    /// A worker that holds `suite`'s lock on `machine`, stopped (`SIGSTOP`) while it holds it.
    static func startStoppedLockHolder(of suite: String, _ machine: Machine) throws -> ChildProcess {
        let holder = try startWorker("hold-lock", at: machine.directory.url, suite: suite)
        holder.expectLine(startingWith: "holding")
        holder.signal(SIGSTOP)
        return holder
    }

    /// Waits (20 s at most) for `mirror` to report an error line that `matches`.
    static func expectRetrying(_ mirror: ChildProcess, _ matches: @escaping @Sendable (String) -> Bool) async throws {
        let said = try await blocking {
            mirror.waitForLine(timeout: .seconds(20)) { $0.contains("\"error\"") && matches($0) }
        }
        try #require(said != nil, "\(mirror.lines.suffix(5)); \(mirror.standardError)")
    }

    static func killAfterApplyingThenRemoveLocally(_ machine: Machine, _ client: EtcdClient, key: String) async throws {
        try await machine.start()
        let sequence = try machine.suite("s").lastCommitSequence
        let pid = try #require(machine.process).pid
        try await client.put(bytes("\(Self.prefix)/s/\(key)"), value: bytes(#""from etcd""#))
        let statePath = machine.directory.url.appendingPathComponent(Self.stateFileName("s")).path
        try await eventually(.seconds(20), "the state agreeing on \(key)", describe: { "\(try SuiteMirrorTests.readState(statePath))" }) {
            let state = try SuiteMirrorTests.readState(statePath)
            return (state["base"] as? [String: Any])?[key] != nil && (state["pending"] as? [String: Any])?.isEmpty == true
        }
        await machine.kill()

        var state = try SuiteMirrorTests.readState(statePath)
        var base = try #require(state["base"] as? [String: Any])
        let entry = try #require(base[key])
        base[key] = nil
        state["base"] = base
        state["pending"] = [key: entry]
        state["pendingAfter"] = sequence
        state["pendingBy"] = pid
        try SuiteMirrorTests.writeState(state, statePath)
        #expect(try machine.values("s")[key] == #""from etcd""#)
        try machine.suite("s").setValue(nil, forKey: key)
    }

    /// Waits until `mirror` has sent the local removal of `key` in suite `s` (absent
    /// here and in etcd, not applied again), still running.
    static func expectRemovalSent(of key: String, by mirror: ChildProcess, _ machine: Machine, _ client: EtcdClient) async throws {
        let watching = try await blocking { mirror.waitForLine(timeout: .seconds(30)) { $0.contains("\"event\":\"watching\"") } }
        try #require(watching != nil, "\(mirror.lines.suffix(5)); \(mirror.standardError)")
        try await eventually(.seconds(20), "the removal in etcd", describe: { "\(mirror.lines.suffix(3))" }) {
            try await etcdValues(client, prefix: Self.prefix).values["s/\(key)"] == nil
        }
        #expect(try machine.values("s")[key] == nil)
        #expect(mirror.lines.contains { $0.contains("\"event\":\"sent\"") && $0.contains("\"\(key)\"") && $0.contains("delete") },
                "\(mirror.lines.suffix(5))")
        #expect(mirror.wait(timeout: .milliseconds(1)) == nil, "\(mirror.standardError)")
    }

    /// Keys whose NFC the standard library and Foundation disagree on (an old Hangul
    /// initial, U+1113, before a vowel, U+1161: the library's NFC leaves the pair as it
    /// is, Foundation's on Linux composes it into U+D7A4, which is no character): the
    /// mirror judges a key by the library's own normal form, so a key the library stores
    /// is carried, not skipped as "not in NFC".
    @Test func keysInTheLibrarysNormalFormAreCarriedWhereFoundationWouldDisagree() async throws {
        let rig = try await MirrorRig(["a", "b"], prefix: Self.prefix, suites: ["s"])
        try await rig.startAll()
        let key = Suite.normalized("\u{1113}\u{1161}")
        #expect(key.unicodeScalars.map(\.value) == [0x1113, 0x1161])
        try rig.machines[0].suite("s").set("kannada", forKey: key)
        try await eventually(.seconds(30), "the key reached machine b") {
            try rig.machines[1].suite("s").string(forKey: key) == "kannada"
        }
        #expect(!rig.machines[1].lines.contains { $0.contains("skipped") })
    }
}
