import ChildProcess
import Foundation
import Testing
import TestSupport
import SuiteDefaults

/// `suite-defaults` run as a real process.
@Suite("The suite-defaults command")
struct CommandLineToolTests {
    let directory = TemporaryDirectory()

    struct Outcome {
        var status: ChildProcess.Termination?
        var output: [String]
        var errors: String
    }

    @discardableResult
    func run(_ arguments: String..., input: String? = nil) throws -> Outcome {
        let process = try ChildProcess(executable: Products.path("suite-defaults"), arguments: ["--dir", directory.path] + arguments)
        if let input { process.send(input) }
        process.closeInput()
        let status = process.wait(timeout: .seconds(60))
        return Outcome(status: status, output: process.lines, errors: process.standardError)
    }

    @Test func writesAndReadsEveryType() throws {
        #expect(try run("write", "group.x", "units.system", "imperial").status == .exited(0))
        #expect(try run("write", "group.x", "count", "--int", "-42").status == .exited(0))
        #expect(try run("write", "group.x", "ratio", "-float", "0.25").status == .exited(0))
        #expect(try run("write", "group.x", "on", "--bool", "yes").status == .exited(0))
        #expect(try run("write", "group.x", "when", "--date", "2026-11-22T10:15:00Z").status == .exited(0))
        #expect(try run("write", "group.x", "blob", "--data", "AAEC/w==").status == .exited(0))
        #expect(try run("write", "group.x", "list", "--json", "[1, \"two\"]").status == .exited(0))

        #expect(try run("read", "group.x", "units.system").output == ["imperial"])
        #expect(try run("read", "group.x", "count").output == ["-42"])
        #expect(try run("read", "group.x", "ratio").output == ["0.25"])
        #expect(try run("read", "group.x", "on").output == ["true"])
        #expect(try run("read", "group.x", "when").output == ["2026-11-22T10:15:00Z"])
        #expect(try run("read", "group.x", "blob").output == ["AAEC/w=="])
        #expect(try run("read", "group.x", "list").output == ["[", "  1,", "  \"two\"", "]"])

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
        #expect(try run("list").output == ["a.suite", "b.suite"])

        let missingKey = try run("read", "a.suite", "nope")
        #expect(missingKey.status == .exited(1))
        #expect(missingKey.errors.contains("nope"))
        #expect(try run("read", "absent").status == .exited(1))
        #expect(!directory.names().contains { $0.hasPrefix("absent") }, "reading a missing suite creates nothing")

        #expect(try run("delete", "a.suite", "k").status == .exited(0))
        #expect(try run("delete", "a.suite", "k").status == .exited(1))
        try run("write", "b.suite", "j", "w")
        #expect(try run("delete", "b.suite").status == .exited(0))
        #expect(try run("read", "b.suite").output == ["{}"])
    }

    @Test func usageErrorsExitWithStatusTwo() throws {
        for arguments in [[], ["bogus"], ["read"], ["write", "s", "k"], ["write", "s", "k", "--int", "abc"],
                          ["write", "s", "k", "--weird", "1"], ["read", "a/b"], ["write", "s", "", "v"], ["write", "s", "k", "--int"]] {
            let process = try ChildProcess(executable: Products.path("suite-defaults"), arguments: ["--dir", directory.path] + arguments)
            process.closeInput()
            #expect(process.wait(timeout: .seconds(60)) == .exited(2), "\(arguments)")
            #expect(process.standardError.hasPrefix("suite-defaults: "), "\(arguments): \(process.standardError)")
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
        let imported = try run("import", "copy", "-", input: exported.output.joined(separator: "\n"))
        #expect(imported.status == .exited(0), "\(imported.errors)")
        let copy = try Suite(named: "copy", directory: directory.url)
        #expect(copy.storedValues() == suite.storedValues())
        #expect(try copy.decodable(PriceQuote.self, forKey: "price")?.value == Decimal(string: "68901.23"))

        let bad = try run("import", "copy", "-", input: "[1, 2]")
        #expect(bad.status == .exited(2))
        #expect(copy.storedValues() == suite.storedValues(), "a failed import changes nothing")
    }

    @Test func aDamagedOrForeignFileExitsWithStatusThree() throws {
        try directory.write(Array("{\"not\": \"a suite\"}".utf8), to: "foreign.suite")
        let outcome = try run("read", "foreign")
        #expect(outcome.status == .exited(3))
        #expect(outcome.errors.contains("not a suite file"))
    }
}
