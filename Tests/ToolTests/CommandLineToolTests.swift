import ChildProcess
import Foundation
import Glibc
import Testing
import TestSupport
@_spi(Tools) import SuiteDefaults

/// A Codable value with a Decimal, as an app caches a price.
private struct PriceQuote: Codable, Equatable {
    var value: Decimal
    var currency: String
    var timestamp: Date
}

/// `suite-defaults` run as a real process.
@Suite("The suite-defaults command")
struct CommandLineToolTests {
    let directory = TemporaryDirectory()

    /// Runs `suite-defaults --dir DIR ARGUMENTS` to its end.
    @discardableResult
    func run(_ arguments: String..., input: String? = nil) throws -> ProgramRun {
        try run(arguments, input: input)
    }

    /// Runs `suite-defaults --dir DIR ARGUMENTS` to its end.
    @discardableResult
    func run(_ arguments: [String], input: String? = nil) throws -> ProgramRun {
        try TestSupport.run(program: "suite-defaults", ["--dir", directory.path] + arguments, input: input)
    }

    /// Runs `script` with `/bin/sh`, where `tool ARGS` runs `suite-defaults --dir DIR ARGS`
    /// and `$1 ...` are `arguments`: for what a ChildProcess cannot give the command
    /// directly, arguments that are not UTF-8 (made with printf) and resource limits
    /// (set with ulimit).
    func runInShell(_ script: String, _ arguments: String...) throws -> ProgramRun {
        var environment = ProcessInfo.processInfo.environment
        environment["SUITE_DEFAULTS_TOOL"] = Products.path("suite-defaults")
        environment["SUITE_DEFAULTS_TEST_DIR"] = directory.path
        let tool = #"tool() { exec "$SUITE_DEFAULTS_TOOL" --dir "$SUITE_DEFAULTS_TEST_DIR" "$@"; }"#
        return try TestSupport.run(program: "/bin/sh", ["-c", tool + "\n" + script, "sh"] + arguments, environment: environment)
    }

    @Test func helpWordsAfterTheCommandAreValuesNotHelp() throws {
        #expect(try run("write", "group.x", "flag", "-h").status == .exited(0))
        #expect(try run("write", "group.x", "help", "--string", "--help").status == .exited(0))
        #expect(try run("write", "group.x", "list", "-array", "-h", "--help").status == .exited(0))
        let suite = try Suite(named: "group.x", directory: directory.url)
        #expect(suite.string(forKey: "flag") == "-h")
        #expect(suite.string(forKey: "help") == "--help")
        #expect(suite.array(forKey: "list") == ["-h", "--help"])
        // A KEY that starts with "-" is refused now, --help among them, rather than stored.
        #expect(try run("write", "group.x", "--help", "--string", "--help").status == .exited(2))
        #expect(suite.storedValue(forKey: "--help") == nil)
        #expect(try run("read", "group.x", "flag").lines == ["-h"])
        let help = try run("--help")
        #expect(help.status == .exited(0) && help.lines.first?.hasPrefix("usage: suite-defaults") == true)
    }

    @Test func writesAndReadsEveryType() throws {
        #expect(try run("write", "group.x", "units.system", "imperial").status == .exited(0))
        #expect(try run("write", "group.x", "count", "--int", "-42").status == .exited(0))
        #expect(try run("write", "group.x", "ratio", "-float", "0.25").status == .exited(0))
        #expect(try run("write", "group.x", "on", "--bool", "yes").status == .exited(0))
        #expect(try run("write", "group.x", "when", "--date", "2026-11-22T10:15:00Z").status == .exited(0))
        #expect(try run("write", "group.x", "blob", "--base64", "AAEC/w==").status == .exited(0))
        #expect(try run("write", "group.x", "list", "--json", "[1, \"two\"]").status == .exited(0))

        #expect(try run("read", "group.x", "units.system").lines == ["imperial"])
        #expect(try run("read", "group.x", "count").lines == ["-42"])
        #expect(try run("read", "group.x", "ratio").lines == ["0.25"])
        #expect(try run("read", "group.x", "on").lines == ["true"])
        #expect(try run("read", "group.x", "when").lines == ["2026-11-22T10:15:00Z"])
        #expect(try run("read", "group.x", "blob").lines == ["000102ff"], "data reads as the hex digits -data takes")
        #expect(try run("read", "group.x", "list").lines == ["[", "  1,", "  \"two\"", "]"])

        // What the command wrote, the library reads, with the same types.
        let suite = try Suite(named: "group.x", directory: directory.url)
        #expect(suite.integer(forKey: "count") == -42)
        #expect(suite.date(forKey: "when") == Date(timeIntervalSince1970: 1_795_342_500))
        #expect(suite.data(forKey: "blob") == Data([0, 1, 2, 255]))
        #expect(suite.array(forKey: "list") == [1, "two"])
    }

