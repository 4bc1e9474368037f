// suite-defaults: read and write suites from the command line, like macOS `defaults`.
import Foundation
import Glibc
@_spi(Tools) import SuiteDefaults
import ToolSupport

/// A command of suite-defaults: its forms and help, for the whole help and for
/// `help VERB` (or `VERB --help`).
struct Verb {
    /// The command's name, then its aliases.
    var names: [String]
    /// Its forms, each as typed after the options.
    var forms: [String]
    /// What it does, in the list of commands.
    var summary: String
    /// What only its own help says.
    var details: String?

    var name: String { names[0] }

    static let all: [Verb] = [
        Verb(names: ["read"], forms: ["read SUITE [KEY] [--json]"], summary: """
            every stored value, "key = value (type)" a line;
            or KEY's value alone. --json: typed JSON instead
            """, details: """
            The lines are sorted by key. A string is in double quotes, with JSON
            escapes, so that every value takes one line: name = "Ann" (string). A
            number, true and false are as they are, a date in ISO 8601, data in hex
            digits between < and >, an array or a dictionary typed JSON on one line
            (a date in it is {"$date": ...}, data {"$data": base64}), encoded JSON its
            text. A key that is empty, or has a space, "=", a quote or a control
            character, is quoted like a string. An empty suite prints nothing.

            With KEY, the value alone: text as it is, data in hex digits (what -data
            takes), a date in ISO 8601, an array or a dictionary as indented JSON.

            --json prints typed JSON, what export writes and import reads back with
            every type; with KEY, that value's.
            """),
        Verb(names: ["read-type"], forms: ["read-type SUITE KEY"], summary: """
            KEY's type, as macOS defaults prints it: "Type is
            string" (integer, float, boolean, date, data, array,
            dictionary, or json for encoded JSON)
            """),
        Verb(names: ["write"], forms: ["write SUITE KEY [TYPE] VALUE", "write SUITE KEY -array|-array-add [VALUE ...]",
                                       "write SUITE KEY -dict|-dict-add [KEY VALUE ...]"], summary: """
            store VALUE; without TYPE a string, so "write S flag
            true" stores the text "true" (a Boolean needs -bool).
            -array and -dict store strings; -array-add and
            -dict-add add to what is stored. See help write
            """, details: """
            TYPE, with one dash or two (-int or --int):
              -string                   text (the default)
              -int, -integer            a decimal integer: -42
              -float, -double           a finite decimal number: 0.25
              -bool, -boolean           true, false, yes, no, 1 or 0
              -date                     ISO 8601: 2026-11-22T10:15:00Z
              -data                     hex digits, two a byte, as in macOS defaults:
                                        deadbeef is 4 bytes. An odd number of digits,
                                        or anything else (base64 among it), is refused
              -base64, -data-base64     data in strict base64: groups of four of
                                        A-Z a-z 0-9 + /, "=" only as padding at the end
              -json                     typed JSON (see export), for any value
              -array [VALUE ...]        an array of the VALUEs, each a string
              -array-add [VALUE ...]    appends the VALUEs to the array stored (or to
                                        none), in one transaction; refused, changing
                                        nothing, when KEY holds something else
              -dict [KEY VALUE ...]     a dictionary of the pairs, each VALUE a string
              -dict-add [KEY VALUE ...] adds the pairs to the dictionary stored (or to
                                        none), in one transaction, replacing the same
                                        keys; refused when KEY holds something else

            A VALUE may start with "-" (write S n -int -5, write S k -h). A value that
            does not parse as its TYPE is a usage error, and nothing is written.
            """),
        Verb(names: ["rename"], forms: ["rename SUITE OLD NEW"], summary: """
            move OLD's value to NEW in one transaction; a value
            stored for NEW is replaced. Status 1 if OLD is absent
            """),
        Verb(names: ["delete"], forms: ["delete SUITE [KEY]"], summary: """
            remove KEY; without KEY, remove the suite's files, so
            that list no longer shows it. See help delete
            """, details: """
            delete SUITE removes NAME.suite, its change history (NAME.suite.h.*),
            temporary files a killed writer left (NAME.suite.tmp.*), then
            NAME.suite.lock, all under the suite's exclusive lock, so that no writer is
            half-way through a commit. Damaged copies kept aside by a repair
            (NAME.suite.damaged-*) stay, for you to look at.

            While another process holds the lock (in a write or a transaction), it
            waits up to --timeout, then gives up with status 3, naming that process,
            having removed nothing. A process that merely has the suite open is not
            waited for: its next read finds the suite empty (and makes NAME.suite.lock
            again, which list does not count as a suite), and a write of its own
            creates the suite anew. A NAME.suite that is not a suite file is refused
            (status 3) and left alone.
            """),
        Verb(names: ["find"], forms: ["find WORD"], summary: """
            the keys whose key or value contains WORD, ignoring
            case, in every suite (all keys of a suite whose name
            contains it): "Found N keys in domain 'S': {", lines
            as read prints them, "}". Status 1 if none
            """, details: """
            A value's text: a string as it is, a number in decimal, true or false, a
            date in ISO 8601, data in hex digits, every element of an array or a
            dictionary (and every key of a dictionary). A suite that cannot be read is
            named on standard error, the others are still searched, and the status is
            then 3. To look for a WORD that is -h or --help, put -- before find.
            """),
        Verb(names: ["list", "domains"], forms: ["list"], summary: "the suites in the directory; domains is the same"),
        Verb(names: ["export"], forms: ["export SUITE"], summary: "every stored value as typed JSON, to standard output"),
        Verb(names: ["import"], forms: ["import SUITE FILE"], summary: "replace the suite's contents with FILE (- for stdin)"),
        Verb(names: ["help"], forms: ["help [COMMAND]"], summary: "print this help, or COMMAND's"),
    ]

