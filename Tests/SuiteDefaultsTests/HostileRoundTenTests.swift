import ChildProcess
import Foundation
import Glibc
import Testing
import TestSupport
import ToolSupport
@_spi(Tools) @_spi(Testing) @testable import SuiteDefaults

/// The tenth hostile round: today's changes attacked.
/// - export/import with first-access default marks (`{"$default": VALUE}`);
/// - a read-only process's whole-file read keeping its descriptor and length;
/// - the status of a descriptor through statx with a NULL path.
@Suite("Hostile round ten", .serialized)
struct HostileRoundTenTests: EngineStateTesting {
    let directory = TemporaryDirectory()

    func open(_ name: String, options: Suite.Options = Suite.Options()) throws -> Suite {
        try Suite(named: name, directory: directory.url, options: options)
    }

    // MARK: Export and import with default marks

    /// Values an attacker likes: signed zeros, subnormals, the largest doubles, dates
    /// past year 9999 and before year 1, NUL and "$" in strings and dictionary keys,
    /// encoded JSON with spaces around it, values that look like tags.
    static let awkwardValues: [SuiteValue] = [
        .double(-0.0), .double(0.0), .double(Double.leastNonzeroMagnitude), .double(-Double.greatestFiniteMagnitude), .double(0.1),
        .integer(Int.min), .integer(Int.max), .integer(0),
        .date(Date(timeIntervalSinceReferenceDate: -0.0)), .date(Date(timeIntervalSinceReferenceDate: 1e15)),
        .date(Date(timeIntervalSinceReferenceDate: -1e14)), .date(Date(timeIntervalSinceReferenceDate: 0.1)),
        .date(Date(timeIntervalSinceReferenceDate: 252_423_993_600)),  // 10000-01-01
        .date(Date(timeIntervalSinceReferenceDate: 252_423_993_599.999)),
        .date(Date(timeIntervalSinceReferenceDate: Double.greatestFiniteMagnitude)),
        .string(""), .string("a\u{0}b"), .string("$default"), .string("e\u{301}"), .string("\u{FEFF}"),
        .data(Data()), .data(Data([0, 0xFF])),
        .json(Data(" 1 ".utf8)), .json(Data("{\"$default\":1}".utf8)), .json(Data("\"\\u0000\"".utf8)),
        .json(Data("[{\"$default\": {\"$json\": 2}}]".utf8)),
        ["$default": 1], ["$default": ["$default": .double(-0.0)]], ["$json": "x"], ["$dictionary": ["$default": 1]],
        ["$default": 1, "other": 2], [:], [], [["$default": .json(Data("1".utf8))]],
        ["\u{0}": "nul key", "$": .data(Data([1]))],
    ]

    static let awkwardKeys = ["$default", "$dictionary", "$json", "$jsontext", "$data", "$date", "$", "a", "é",
                              "default", " $default", "$default ", "$DEFAULT", "\u{1F600}", "key with spaces"]

    /// Random suites of awkward keys, values and default marks: export, import into
    /// another suite (which held other things), export again. The texts must be equal
    /// byte for byte, and so must every stored value and mark.
    @Test func randomSuitesOfAwkwardKeysAndValuesRoundTripExactly() throws {
        var generator = SplitMix64(seed: 0x5EED_0010)
        for round in 0..<150 {
            let source = try open("fuzz-source-\(round)")
            let count = Int(generator.next() % 4)
            var keys = Self.awkwardKeys
            keys.shuffle(using: &generator)
            try source.update { transaction in
                for key in keys.prefix(count) {
                    let value = Self.awkwardValues[Int(generator.next() % UInt64(Self.awkwardValues.count))]
                    try transaction.setValue(value, forKey: key, asDefault: generator.next() & 1 == 1)
                }
            }
            let copy = try open("fuzz-copy-\(round)")
            try copy.set("old", forKey: keys.last!)
            try copy.setIfAbsent("old default", forKey: "zzz")
            let text = source.exportJSON()
            do {
                try copy.importJSON(text)
            } catch {
                Issue.record("round \(round): the export was refused: \(error)\n\(text)")
                continue
            }
            #expect(copy.exportJSON() == text, "round \(round)")
            #expect(try exactEntries(of: copy) == exactEntries(of: source), "round \(round): \(text)")
        }
    }