    @Test func listsDeletesAndReportsWhatIsMissing() throws {
        try run("write", "b.suite", "k", "v")
        try run("write", "a.suite", "k", "v")
        #expect(try run("list").lines == ["a.suite", "b.suite"])

        let missingKey = try run("read", "a.suite", "nope")
        #expect(missingKey.status == .exited(1))
        #expect(missingKey.errors.contains("nope"))
        #expect(try run("read", "absent").status == .exited(1))
        #expect(!directory.names().contains { $0.hasPrefix("absent") }, "reading a missing suite creates nothing")

        #expect(try run("delete", "a.suite", "k").status == .exited(0))
        #expect(try run("delete", "a.suite", "k").status == .exited(1))
        try run("write", "b.suite", "j", "w")
        #expect(try run("delete", "b.suite").status == .exited(0))
        #expect(try run("read", "b.suite").status == .exited(1), "delete SUITE removes the suite, not just its keys")
        #expect(try run("list").lines == ["a.suite"])
        #expect(try run("delete", "b.suite").status == .exited(1))
    }

    @Test func usageErrorsExitWithStatusTwo() throws {
        for arguments in [[], ["bogus"], ["read"], ["write", "s", "k"], ["write", "s", "k", "--int", "abc"],
                          ["write", "s", "k", "--weird", "1"], ["read", "a/b"], ["write", "s", "", "v"], ["write", "s", "k", "--int"]] {
            let outcome = try TestSupport.run(program: "suite-defaults", ["--dir", directory.path] + arguments)
            #expect(outcome.status == .exited(2), "\(arguments)")
            #expect(outcome.errors.hasPrefix("suite-defaults: "), "\(arguments): \(outcome.errors)")
        }
    }

    @Test func exportAndImportRoundTripEveryType() throws {
        let suite = try Suite(named: "source", directory: directory.url)
        try suite.set(encodable: PriceQuote(value: Decimal(string: "68901.23")!, currency: "USD",
                                            timestamp: Date(timeIntervalSinceReferenceDate: 5)), forKey: "price")
        try suite.set(["a": [1, 2.0, .data(Data([7])), .date(Date(timeIntervalSince1970: 1.5)), true]] as SuiteValue, forKey: "tree")
        try suite.set("text \"quoted\"\n", forKey: "text")
        let exported = try run("export", "source")
        #expect(exported.status == .exited(0))
        let imported = try run("import", "copy", "-", input: exported.lines.joined(separator: "\n"))
        #expect(imported.status == .exited(0), "\(imported.errors)")
        let copy = try Suite(named: "copy", directory: directory.url)
        #expect(copy.storedValues() == suite.storedValues())
        #expect(try copy.decodable(PriceQuote.self, forKey: "price")?.value == Decimal(string: "68901.23"))

        let bad = try run("import", "copy", "-", input: "[1, 2]")
        #expect(bad.status == .exited(2))
        #expect(copy.storedValues() == suite.storedValues(), "a failed import changes nothing")
    }

