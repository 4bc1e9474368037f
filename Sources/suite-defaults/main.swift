// suite-defaults: read and write suites from the command line, like macOS `defaults`.
import Foundation
import Glibc
@_spi(Tools) import SuiteDefaults
import ToolSupport

let syntax = CommandLineSyntax(
    synopsis: ["suite-defaults [--dir DIR] [--timeout SECONDS] [--] COMMAND ..."],
    arguments: [
        CommandLineArgument("read SUITE [KEY]", help: "print one value, or every stored value as JSON"),
        CommandLineArgument("write SUITE KEY [TYPE] VALUE", help: """
            store VALUE. Without TYPE it is a string, so
            "write S flag true" stores the text "true"; for a
            Boolean give --bool (VALUE then is true, false, yes,
            no, 1 or 0). TYPE is one of --string, --int, --double,
            --bool, --date (ISO 8601), --data (strict base64, not
            hex: groups of four characters, "=" only as padding
            at the end) or --json (typed JSON, for arrays and
            dictionaries); -int, -float, -bool ... work too
            """),
        CommandLineArgument("delete SUITE [KEY]", help: "remove one key, or every key of the suite"),
        CommandLineArgument("list", help: "the suites in the directory"),
        CommandLineArgument("export SUITE", help: "every stored value as typed JSON, to standard output"),
        CommandLineArgument("import SUITE FILE", help: "replace the suite's contents with FILE (- for stdin)"),
        CommandLineArgument("help", help: "print this help"),
    ],
    options: [
        .value("--dir", "DIR", help: """
            the suite directory (default: $SUITE_DEFAULTS_DIR,
            $XDG_CONFIG_HOME/suite-defaults or ~/.config/suite-defaults)
            """),
        .value("--timeout", "SECONDS", help: """
            how long to wait for another process's lock on the
            suite before giving up with status 3 (default 2)
            """),
    ],
    endOfOptions: """
        ends the options: after it, --dir is a word like any
        other. A SUITE that starts with "-" must come after it
        (suite-defaults -- write -odd KEY VALUE), so that -g,
        the global domain of macOS defaults, is refused rather
        than made a suite. TYPE keeps its place after --
        """,
    // TYPE (--int) and negative values (-42) are words of the command, not options.
    takesUndeclaredOptionsAsArguments: true,
    notes: """
        Every argument, and an imported FILE or standard input, must be UTF-8: anything
        else is a usage error that names the argument (counted from 1 after the command's
        name) or the byte offset in FILE, and nothing is written. A SUITE whose file is a
        symbolic link, a directory, a FIFO or a socket is refused (status 3), not
        reported missing.

        exit status: 0 ok, 1 suite or key not found, 2 usage, 3 I/O error, full disk
        (or quota, or file size limit), damaged file or refused file
        """
)

struct Invocation {
    var directory: URL?
    var options = Suite.Options()
    var words: [String]
    /// Whether the suite name, the word after the command, came after `--`.
    var suiteNameAfterOptions: Bool

    init(_ commandLine: ParsedCommandLine) throws(ToolError) {
        directory = commandLine.value("--dir").map { URL(fileURLWithPath: $0, isDirectory: true) }
        let timeout = try commandLine.value("--timeout", { Double($0).flatMap { $0 >= 0 && $0 < 1e9 ? $0 : nil } },
                                            else: "--timeout needs a number of seconds")
        if let timeout { options.lockTimeout = .milliseconds(Int64((timeout * 1000).rounded())) }
        words = commandLine.arguments
        suiteNameAfterOptions = commandLine.argumentsBeforeEnd < 2
    }

    /// Opens the suite named by the word after the command. A name, or a file at
    /// NAME.suite, that cannot be a suite is refused before anything is opened or
    /// created; with `mustExist`, a missing suite is "not found" rather than created.
    func suite(_ name: String, mustExist: Bool) throws -> Suite {
        if name.hasPrefix("-") && !suiteNameAfterOptions {
            throw syntax.usageError("\(name) looks like an option, and suite-defaults has none by that name; put -- before a suite name that starts with \"-\" (suite-defaults -- write -odd KEY VALUE)")
        }
        if try !Suite.checkExists(named: name, directory: directory) && mustExist {
            throw ToolError.notFound("suite \(name) not found in \((directory ?? Suite.defaultDirectory()).path)")
        }
        return try Suite(named: name, directory: directory, options: options)
    }
}