    /// A chosen value and a default of the same bytes are different entries: an
    /// import that only flips the mark must flip it (in both directions), and an
    /// import of the very same text must commit nothing a mirror would send.
    @Test func anImportThatOnlyChangesTheMarkChangesIt() throws {
        let suite = try open("flip")
        try suite.setIfAbsent("metric", forKey: "units")
        try suite.set(["$default": 1] as SuiteValue, forKey: "looks")
        try suite.importJSON(#"{"looks": {"$default": {"$dictionary": {"$default": 1}}}, "units": "metric"}"#)
        #expect(suite.storedEntries() == ["units": Suite.StoredEntry(value: "metric", isDefault: false),
                                          "looks": Suite.StoredEntry(value: ["$default": 1], isDefault: true)])
        try suite.importJSON(#"{"looks": {"$dictionary": {"$default": 1}}, "units": {"$default": "metric"}}"#)
        #expect(suite.storedEntries() == ["units": Suite.StoredEntry(value: "metric", isDefault: true),
                                          "looks": Suite.StoredEntry(value: ["$default": 1], isDefault: false)])
    }

    /// Hostile texts around the mark that the existing tests leave out; each must be
    /// refused with a typed error, naming the suite, having committed nothing.
    @Test(arguments: [
        #"{"$json": {"$default": null}, "b": 1}"#,                  // the "$json" member, kept as text, marked badly
        #"{"$json": {"$default": {"$default": 1}}, "b": 1}"#,
        #"{"$dictionary": {"a": {"$default": 1}, "a": 2}}"#,        // twice inside the $dictionary form
        #"{"$dictionary": {"$default": {"$default": null}}}"#,
        "{\"$dictionary\": {\"e\u{301}\": 1, \"\u{E9}\": {\"$default\": 2}}}",
        #"{"a": {"$default": 1, "$default": 2}}"#,                  // the mark's key twice
        #"{"a": {"$default": {"$jsontext": " [1 "}}}"#,
        #"{"a": {"$default": {"$date": "10000-01-01T00:00:00Z"}}}"#,
        #"{"a": {"$default": 1}, "b": {"$default": 18446744073709551616}}"#,
        #"{"a": {"$default": "\ud800"}}"#,                          // a lone surrogate
        #"{"\ud800": {"$default": 1}}"#,
        "{\"a\": {\"$default\": \(String(repeating: "[", count: 600))1\(String(repeating: "]", count: 600))}}",
        "{\"a\": {\"$default\": \(String(repeating: "[", count: 70))1\(String(repeating: "]", count: 70))}}",
        "{\"a\": {\"$default\": 1}, \"\(String(repeating: "k", count: 70_000))\": 1}",
    ])
    func moreMisplacedOrMalformedMarksChangeNothing(_ text: String) throws {
        try expectImportRefused(text, into: open("hostile10"), codes: [.invalidValue, .invalidKey, .valueTooLarge])
    }

    // MARK: A process that may only read keeps the data file it read whole

    /// The descriptors of this process open on files in this test's directory (not all
    /// of them: other tests of the process open and close theirs meanwhile).
    func openDescriptorCount() -> Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.filter { entry in
            let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + entry)) ?? ""
            return target.hasPrefix(directory.path + "/")
        }.count
    }

    /// Damage in the middle of the committed file, which a writer that read the file
    /// before does not see: every catch-up of a reader that may only read is a read of
    /// the whole file (the read on from its valid end meets the damage). Over 300
    /// commits it must hear each commit's change exactly once, never every key again,
    /// and hold no more descriptors at the end than after its first read.
    @Test func aReadOnlyReaderOfADamagedFileHearsEachCommitOnceAndLeaksNoDescriptor() throws {
        let name = "ro-damaged"
        let writer = try openState(name)
        for index in 0..<10 { try commit("k\(index)", "v\(index)", in: writer) }
        // Flip a byte inside the fifth record's payload.
        let path = directory.file(name + ".suite").path
        var bytes = try #require(directory.bytes(of: name + ".suite"))
        let scan = try bytes.withUnsafeBytes { try DataFileScan.scan($0, committedLength: bytes.count, keepingRecords: true) }
        let target = scan.records[4].range
        bytes[target.upperBound - 2] ^= 0x40
        let descriptor = Glibc.open(path, O_WRONLY)
        #expect(descriptor >= 0 && bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) } == bytes.count)
        if descriptor >= 0 { close(descriptor) }

        let reader = try openState(name)
        reader.writable = false
        #expect(try catchUpReadOnly(reader), "the first read was not of the whole file")
        reader.collectsChanges = true
        _ = reader.takeDiagnostics()
        let descriptors = openDescriptorCount()
        #expect(descriptors >= 2, "the count sees none of the suite's open files")
        var heard: [String] = []
        var wholeReads = 0
        for index in 0..<300 {
            try commit("n\(index % 7)", "w\(index)", in: writer)
            if try catchUpReadOnly(reader) { wholeReads += 1 }
            let changes = takeChanges(reader)
            if changes.count != 1 { heard.append("commit \(index): \(changes.prefix(4))") }
            _ = reader.takeDiagnostics()
        }
        #expect(wholeReads == 300, "only \(wholeReads) catch-ups read the whole file: the attack missed its path")
        #expect(heard.isEmpty, "\(heard.count) catch-ups heard other than their commit: \(heard.prefix(4))")
        #expect(openDescriptorCount() == descriptors, "descriptors: \(descriptors) before, \(openDescriptorCount()) after")
        #expect(reader.contents.values["n0"] == .string("w294"))
    }

    /// A reader that may only read read the whole file (the header untrusted), and then
    /// the file is replaced under it: by a writer's compaction, by a copy of itself
    /// (the same file ID in its header, another inode), cut short and put back by a
    /// writer's repair, deleted and made anew. Each time it hears exactly what changed,
    /// never a key that stayed as it was, and never goes back.
    @Test func aReadOnlyReaderFollowsItsFileBeingReplacedWithoutReplays() throws {
        let name = "ro-replaced"
        let writer = try openState(name)
        for index in 0..<12 { try commit("k\(index % 4)", "v\(index)", in: writer) }
        let reader = try openState(name)
        reader.writable = false
        // Another boot's header: the reader's first read is of the whole file.
        let lockPath = directory.file(name + ".suite.lock").path
        let lock = Glibc.open(lockPath, O_RDWR)
        var zeros = [UInt8](repeating: 0, count: 16)
        #expect(lock >= 0 && pwrite(lock, &zeros, 16, 48) == 16)
        if lock >= 0 { close(lock) }
        #expect(try catchUpReadOnly(reader), "the first read was not of the whole file")
        reader.collectsChanges = true
        let descriptors = openDescriptorCount()
        #expect(descriptors >= 2, "the count sees none of the suite's open files")

        try commit("a", "1", in: writer)  // rebuilds the header first
        try catchUpReadOnly(reader)
        #expect(takeChanges(reader) == [#"a: - -> "1""#])

        #expect(try writer.tryLockFile(.exclusive))
        try writer.catchUp(exclusive: true)
        try writer.compact(durable: false, historyLimit: 0)
        writer.unlockFile()
        try commit("b", "2", in: writer)
        try catchUpReadOnly(reader)
        #expect(takeChanges(reader) == [#"b: - -> "2""#], "after a compaction")

        // A copy of itself renamed over it: same file ID, another inode.
        let path = directory.file(name + ".suite").path
        let copy = directory.file(name + ".copy").path
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        #expect(rename(copy, path) == 0)
        try commit("c", "3", in: writer)
        try catchUpReadOnly(reader)
        #expect(takeChanges(reader) == [#"c: - -> "3""#], "after the file was copied over itself")

        // Garbage appended without the lock, then a writer repairs.
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 333))
        try handle.close()
        try catchUpReadOnly(reader)
        #expect(takeChanges(reader) == [], "garbage appended is no change")
        try commit("d", "4", in: writer)
        try catchUpReadOnly(reader)
        #expect(takeChanges(reader) == [#"d: - -> "4""#], "after a repair of garbage appended")
        #expect(reader.contents.values.count == 8)
        _ = reader.takeDiagnostics()
        _ = writer.takeDiagnostics()
        #expect(openDescriptorCount() == descriptors, "descriptors: \(descriptors) before, \(openDescriptorCount()) after")
    }

    // MARK: suite-sync waiting for a suite's lock

    /// suite-sync started while a stopped app holds the suite's lock (etcd need not be
    /// there: the suites are opened first): it says once that it waits, keeps waiting
    /// through several retries, and a SIGTERM ends it with status 0 (within 5 s).
    @Test func suiteSyncWaitingForALockSaysSoOnceAndStopsAtOnceOnSIGTERM() throws {
        let place = directory.file("sync-lock")
        let suite = try Suite(named: "s", directory: place)
        try suite.set("1", forKey: "k")
        let holder = try startWorker("hold-lock", at: place, suite: "s")
        defer { _ = holder.kill() }
        holder.expectLine(startingWith: "holding")
        holder.signal(SIGSTOP)
        let mirror = try ChildProcess(executable: Products.path("suite-sync"),
                                      arguments: ["--endpoints", "http://127.0.0.1:9", "--prefix", "/h10", "--dir", place.path, "s"])
        defer { _ = mirror.kill() }
        #expect(mirror.waitForError(containing: "retrying", timeout: .seconds(20)), "\(mirror.standardError)")
        // Three more attempts (each waits 2 s for the lock, then up to 2 s).
        #expect(mirror.wait(timeout: .seconds(9)) == nil, "suite-sync stopped: \(mirror.standardError)")
        mirror.signal(SIGTERM)
        // (A deadline, not a timing: the machine may be loaded.)
        let status = mirror.wait(timeout: .seconds(5))
        #expect(status == .exited(0), "\(String(describing: status))")
        let said = mirror.standardError.components(separatedBy: "\n").filter { $0.contains("cannot open s") }
        #expect(said.count == 1, "\(mirror.standardError)")
        #expect(!mirror.standardError.contains("stopping"))
    }
}

