import ChildProcess
import Foundation
import Glibc
import Testing
import TestSupport
@_spi(Tools) import SuiteDefaults

/// What `suite-defaults` does as macOS `defaults` does: the type flags in their
/// spellings, hex data, the collection flags, rename, read-type, find, domains,
/// delete SUITE and each command's help, run as real processes.
@Suite("suite-defaults speaks defaults")
struct DefaultsVerbsToolTests {
    let directory = TemporaryDirectory()

    @discardableResult
    func run(_ arguments: String..., input: String? = nil) throws -> ProgramRun {
        try TestSupport.run(program: "suite-defaults", ["--dir", directory.path] + arguments, input: input)
    }

    func suite(_ name: String) throws -> Suite {
        try Suite(named: name, directory: directory.url)
    }

    // MARK: write

    @Test func everyTypeFlagInItsMacOSSpelling() throws {
        let writes: [(String, [String], SuiteValue)] = [
            ("s", ["-string", "text"], "text"), ("i", ["-int", "-7"], -7), ("i2", ["-integer", "8"], 8),
            ("f", ["-float", "0.5"], 0.5), ("d", ["-double", "1.5"], 1.5), ("b", ["-bool", "yes"], true),
            ("b2", ["-boolean", "false"], false), ("t", ["-date", "2026-11-22T10:15:00Z"], .date(Date(timeIntervalSince1970: 1_795_342_500))),
            ("x", ["-data", "deadBEEF"], .data(Data([0xDE, 0xAD, 0xBE, 0xEF]))), ("a", ["-array", "one", "-2", "three four"], ["one", "-2", "three four"]),
            ("e", ["-array"], []), ("m", ["-dict", "k1", "v1", "k2", "-v2"], ["k1": "v1", "k2": "-v2"]),
            ("j", ["--json", #"{"n": [1, {"$data": "AQ=="}]}"#], ["n": [1, .data(Data([1]))]]),
            ("plain", ["true"], "true"),
        ]
        for (key, words, _) in writes {
            let outcome = try TestSupport.run(program: "suite-defaults", ["--dir", directory.path, "write", "flags", key] + words)
            #expect(outcome.status == .exited(0), "\(words): \(outcome.errors)")
        }
        let stored = try suite("flags").storedValues()
        for (key, words, value) in writes {
            #expect(stored[key] == value, "\(words)")
        }
        // The double-dash spellings are the same flags.
        #expect(try run("write", "flags", "i", "--integer", "9").status == .exited(0))
        #expect(try run("write", "flags", "a", "--array-add", "five").status == .exited(0))
        #expect(try suite("flags").storedValue(forKey: "i") == 9)
        #expect(try suite("flags").storedValue(forKey: "a") == ["one", "-2", "three four", "five"])
    }

    @Test func dataIsHexAsInMacOSAndBase64OnlyWhenAskedFor() throws {
        #expect(try run("write", "s", "hex", "-data", "deadbeef").status == .exited(0))
        #expect(try run("write", "s", "hex2", "--data", "00FF10").status == .exited(0))
        #expect(try run("write", "s", "empty", "-data", "").status == .exited(0))
        #expect(try run("write", "s", "b64", "--base64", "AAEC/w==").status == .exited(0))
        #expect(try run("write", "s", "b64b", "-data-base64", "AAEC/w==").status == .exited(0))
        // The same eight characters as base64 are six other bytes: only --base64 reads them so.
        #expect(try run("write", "s", "asBase64", "--base64", "deadbeef").status == .exited(0))
        let suite = try suite("s")
        #expect(suite.data(forKey: "hex") == Data([0xDE, 0xAD, 0xBE, 0xEF]), "-data deadbeef is the 4 bytes, not base64")
        #expect(suite.data(forKey: "hex2") == Data([0x00, 0xFF, 0x10]))
        #expect(suite.data(forKey: "empty") == Data())
        #expect(suite.data(forKey: "b64") == Data([0, 1, 2, 255]))
        #expect(suite.data(forKey: "b64b") == Data([0, 1, 2, 255]))
        #expect(suite.data(forKey: "asBase64") == Data(base64Encoded: "deadbeef"))
        #expect(try run("read", "s", "hex").lines == ["deadbeef"])

        let before = suite.storedValues()
        for (text, says) in [("abc", "odd number"), ("AAEC/w==", "--base64"), ("zz", "not hexadecimal"), ("0x00", "not hexadecimal"),
                             ("de ad", "not hexadecimal"), ("deadbee", "odd number")] {
            for flag in ["-data", "--data"] {
                let outcome = try run("write", "s", "hex", flag, text)
                #expect(outcome.status == .exited(2), "\(flag) \(text): \(outcome.errors)")
                #expect(outcome.errors.contains(says) && outcome.errors.contains("Nothing was written"), "\(flag) \(text): \(outcome.errors)")
            }
        }
        #expect(try run("write", "fresh", "k", "-data", "abc").status == .exited(2))
        #expect(!directory.names().contains { $0.hasPrefix("fresh") }, "a refused value creates no suite")
        try suite.reload()
        #expect(suite.storedValues() == before, "nothing was written")
    }

    @Test func arrayAddAndDictAddAddToWhatIsStored() throws {
        #expect(try run("write", "s", "list", "-array-add", "a").status == .exited(0), "an absent key starts an array")
        #expect(try run("write", "s", "list", "-array-add", "b", "c").status == .exited(0))
        #expect(try run("write", "s", "list", "-array-add").status == .exited(0))
        #expect(try run("write", "s", "map", "-dict", "a", "1", "b", "2").status == .exited(0))
        #expect(try run("write", "s", "map", "-dict-add", "b", "two", "c", "3").status == .exited(0))
        #expect(try run("write", "s", "new", "-dict-add", "k", "v").status == .exited(0))
        #expect(try run("write", "s", "text", "plain").status == .exited(0))
        let suite = try suite("s")
        #expect(suite.storedValue(forKey: "list") == ["a", "b", "c"])
        #expect(suite.storedValue(forKey: "map") == ["a": "1", "b": "two", "c": "3"])
        #expect(suite.storedValue(forKey: "new") == ["k": "v"])

        // Onto a value of another type, or with a key without its value: refused, nothing changed.
        let before = suite.storedValues()
        for (arguments, says) in [(["write", "s", "text", "-array-add", "x"], "not an array"),
                                  (["write", "s", "list", "-dict-add", "k", "v"], "not a dictionary"),
                                  (["write", "s", "map", "-dict", "a", "1", "b"], "KEY VALUE pairs"),
                                  (["write", "s", "map", "-dict-add", "lonely"], "KEY VALUE pairs"),
                                  (["write", "s", "k", "-int", "1", "2"], "takes one value"),
                                  (["write", "s", "k", "one", "two"], "-array")] {
            let outcome = try TestSupport.run(program: "suite-defaults", ["--dir", directory.path] + arguments)
            #expect(outcome.status == .exited(2), "\(arguments): \(outcome.errors)")
            #expect(outcome.errors.contains(says), "\(arguments): \(outcome.errors)")
        }
        try suite.reload()
        #expect(suite.storedValues() == before)
    }

    /// Appends from many processes at once all land: each is one transaction.
    @Test func concurrentArrayAddsAllLand() throws {
        try run("write", "s", "list", "-array")
        let writers = try (0..<8).map { index in
            try ChildProcess(executable: Products.path("suite-defaults"),
                             arguments: ["--dir", directory.path, "--timeout", "30", "write", "s", "list", "-array-add", "w\(index)a", "w\(index)b"])
        }
        for writer in writers { writer.expectSuccess() }
        let list = try #require(try suite("s").storedValue(forKey: "list"))
        guard case .array(let elements) = list else { Issue.record("\(list)"); return }
        #expect(elements.count == 16)
        #expect(Set(elements) == Set((0..<8).flatMap { [SuiteValue.string("w\($0)a"), .string("w\($0)b")] }))
        // Each process's two values stay together, in order.
        for index in 0..<8 {
            let first = try #require(elements.firstIndex(of: .string("w\(index)a")))
            #expect(elements[first + 1] == .string("w\(index)b"))
        }
    }

    // MARK: read, read-type

    @Test func readPrintsOneTypedLineAKeyAndJSONOnRequest() throws {
        let suite = try suite("s")
        try suite.set("Ann \"A\"\nB", forKey: "name")
        try suite.set(42, forKey: "count")
        try suite.set(0.25, forKey: "ratio")
        try suite.set(true, forKey: "on")
        try suite.set(Date(timeIntervalSince1970: 1_795_342_500), forKey: "when")
        try suite.set(Data([0xDE, 0xAD]), forKey: "blob")
        try suite.set(["a", 1, .data(Data([1]))] as SuiteValue, forKey: "list")
        try suite.set(["k": "v"] as SuiteValue, forKey: "map")
        try suite.set("x", forKey: "with space")
        try suite.set("y", forKey: "a=b")
        try suite.set(encodable: ["n": 1], forKey: "encoded")
        #expect(try run("read", "s").lines == [
            #""a=b" = "y" (string)"#,
            "blob = <dead> (data)",
            "count = 42 (integer)",
            #"encoded = {"n":1} (json)"#,
            #"list = ["a",1,{"$data":"AQ=="}] (array)"#,
            #"map = {"k":"v"} (dictionary)"#,
            #"name = "Ann \"A\"\nB" (string)"#,
            "on = true (boolean)",
            "ratio = 0.25 (float)",
            "when = 2026-11-22T10:15:00Z (date)",
            #""with space" = "x" (string)"#,
        ])
        #expect(try run("read", "s", "count").lines == ["42"])
        #expect(try run("read", "s", "name").lines == ["Ann \"A\"", "B"])
        #expect(try run("read", "s", "blob", "--json").lines == ["{", #"  "$data": "3q0=""#, "}"])
        let json = try run("read", "s", "--json")
        #expect(json.status == .exited(0))
        #expect(json.lines.joined(separator: "\n") == suite.exportJSON(), "read --json is what export writes")
        #expect(try run("read", "--json", "s").lines == json.lines)

        try run("write", "empty", "k", "v")
        try run("delete", "empty", "k")
        let empty = try run("read", "empty")
        #expect(empty.status == .exited(0) && empty.lines.isEmpty)
    }