let typeFlags: [String: SuiteValue.Kind] = [
    "string": .string, "int": .integer, "integer": .integer, "double": .double, "float": .double,
    "bool": .bool, "boolean": .bool, "date": .date, "data": .data, "json": .json,
]

/// A value as `read` prints it: text as it is, data in base64, dates in ISO 8601,
/// the rest as JSON.
func printable(_ value: SuiteValue) -> String {
    switch value {
    case .string(let text): text
    case .array, .dictionary: value.jsonText(style: .plain, pretty: true)
    default: value.jsonText(style: .plain).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
    }
}

func run(_ invocation: Invocation) throws {
    var words = invocation.words
    guard !words.isEmpty else { throw syntax.usageError("no command given") }
    let command = words.removeFirst()
    func arguments(_ range: ClosedRange<Int>, _ shape: String) throws -> [String] {
        guard range.contains(words.count) else { throw syntax.usageError("\(command) takes \(shape)") }
        return words
    }

    switch command {
    case "read":
        let given = try arguments(1...2, "SUITE [KEY]")
        let suite = try invocation.suite(given[0], mustExist: true)
        try suite.reload()
        if given.count == 2 {
            guard let value = suite.storedValue(forKey: given[1]) else {
                throw ToolError.notFound("key \(given[1]) not found in suite \(given[0])")
            }
            print(printable(value))
        } else {
            print(SuiteValue.dictionary(suite.storedValues()).jsonText(style: .plain, pretty: true))
        }

    case "write":
        guard words.count == 3 || words.count == 4 else { throw syntax.usageError("write takes SUITE KEY [TYPE] VALUE") }
        var kind = SuiteValue.Kind.string
        if words.count == 4 {
            let flag = words[2].drop(while: { $0 == "-" })
            guard words[2].hasPrefix("-"), let named = typeFlags[String(flag)] else {
                throw syntax.usageError("unknown type \(words[2]); use --string, --int, --double, --bool, --date, --data or --json")
            }
            kind = named
        } else if words[2].hasPrefix("--"), typeFlags[String(words[2].dropFirst(2))] != nil {
            throw syntax.usageError("\(words[2]) needs a value after it")
        }
        let value = try SuiteValue(parsing: words[words.count - 1], as: kind)
        try invocation.suite(words[0], mustExist: false).setValue(value, forKey: words[1])

    case "delete":
        let given = try arguments(1...2, "SUITE [KEY]")
        let suite = try invocation.suite(given[0], mustExist: true)
        if given.count == 2 {
            guard suite.storedValue(forKey: given[1]) != nil else {
                throw ToolError.notFound("key \(given[1]) not found in suite \(given[0])")
            }
            try suite.removeValue(forKey: given[1])
        } else {
            try suite.removeAll()
        }

    case "list":
        _ = try arguments(0...0, "no arguments")
        do {
            for name in try Suite.names(in: invocation.directory) { print(name) }
        } catch let error as SuiteError where error.code == .notFound {
            // No directory yet means no suites yet.
        }

    case "export":
        let given = try arguments(1...1, "SUITE")
        let suite = try invocation.suite(given[0], mustExist: true)
        try suite.reload()
        print(suite.exportJSON())

    case "import":
        let given = try arguments(2...2, "SUITE FILE")
        let data: Data
        do {
            data = given[1] == "-" ? FileHandle.standardInput.readDataToEndOfFile()
                : try Data(contentsOf: URL(fileURLWithPath: given[1]))
        } catch {
            throw ToolError(status: 3, message: "cannot read \(given[1]): \(error.localizedDescription)")
        }
        let text: String
        do {
            text = try utf8Text(data)
        } catch {
            let source = given[1] == "-" ? "standard input" : given[1]
            throw ToolError.usage("\(source) is not UTF-8 at byte \(error.offset); an import must be UTF-8 JSON text. Nothing was written.")
        }
        try invocation.suite(given[0], mustExist: false).importJSON(text)

    case "help", "-h", "--help":
        print(syntax.help)

    default:
        throw syntax.usageError("unknown command \(command)")
    }
}

// Past RLIMIT_FSIZE (ulimit -f) a write would kill the process with SIGXFSZ; ignored,
// the write fails with EFBIG, which the library cuts back and reports as `.noSpace`.
signal(SIGXFSZ, SIG_IGN)

do {
    try run(try Invocation(syntax.parseCommandLine()))
} catch {
    ToolError(error).exit()
}