    @Test func exportAndImportKeepWhichValuesAreDefaults() throws {
        let suite = try Suite(named: "source", directory: directory.url)
        try suite.setIfAbsent("metric", forKey: "units")
        try suite.set("Ann", forKey: "name")
        try suite.setIfAbsent(Date(timeIntervalSince1970: 1_795_342_500), forKey: "first launch")
        let exported = try run("export", "source")
        #expect(exported.status == .exited(0), "\(exported.errors)")
        #expect(exported.lines == [
            "{", #"  "first launch": {"#, #"    "$default": {"#, #"      "$date": "2026-11-22T10:15:00Z""#, "    }", "  },",
            #"  "name": "Ann","#, #"  "units": {"#, #"    "$default": "metric""#, "  }", "}",
        ])
        try directory.write(Array(exported.lines.joined(separator: "\n").utf8), to: "export.json")
        let copy = try Suite(named: "copy", directory: directory.url)
        try copy.set("imperial", forKey: "units")
        let imported = try run("import", "copy", directory.file("export.json").path)
        #expect(imported.status == .exited(0), "\(imported.errors)")
        #expect(copy.storedEntries() == suite.storedEntries())
        #expect(copy.storedEntries()["units"]?.isDefault == true)

        // A mark anywhere but around a top-level value is a usage error that writes nothing.
        let bad = try run("import", "copy", "-", input: #"{"name": "Bob", "units": {"$default": {"$default": "metric"}}}"#)
        #expect(bad.status == .exited(2), "\(bad.errors)")
        #expect(bad.errors.contains("$default") && bad.errors.contains("units"), "\(bad.errors)")
        #expect(copy.storedEntries() == suite.storedEntries(), "a refused import changes nothing")

        // An export made before defaults were marked imports every value as a choice.
        let old = try run("import", "copy", "-", input: #"{"name": "Ann", "units": "metric"}"#)
        #expect(old.status == .exited(0), "\(old.errors)")
        #expect(copy.storedValues() == ["name": "Ann", "units": "metric"])
        #expect(copy.storedEntries().mapValues(\.isDefault) == ["name": false, "units": false])
    }

    @Test func aDamagedOrForeignFileExitsWithStatusThree() throws {
        try directory.write(Array("{\"not\": \"a suite\"}".utf8), to: "foreign.suite")
        let outcome = try run("read", "foreign")
        #expect(outcome.status == .exited(3))
        #expect(outcome.errors.contains("not a suite file"))
    }

    // MARK: What a hostile tester tried

    @Test func anArgumentThatIsNotUTF8IsAUsageErrorAndWritesNothing() throws {
        try run("write", "s", "k", "kept")
        let names = directory.names()
        // Arguments count from 1 after the command's name: --dir DIR write SUITE KEY VALUE.
        for (script, argument) in [(#"tool write "$(printf 's\377')" k v"#, 4),
                                   (#"tool write s "$(printf 'k\377')" v"#, 5),
                                   (#"tool write s k "$(printf 'v\303')""#, 6),
                                   (#"tool write s k --int "$(printf '1\377')""#, 7)] {
            let outcome = try runInShell(script)
            #expect(outcome.status == .exited(2), "\(script): \(outcome.errors)")
            #expect(outcome.errors.contains("argument \(argument) ") && outcome.errors.contains("not UTF-8"), "\(script): \(outcome.errors)")
        }
        #expect(directory.names() == names, "no suite was created")
        #expect(try Suite(named: "s", directory: directory.url).storedValues() == ["k": "kept"])
    }

    @Test func anImportThatIsNotUTF8IsAUsageErrorAndWritesNothing() throws {
        try run("write", "s", "k", "kept")
        // `{"k": "a` is 8 bytes; then a byte that no UTF-8 text contains.
        try directory.write(Array(#"{"k": "a"#.utf8) + [0xFF] + Array(#""}"#.utf8), to: "bad.json")
        let fromFile = try run("import", "s", directory.file("bad.json").path)
        #expect(fromFile.status == .exited(2), "\(fromFile.errors)")
        #expect(fromFile.errors.contains("not UTF-8 at byte 8"), "\(fromFile.errors)")
        let fromInput = try runInShell(#"printf '{"k": "a\377"}' | tool import s -"#)
        #expect(fromInput.status == .exited(2), "\(fromInput.errors)")
        #expect(fromInput.errors.contains("not UTF-8 at byte 8"), "\(fromInput.errors)")
        #expect(try Suite(named: "s", directory: directory.url).storedValues() == ["k": "kept"])
    }

    @Test func aFileSizeLimitIsAFullDiskNotACrash() throws {
        #expect(try run("write", "full", "early", "kept").status == .exited(0))
        let before = try #require(directory.bytes(of: "full.suite"))
        #expect(before.count < 512, "the limit below leaves room for what is there")
        // ulimit -f counts blocks of 512 bytes (POSIX); the value needs far more.
        let refused = try runInShell(#"ulimit -f 1 && tool write full big "$1""#, String(repeating: "x", count: 100_000))
        #expect(refused.status == .exited(3), "\(refused.errors)")
        #expect(refused.errors.contains("file size limit"), "\(refused.errors)")
        #expect(directory.bytes(of: "full.suite") == before, "the cut-off write was undone")
        #expect(SuiteFileInspection(bytes: directory.bytes(of: "full.suite") ?? []).verdict == .intact)
        #expect(try run("read", "full", "early").lines == ["kept"])
    }

    @Test func aSuiteFileThatIsNotARegularFileIsRefusedNotMissing() throws {
        try run("write", "real", "k", "kept")
        #expect(symlink("real.suite", directory.file("link.suite").path) == 0)
        #expect(mkfifo(directory.file("fifo.suite").path, 0o600) == 0)
        #expect(mkdir(directory.file("dir.suite").path, 0o700) == 0)
        for (name, refusal) in [("link", "symbolic link"), ("fifo", "FIFO"), ("dir", "directory")] {
            for command in ["read", "delete", "export"] {
                // A FIFO must not block the command: the deadline of `run` would fail it.
                let outcome = try run(command, name)
                #expect(outcome.status == .exited(3), "\(command) \(name): \(outcome.errors)")
                #expect(outcome.errors.contains(refusal), "\(command) \(name): \(outcome.errors)")
            }
            #expect(!directory.names().contains(name + ".suite.lock"), "a refused suite gets no lock file")
        }
        #expect(try run("read", "real", "k").lines == ["kept"], "nothing reached the link's target")
    }

    @Test func aSuiteNameOrKeyThatLooksLikeAnOptionIsAUsageError() throws {
        let global = try run("write", "-g", "k", "v")
        #expect(global.status == .exited(2))
        #expect(global.errors.contains("a SUITE never starts with \"-\""), "\(global.errors)")
        #expect(global.errors.contains("global domain"), "\(global.errors)")
        // Not after --, either: a name that starts with "-" is never a suite.
        for arguments in [["read", "-g"], ["write", "--", "-odd", "k", "v"], ["--", "write", "-odd", "n", "--int", "-5"],
                          ["write", "-globalDomain", "k", "v"], ["delete", "-g"], ["export", "-x"], ["import", "-x", "-"],
                          ["rename", "-x", "a", "b"], ["read-type", "-x", "k"]] {
            let outcome = try run(arguments)
            #expect(outcome.status == .exited(2), "\(arguments): \(outcome.errors)")
            #expect(outcome.errors.contains("never starts with \"-\""), "\(arguments): \(outcome.errors)")
        }
        #expect(directory.names().isEmpty, "no suite -g or -odd was created")

        try run("write", "s", "k", "v")
        let files = directory.names()
        for arguments in [["write", "s", "-k", "v"], ["write", "s", "--", "-k", "v"], ["read", "s", "-k"], ["delete", "s", "-k"],
                          ["rename", "s", "k", "-new"], ["rename", "s", "-old", "k"], ["read-type", "s", "-k"],
                          ["write", "s", "-int", "5"]] {
            let outcome = try run(arguments)
            #expect(outcome.status == .exited(2), "\(arguments): \(outcome.errors)")
            #expect(outcome.errors.contains("a KEY never starts with \"-\""), "\(arguments): \(outcome.errors)")
        }
        #expect(directory.names() == files)
        #expect(try Suite(named: "s", directory: directory.url).storedValues() == ["k": "v"], "nothing was changed")
        // A VALUE may start with "-".
        #expect(try run("write", "s", "n", "-int", "-5").status == .exited(0))
        #expect(try run("write", "s", "dash", "-g").status == .exited(0))
        #expect(try Suite(named: "s", directory: directory.url).storedValues() == ["k": "v", "n": -5, "dash": "-g"])
    }

    @Test func dataMustBeStrictBase64() throws {
        // "====" decoded to one zero byte and "AAEC/w===" to four bytes before.
        for text in ["deadbeef!", "abc", "====", "AAEC/w===", "AA==AA==", "AAEC/w"] {
            let outcome = try run("write", "s", "blob", "--base64", text)
            #expect(outcome.status == .exited(2), "\(text): \(outcome.errors)")
            #expect(outcome.errors.contains("base64"), "\(text): \(outcome.errors)")
        }
        #expect(!directory.names().contains("s.suite"))
    }
}