    @Test func readTypeNamesTypesAsMacOSDoes() throws {
        let suite = try suite("s")
        let values: [(String, SuiteValue, String)] = [
            ("s", "t", "string"), ("i", 1, "integer"), ("f", 1.5, "float"), ("b", true, "boolean"),
            ("t", .date(Date(timeIntervalSince1970: 0)), "date"), ("d", .data(Data([1])), "data"),
            ("a", [1], "array"), ("m", ["k": 1], "dictionary"),
        ]
        for (key, value, _) in values { try suite.setValue(value, forKey: key) }
        try suite.set(encodable: [1, 2], forKey: "j")
        for (key, _, type) in values + [("j", "", "json")] {
            let outcome = try run("read-type", "s", key)
            #expect(outcome.status == .exited(0) && outcome.lines == ["Type is \(type)"], "\(key): \(outcome.lines) \(outcome.errors)")
        }
        #expect(try run("read-type", "s", "absent").status == .exited(1))
        #expect(try run("read-type", "nosuite", "k").status == .exited(1))
        #expect(try run("read-type", "s").status == .exited(2))
    }

    // MARK: rename

    @Test func renameMovesTheValueAndReplacesNew() throws {
        try run("write", "s", "old", "-int", "5")
        try run("write", "s", "new", "replaced")
        try run("write", "s", "other", "kept")
        #expect(try run("rename", "s", "old", "new").status == .exited(0))
        let suite = try suite("s")
        #expect(suite.storedValues() == ["new": 5, "other": "kept"])

        let missing = try run("rename", "s", "old", "x")
        #expect(missing.status == .exited(1))
        #expect(missing.errors.contains("old not found"), "\(missing.errors)")
        #expect(try run("rename", "nosuite", "a", "b").status == .exited(1))
        #expect(!directory.names().contains { $0.hasPrefix("nosuite") })
        #expect(try run("rename", "s", "new", "new").status == .exited(0))
        #expect(try run("rename", "s", "new").status == .exited(2))
        #expect(try run("rename", "s", "new", "").status == .exited(2), "an empty key is refused")
        try suite.reload()
        #expect(suite.storedValues() == ["new": 5, "other": "kept"])
    }