    /// A usage error: the message, then this command's help.
    func usageError(_ message: String) -> ToolError {
        .usage(message + "\n\n" + help)
    }

    static func named(_ word: String) -> Verb? {
        all.first { $0.names.contains(word) }
    }

    /// `help VERB`: its forms, its summary and details, and the exit statuses.
    var help: String {
        let prefix = "suite-defaults [--dir DIR] [--timeout SECONDS] "
        var text = forms.enumerated().map { ($0.offset == 0 ? "usage: " : "       ") + prefix + $0.element }
            .joined(separator: "\n")
        if names.count > 1 { text += "\n(also: " + names.dropFirst().joined(separator: ", ") + ")" }
        text += "\n\n" + summary.split(separator: "\n").joined(separator: " ")
        if let details { text += "\n\n" + details }
        return text + "\n\n" + exitStatuses
    }
}

let exitStatuses = """
    exit status: 0 ok, 1 suite or key not found, 2 usage, 3 I/O error, full disk
    (or quota, or file size limit), damaged file, refused file, or a lock held too long
    """

let syntax = CommandLineSyntax(
    synopsis: ["suite-defaults [--dir DIR] [--timeout SECONDS] [--] COMMAND ..."],
    arguments: Verb.all.map { CommandLineArgument($0.forms[0], help: $0.summary) },
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
        other. A SUITE or KEY that starts with "-" is a usage
        error, after -- too, so that -g (the global domain of
        macOS defaults) is refused rather than made a suite
        """,
    // TYPE (-int) and negative values (-42) are words of the command, not options.
    takesUndeclaredOptionsAsArguments: true,
    notes: """
        COMMAND --help (or -h), as the word right after COMMAND, prints COMMAND's help,
        as help COMMAND does; later on, -h and --help are values (write S k -h stores
        "-h").

        Every argument, and an imported FILE or standard input, must be UTF-8: anything
        else is a usage error that names the argument (counted from 1 after the command's
        name) or the byte offset in FILE, and nothing is written. A SUITE whose file is a
        symbolic link, a directory, a FIFO or a socket is refused (status 3), not
        reported missing.

        \(exitStatuses)
        """
)

struct Invocation {
    var directory: URL?
    var options = Suite.Options()
    var words: [String]
    /// How many of `words` came before `--`.
    var wordsBeforeEnd: Int

    init(_ commandLine: ParsedCommandLine) throws(ToolError) {
        directory = commandLine.value("--dir").map { URL(fileURLWithPath: $0, isDirectory: true) }
        let timeout = try commandLine.value("--timeout", { Double($0).flatMap { $0 >= 0 && $0 < 1e9 ? $0 : nil } },
                                            else: "--timeout needs a number of seconds")
        if let timeout { options.lockTimeout = .milliseconds(Int64((timeout * 1000).rounded())) }
        words = commandLine.arguments
        wordsBeforeEnd = commandLine.argumentsBeforeEnd
    }

    var directoryPath: String { (directory ?? Suite.defaultDirectory()).path }

    /// Opens a suite. With `mustExist`, a missing suite is "not found" rather than
    /// created; a file at NAME.suite that cannot be a suite is refused before
    /// anything is opened or created.
    func suite(_ name: String, mustExist: Bool) throws -> Suite {
        if try !Suite.checkExists(named: name, directory: directory) && mustExist {
            throw ToolError.notFound("suite \(name) not found in \(directoryPath)")
        }
        return try Suite(named: name, directory: directory, options: options)
    }
}

/// A SUITE as the command line gives it: one that starts with "-" is an option
/// misplaced or a macOS spelling (-g, -app), never a suite.
func suiteName(_ word: String, of verb: Verb) throws -> String {
    guard !word.hasPrefix("-") else {
        let macOS = ["-g", "-globalDomain", "NSGlobalDomain", "-app", "-currentHost", "-host"].contains(word)
            ? " (suites have no global domain, app or host forms of macOS defaults)" : ""
        throw verb.usageError("\(word) looks like an option\(macOS), and a SUITE never starts with \"-\"; nothing was done")
    }
    return word
}

/// A KEY as the command line gives it: one that starts with "-" is refused, as a
/// misplaced option would be.
func keyName(_ word: String, of verb: Verb) throws -> String {
    guard !word.hasPrefix("-") else {
        throw verb.usageError("\(word) looks like an option, and a KEY never starts with \"-\" here; nothing was done")
    }
    return word
}

// MARK: Printing values

/// The type as `read-type` and the lines of `read` name it: macOS `defaults`' names,
/// and json for encoded JSON.
func typeName(_ value: SuiteValue) -> String {
    switch value {
    case .string: "string"
    case .integer: "integer"
    case .double: "float"
    case .bool: "boolean"
    case .date: "date"
    case .data: "data"
    case .array: "array"
    case .dictionary: "dictionary"
    case .json: "json"
    }
}

/// A number, a Boolean or a date as plain JSON writes it, without quotes.
func scalarText(_ value: SuiteValue) -> String {
    value.jsonText(style: .plain).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
}

/// A value alone, as `read SUITE KEY` prints it.
func printable(_ value: SuiteValue) -> String {
    switch value {
    case .string(let text): text
    case .data(let bytes): bytes.hexText
    case .array, .dictionary: value.jsonText(style: .plain, pretty: true)
    default: scalarText(value)
    }
}

/// A key in a line of `read`: as it is, unless quoting is needed to read the line back.
func lineKey(_ key: String) -> String {
    let plain = !key.isEmpty && !key.unicodeScalars.contains { scalar in
        scalar == "=" || scalar == "\"" || scalar == "\\" || scalar.properties.isWhitespace
            || scalar.properties.generalCategory == .control
    }
    return plain ? key : SuiteValue.string(key).jsonText(style: .plain)
}

/// A value in a line of `read`, on one line whatever it holds.
func lineValue(_ value: SuiteValue) -> String {
    switch value {
    case .string: value.jsonText(style: .plain)
    case .data(let bytes): "<" + bytes.hexText + ">"
    case .array, .dictionary: value.jsonText(style: .typed)
    case .json: value.jsonText(style: .plain)
    default: scalarText(value)
    }
}

/// The lines of `read SUITE`: "key = value (type)", sorted by key.
func lines(_ values: [String: SuiteValue]) -> [String] {
    values.keys.sorted().map { key in "\(lineKey(key)) = \(lineValue(values[key]!)) (\(typeName(values[key]!)))" }
}

// MARK: Writing values

/// The type words of `write`, after their dash or two.
enum TypeFlag {
    case scalar(SuiteValue.Kind)
    case hexData
    case array, arrayAdd, dictionary, dictionaryAdd

    static let byName: [String: TypeFlag] = [
        "string": .scalar(.string), "int": .scalar(.integer), "integer": .scalar(.integer),
        "float": .scalar(.double), "double": .scalar(.double), "bool": .scalar(.bool), "boolean": .scalar(.bool),
        "date": .scalar(.date), "data": .hexData, "base64": .scalar(.data), "data-base64": .scalar(.data),
        "json": .scalar(.json), "array": .array, "array-add": .arrayAdd, "dict": .dictionary, "dict-add": .dictionaryAdd,
    ]

    /// The flag `word` names: -int or --int; nil for any other word.
    init?(_ word: String) {
        let name = word.hasPrefix("--") ? word.dropFirst(2) : word.hasPrefix("-") ? word.dropFirst() : nil
        guard let name, let flag = Self.byName[String(name)] else { return nil }
        self = flag
    }
}

/// What `write` does to KEY.
enum WriteAction {
    case set(SuiteValue)
    case append([SuiteValue])
    case merge([String: SuiteValue])
}

/// Reads the words after KEY: [TYPE] VALUE, or a collection flag and its words.
func writeAction(_ words: [String], of verb: Verb) throws -> WriteAction {
    let shape = "write takes SUITE KEY [TYPE] VALUE, or SUITE KEY -array|-dict ... (see help write)"
    guard let flag = TypeFlag(words[0]) else {
        guard words.count == 1 else {
            throw verb.usageError(words[0].hasPrefix("-")
                ? "unknown type \(words[0]); see help write for the types" : "\(shape); for several values use -array")
        }
        return .set(.string(words[0]))
    }
    let values = Array(words.dropFirst())
    func pairs() throws -> [String: SuiteValue] {
        guard values.count % 2 == 0 else {
            throw verb.usageError("\(words[0]) takes KEY VALUE pairs, and \(values.last!) has no value; nothing was written")
        }
        return Dictionary(stride(from: 0, to: values.count, by: 2).map { (values[$0], SuiteValue.string(values[$0 + 1])) },
                          uniquingKeysWith: { _, last in last })
    }
    switch flag {
    case .array: return .set(.array(values.map(SuiteValue.string)))
    case .arrayAdd: return .append(values.map(SuiteValue.string))
    case .dictionary: return .set(.dictionary(try pairs()))
    case .dictionaryAdd: return .merge(try pairs())
    case .scalar, .hexData:
        guard values.count == 1 else {
            throw verb.usageError(values.isEmpty ? "\(words[0]) needs a value after it"
                : "\(words[0]) takes one value; for several, use -array. \(shape)")
        }
        do {
            if case .scalar(let kind) = flag { return .set(try SuiteValue(parsing: values[0], as: kind)) }
            return .set(try SuiteValue(parsingHexData: values[0]))
        } catch let error as SuiteError {
            let hint = if case .hexData = flag { " For base64, give --base64 (or -data-base64)." } else { "" }
            throw ToolError.usage("\(error.message)\(hint) Nothing was written.")
        }
    }
}

// MARK: The commands

func run(_ invocation: Invocation) throws {
    var words = invocation.words
    guard !words.isEmpty else { throw syntax.usageError("no command given") }
    let command = words.removeFirst()
    if command == "-h" || command == "--help" {
        print(syntax.help)
        return
    }
    guard let verb = Verb.named(command) else { throw syntax.usageError("unknown command \(command)") }
    // `VERB --help`: only the word right after the verb, and before `--`; later it is a value.
    if let first = words.first, first == "-h" || first == "--help", invocation.wordsBeforeEnd >= 2 {
        print(verb.help)
        return
    }
    func shapeError() -> ToolError {
        verb.usageError("\(command) takes \(verb.forms.joined(separator: ", or ")), not \(words.count) argument\(words.count == 1 ? "" : "s")")
    }
    func arguments(_ range: ClosedRange<Int>) throws -> [String] {
        guard range.contains(words.count) else { throw shapeError() }
        return words
    }

    switch verb.name {
    case "read":
        let json = words.contains { $0 == "--json" || $0 == "-json" }
        words.removeAll { $0 == "--json" || $0 == "-json" }
        let given = try arguments(1...2)
        let suite = try invocation.suite(suiteName(given[0], of: verb), mustExist: true)
        try suite.reload()
        if given.count == 2 {
            let key = try keyName(given[1], of: verb)
            guard let value = suite.storedValue(forKey: key) else {
                throw ToolError.notFound("key \(key) not found in suite \(given[0])")
            }
            print(json ? value.jsonText(style: .typed, pretty: true) : printable(value))
        } else if json {
            print(suite.exportJSON())
        } else {
            for line in lines(suite.storedValues()) { print(line) }
        }

    case "read-type":
        let given = try arguments(2...2)
        let suite = try invocation.suite(suiteName(given[0], of: verb), mustExist: true)
        try suite.reload()
        guard let value = suite.storedValue(forKey: try keyName(given[1], of: verb)) else {
            throw ToolError.notFound("key \(given[1]) not found in suite \(given[0])")
        }
        print("Type is \(typeName(value))")

    case "write":
        guard words.count >= 3 else { throw shapeError() }
        let name = try suiteName(words[0], of: verb), key = try keyName(words[1], of: verb)
        let action = try writeAction(Array(words[2...]), of: verb)
        let suite = try invocation.suite(name, mustExist: false)
        switch action {
        case .set(let value): try suite.setValue(value, forKey: key)
        case .append(let elements): try suite.append(contentsOf: elements, toArrayForKey: key)
        case .merge(let entries): try suite.merge(entries, intoDictionaryForKey: key)
        }

    case "rename":
        let given = try arguments(3...3)
        let name = try suiteName(given[0], of: verb), old = try keyName(given[1], of: verb), new = try keyName(given[2], of: verb)
        let suite = try invocation.suite(name, mustExist: true)
        guard try suite.renameKey(old, to: new) else {
            throw ToolError.notFound("key \(old) not found in suite \(name); nothing was renamed")
        }

    case "delete":
        let given = try arguments(1...2)
        let name = try suiteName(given[0], of: verb)
        if given.count == 2 {
            let key = try keyName(given[1], of: verb)
            let suite = try invocation.suite(name, mustExist: true)
            guard suite.storedValue(forKey: key) != nil else {
                throw ToolError.notFound("key \(key) not found in suite \(name)")
            }
            try suite.removeValue(forKey: key)
        } else {
            guard try Suite.checkExists(named: name, directory: invocation.directory) else {
                throw ToolError.notFound("suite \(name) not found in \(invocation.directoryPath)")
            }
            try Suite.removeFiles(named: name, directory: invocation.directory, options: invocation.options)
        }

    case "find":
        let word = try arguments(1...1)[0]
        guard !word.isEmpty else { throw verb.usageError("find needs a WORD that is not empty") }
        var found = 0
        var failed: [String] = []
        for name in try suiteNames(in: invocation) {
            let matches: [String: SuiteValue]
            do {
                let suite = try invocation.suite(name, mustExist: false)
                try suite.reload()
                matches = suite.storedValues(containing: word)
            } catch {
                failed.append(name)
                Output.errorLine("\(Output.programName): cannot search suite \(name): \(ToolError(error).message)")
                continue
            }
            guard !matches.isEmpty else { continue }
            found += matches.count
            // "keys" also for one, as macOS prints it, for scripts that look for the line.
            print("Found \(matches.count) keys in domain '\(name)': {")
            for line in lines(matches) { print("    " + line) }
            print("}")
        }
        if !failed.isEmpty {
            throw ToolError(status: 3, message: "could not search \(failed.count) suite\(failed.count == 1 ? "" : "s"): \(failed.joined(separator: ", "))")
        }
        if found == 0 { throw ToolError.notFound("no key or value contains \(word) in \(invocation.directoryPath)") }

    case "list":
        _ = try arguments(0...0)
        for name in try suiteNames(in: invocation) { print(name) }

    case "export":
        let given = try arguments(1...1)
        let suite = try invocation.suite(suiteName(given[0], of: verb), mustExist: true)
        try suite.reload()
        print(suite.exportJSON())

    case "import":
        let given = try arguments(2...2)
        let name = try suiteName(given[0], of: verb)
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
        try invocation.suite(name, mustExist: false).importJSON(text)

    case "help":
        let given = try arguments(0...1)
        guard let topic = given.first else {
            print(syntax.help)
            return
        }
        guard let about = Verb.named(topic) else { throw syntax.usageError("help: unknown command \(topic)") }
        print(about.help)

    default:
        preconditionFailure("a verb without a case: \(verb.name)")
    }
}

/// The suites in the directory; none when it does not exist yet.
func suiteNames(in invocation: Invocation) throws -> [String] {
    do {
        return try Suite.names(in: invocation.directory)
    } catch let error as SuiteError where error.code == .notFound {
        return []
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