    // MARK: find, domains

    @Test func findPrintsMatchesPerSuiteAsMacOSDoes() throws {
        try suite("alpha").set("Hello World", forKey: "greeting")
        try suite("alpha").set(42, forKey: "answer")
        try suite("beta").set(["x", "WORLDWIDE"] as SuiteValue, forKey: "list")
        try suite("beta").set("no", forKey: "other")
        try suite("beta").set(Data([0xAB, 0xCD]), forKey: "blob")
        try suite("worldly").set("v", forKey: "k")
        try suite("worldly").set("w", forKey: "j")
        let found = try run("find", "world")
        #expect(found.status == .exited(0), "\(found.errors)")
        #expect(found.lines == [
            "Found 1 keys in domain 'alpha': {", #"    greeting = "Hello World" (string)"#, "}",
            "Found 1 keys in domain 'beta': {", #"    list = ["x","WORLDWIDE"] (array)"#, "}",
            "Found 2 keys in domain 'worldly': {", #"    j = "w" (string)"#, #"    k = "v" (string)"#, "}",
        ])
        #expect(try run("find", "42").lines == ["Found 1 keys in domain 'alpha': {", "    answer = 42 (integer)", "}"])
        #expect(try run("find", "BCD").lines == ["Found 1 keys in domain 'beta': {", "    blob = <abcd> (data)", "}"], "data as hex")
        #expect(try run("find", "ANSW").lines.first == "Found 1 keys in domain 'alpha': {", "keys too")

        let none = try run("find", "zebra")
        #expect(none.status == .exited(1) && none.lines.isEmpty)
        #expect(try run("find", "").status == .exited(2))
        #expect(try run("find").status == .exited(2))

        // A suite that cannot be read is named, and the others are still searched.
        try directory.write(Array("not a suite".utf8), to: "broken.suite")
        let partly = try run("find", "hello")
        #expect(partly.status == .exited(3))
        #expect(partly.errors.contains("broken"), "\(partly.errors)")
        #expect(partly.lines == ["Found 1 keys in domain 'alpha': {", #"    greeting = "Hello World" (string)"#, "}"])
    }

    @Test func domainsIsList() throws {
        #expect(try run("domains").lines.isEmpty)
        try run("write", "b", "k", "v")
        try run("write", "a", "k", "v")
        #expect(try run("domains").lines == ["a", "b"])
        #expect(try run("domains").lines == (try run("list")).lines)
        #expect(try run("domains", "x").status == .exited(2))
    }

    // MARK: delete SUITE

    @Test func deleteSuiteRemovesItsFilesAndNoOthers() throws {
        try run("write", "s", "k", "v")
        try run("write", "s.suite.tmp.x", "k", "another suite whose files start like s's temporary files")
        try run("write", "s.suite.h.y", "k", "and one like s's history")
        try directory.write([1], to: "s.suite.tmp.123.abc")
        try directory.write([2], to: "s.suite.h.0000000000000001")
        try directory.write([3], to: "s.suite.damaged-20260101T000000Z-1-1")
        #expect(try run("list").lines == ["s", "s.suite.h.y", "s.suite.tmp.x"])

        #expect(try run("delete", "s").status == .exited(0))
        #expect(try run("list").lines == ["s.suite.h.y", "s.suite.tmp.x"])
        #expect(directory.names() == ["s.suite.damaged-20260101T000000Z-1-1", "s.suite.h.y.suite", "s.suite.h.y.suite.lock",
                                      "s.suite.tmp.x.suite", "s.suite.tmp.x.suite.lock"],
                "the damaged copy stays; the other suites are untouched")
        #expect(try run("read", "s.suite.tmp.x", "k").status == .exited(0))
        #expect(try run("read", "s").status == .exited(1))
        #expect(try run("delete", "s").status == .exited(1), "gone")
        #expect(try run("delete", "never").status == .exited(1))

        // What it writes after is a new suite.
        try run("write", "s", "fresh", "-int", "1")
        #expect(try suite("s").storedValues() == ["fresh": 1])
    }

    @Test func deleteRefusesAFileThatIsNotASuite() throws {
        try directory.write(Array("{\"mine\": true}".utf8), to: "notes.suite")
        let outcome = try run("delete", "notes")
        #expect(outcome.status == .exited(3))
        #expect(outcome.errors.contains("not a suite file"), "\(outcome.errors)")
        #expect(directory.bytes(of: "notes.suite") == Array("{\"mine\": true}".utf8), "left alone")
    }

    @Test func deleteWaitsForALockHolderAndGivesUpNamingIt() throws {
        try run("write", "stuck", "k", "v")
        let names = directory.names()
        let holder = try startWorker("hold-lock", in: directory, suite: "stuck")
        defer { _ = holder.kill() }
        holder.expectLine(startingWith: "holding")

        let refused = try TestSupport.run(program: "suite-defaults", ["--dir", directory.path, "--timeout", "0.3", "delete", "stuck"],
                                          within: .seconds(20))
        #expect(refused.status == .exited(3))
        #expect(refused.errors.contains("process \(holder.pid)") && refused.errors.contains("Nothing was removed"), "\(refused.errors)")
        #expect(directory.names() == names, "nothing was removed")

        _ = holder.kill()
        #expect(try run("read", "stuck", "k").lines == ["v"], "what was stored is still there")
        #expect(try run("delete", "stuck").status == .exited(0))
        #expect(directory.names().isEmpty)
    }

    /// Every removal reaches an observer by itself, with no later commit to carry it.
    @Test func everyDeleteReachesAnObserverAtOnce() throws {
        let open = try suite("again")
        let recorder = ChangeRecorder()
        let observation = try open.observe(onChange: recorder.handler)
        defer { observation.cancel() }
        for round in 1...5 {
            try open.set(round, forKey: "k\(round)")
            #expect(recorder.wait(for: "k\(round)", toBecome: .integer(round)))
            #expect(try run("delete", "again").status == .exited(0))
            let heard = recorder.wait(timeout: .seconds(20)) { changes in
                changes.contains { $0.key == "k\(round)" && $0.newValue == nil }
            }
            #expect(heard, "round \(round): the removal was heard: \(recorder.changes.suffix(3))")
        }
    }

    /// A process that has the suite open (this one) is not waited for: it sees the
    /// suite empty, hears the keys go, and a write of its own makes the suite again.
    @Test func aProcessThatHasTheSuiteOpenSeesItEmptyAfterDelete() throws {
        let open = try suite("open")
        try open.set("v", forKey: "k")
        try open.set(2, forKey: "n")
        #expect(open.storedValues() == ["k": "v", "n": 2])
        let recorder = ChangeRecorder()
        let observation = try open.observe(onError: recorder.errorHandler, onChange: recorder.handler)
        defer { observation.cancel() }
        #expect(try run("delete", "open").status == .exited(0))
        #expect(try run("list").lines.isEmpty)
        let heard = recorder.wait { changes in Set(changes.filter { $0.newValue == nil }.map(\.key)) == ["k", "n"] }
        #expect(heard, "the observer hears the keys go: \(recorder.changes)")
        #expect(recorder.errors.isEmpty, "\(recorder.errors)")

        #expect(open.storedValues() == [:], "the removal made its cache stale")
        #expect(try Suite.names(in: directory.url).isEmpty, "reading makes no suite (at most a lock file)")
        try open.set("again", forKey: "k")
        #expect(try run("list").lines == ["open"])
        #expect(try run("read", "open").lines == [#"k = "again" (string)"#])
    }

    // MARK: Help for each command

    @Test func eachCommandHasItsOwnHelp() throws {
        let prefix = "usage: suite-defaults [--dir DIR] [--timeout SECONDS] "
        for (verb, form) in [("read", "read SUITE [KEY] [--json]"), ("read-type", "read-type SUITE KEY"),
                             ("write", "write SUITE KEY [TYPE] VALUE"), ("rename", "rename SUITE OLD NEW"),
                             ("delete", "delete SUITE [KEY]"), ("find", "find WORD"), ("list", "list"), ("domains", "list"),
                             ("export", "export SUITE"), ("import", "import SUITE FILE"), ("help", "help [COMMAND]")] {
            let asked = try run("help", verb)
            #expect(asked.status == .exited(0) && asked.lines.first == prefix + form, "help \(verb): \(asked.lines.prefix(2))")
            for flag in ["--help", "-h"] {
                let own = try run(verb, flag)
                #expect(own.status == .exited(0), "\(verb) \(flag): \(own.errors)")
                #expect(own.lines == asked.lines, "\(verb) \(flag)")
            }
        }
        #expect(try run("help", "write").lines.contains { $0.contains("-data-base64") })
        #expect(try run("help", "delete").lines.contains { $0.contains("NAME.suite.lock") })
        #expect(try run("help", "bogus").status == .exited(2))
        #expect(try run("help", "read", "write").status == .exited(2))
        // After --, the word after the command is an argument: find looks for it.
        #expect(try run("--", "find", "--help").status == .exited(1))
        #expect(try run("find", "--", "-h").status == .exited(1))
        // A usage error of a command shows that command's help.
        let wrong = try run("rename", "s")
        #expect(wrong.status == .exited(2))
        #expect(wrong.errors.contains(prefix + "rename SUITE OLD NEW"), "\(wrong.errors)")
        #expect(directory.names().isEmpty)
    }
}

/// The library calls behind the verbs, directly.
@Suite("Suite removal and key edits")
struct SuiteRemovalAndEditTests {
    let directory = TemporaryDirectory()

    @Test func removeFilesSaysWhatItRemoved() throws {
        #expect(try Suite.removeFiles(named: "none", directory: directory.url).isEmpty)
        #expect(try Suite.removeFiles(named: "none", directory: directory.file("missing")).isEmpty)
        #expect(throws: SuiteError.self) { try Suite.removeFiles(named: "a/b", directory: directory.url) }

        let suite = try Suite(named: "s", directory: directory.url)
        try suite.set(1, forKey: "k")
        try directory.write([1], to: "s.suite.h.00000000000000aa")
        let removed = try Suite.removeFiles(named: "s", directory: directory.url)
        #expect(removed.map(\.lastPathComponent) == ["s.suite", "s.suite.h.00000000000000aa", "s.suite.lock"])
        #expect(removed.allSatisfy { $0.deletingLastPathComponent().standardizedFileURL.path == directory.url.standardizedFileURL.path })
        #expect(!Suite.exists(named: "s", directory: directory.url))
        #expect(suite.storedValues() == [:])
    }

    @Test func removeFilesRefusesALinkAndWaitsForTheLock() throws {
        try directory.write([], to: "target")
        #expect(symlink("target", directory.file("link.suite").path) == 0)
        let linkError = #expect(throws: SuiteError.self) { try Suite.removeFiles(named: "link", directory: directory.url) }
        #expect(linkError?.code == .symbolicLink)
        #expect(directory.names().contains("link.suite"))

        let suite = try Suite(named: "held", directory: directory.url)
        try suite.set("v", forKey: "k")
        let holder = try startWorker("hold-lock", in: directory, suite: "held")
        defer { _ = holder.kill() }
        holder.expectLine(startingWith: "holding")
        let lockError = #expect(throws: SuiteError.self) {
            try Suite.removeFiles(named: "held", directory: directory.url, options: .init(lockTimeout: .milliseconds(200)))
        }
        #expect(lockError?.code == .lockTimeout)
        #expect(lockError?.lockHolder == holder.pid)
        #expect(Suite.exists(named: "held", directory: directory.url))
        _ = holder.kill()
        #expect(try Suite.removeFiles(named: "held", directory: directory.url).count == 2)
    }

    @Test func renameAppendAndMergeAreTransactions() throws {
        let suite = try Suite(named: "s", directory: directory.url)
        try suite.set("v", forKey: "a")
        #expect(try suite.renameKey("a", to: "b"))
        #expect(try !suite.renameKey("a", to: "c"))
        #expect(suite.storedValues() == ["b": "v"])
        #expect(throws: SuiteError.self) { try suite.renameKey("b", to: "") }
        #expect(suite.storedValues() == ["b": "v"])

        #expect(try suite.append(contentsOf: [1, 2], toArrayForKey: "list") == [1, 2])
        #expect(try suite.append(contentsOf: ["x"], toArrayForKey: "list") == [1, 2, "x"])
        let mismatch = #expect(throws: SuiteError.self) { try suite.append(contentsOf: [1], toArrayForKey: "b") }
        #expect(mismatch?.code == .typeMismatch)
        #expect(try suite.merge(["k": 1], intoDictionaryForKey: "map") == ["k": 1])
        #expect(try suite.merge(["k": 2, "l": 3], intoDictionaryForKey: "map") == ["k": 2, "l": 3])
        #expect((#expect(throws: SuiteError.self) { try suite.merge([:], intoDictionaryForKey: "list") })?.code == .typeMismatch)
        #expect(suite.storedValues() == ["b": "v", "list": [1, 2, "x"], "map": ["k": 2, "l": 3]])
    }

    @Test func storedValuesContainingSearchesKeysValuesAndTheName() throws {
        let suite = try Suite(named: "group.Fitness", directory: directory.url)
        try suite.set("Metric", forKey: "units")
        try suite.set(["deep": ["Needle"]] as SuiteValue, forKey: "tree")
        try suite.set(3.5, forKey: "pace")
        try suite.set(Data([0xFE]), forKey: "blob")
        #expect(Set(suite.storedValues(containing: "metr").keys) == ["units"])
        #expect(Set(suite.storedValues(containing: "NEEDLE").keys) == ["tree"])
        #expect(Set(suite.storedValues(containing: "DEEP").keys) == ["tree"], "a dictionary's keys")
        #expect(Set(suite.storedValues(containing: "3.5").keys) == ["pace"])
        #expect(Set(suite.storedValues(containing: "fe").keys) == ["blob"])
        #expect(suite.storedValues(containing: "fitness").count == 4, "the suite's name: every key")
        #expect(suite.storedValues(containing: "absent").isEmpty)
    }

    @Test func hexDataParsesAndPrints() throws {
        #expect(try SuiteValue(parsingHexData: "00aB") == .data(Data([0, 0xAB])))
        #expect(Data([0, 0xAB, 0xFF]).hexText == "00abff")
        for bad in ["a", "gg", "0x00", "AAEC/w==", " 00"] {
            let error = #expect(throws: SuiteError.self) { try SuiteValue(parsingHexData: bad) }
            #expect(error?.code == .invalidValue, "\(bad)")
        }
    }
}
