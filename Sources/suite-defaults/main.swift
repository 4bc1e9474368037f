// suite-defaults: read and write suites from the command line, like macOS `defaults`.
import Foundation
import Glibc
@_spi(Tools) import SuiteDefaults

let usageText = """
    usage: suite-defaults [--dir DIR] [--timeout SECONDS] [--] COMMAND ...

      read SUITE [KEY]        print one value, or every stored value as JSON
      write SUITE KEY [TYPE] VALUE
                              store VALUE. Without TYPE it is a string, so
                              "write S flag true" stores the text "true"; for a
                              Boolean give --bool (VALUE then is true, false, yes,
                              no, 1 or 0). TYPE is one of --string, --int, --double,
                              --bool, --date (ISO 8601), --data (strict base64, not
                              hex: groups of four characters, "=" only as padding
                              at the end) or --json (typed JSON, for arrays and
                              dictionaries); -int, -float, -bool ... work too
      delete SUITE [KEY]      remove one key, or every key of the suite
      list                    the suites in the directory
      export SUITE            every stored value as typed JSON, to standard output
      import SUITE FILE       replace the suite's contents with FILE (- for stdin)

      --dir DIR               the suite directory (default: $SUITE_DEFAULTS_DIR,
                              $XDG_CONFIG_HOME/suite-defaults or ~/.config/suite-defaults)
      --timeout SECONDS       how long to wait for another process's lock on the
                              suite before giving up with status 3 (default 2)
      --                      ends the options: after it, --dir is a word like any
                              other. A SUITE that starts with "-" must come after it
                              (suite-defaults -- write -odd KEY VALUE), so that -g,
                              the global domain of macOS defaults, is refused rather
                              than made a suite. TYPE keeps its place after --

    Every argument, and an imported FILE or standard input, must be UTF-8: anything
    else is a usage error that names the argument (counted from 1 after the command's
    name) or the byte offset in FILE, and nothing is written. A SUITE whose file is a
    symbolic link, a directory, a FIFO or a socket is refused (status 3), not
    reported missing.

    exit status: 0 ok, 1 suite or key not found, 2 usage, 3 I/O error, full disk
    (or quota, or file size limit), damaged file or refused file
    """

/// A failure with the exit status it calls for.
struct Failure: Error {
    var status: Int32
    var message: String

    static func usage(_ message: String) -> Failure { Failure(status: 2, message: message + "\n\n" + usageText) }
    static func notFound(_ message: String) -> Failure { Failure(status: 1, message: message) }

    init(status: Int32, message: String) {
        self.status = status
        self.message = message
    }

    init(_ error: SuiteError) {
        switch error.code {
        case .invalidSuiteName, .invalidKey, .invalidValue, .valueTooLarge, .suiteTooLarge, .typeMismatch, .encodingFailed:
            self.init(status: 2, message: error.message)
        case .notFound:
            self.init(status: 1, message: error.message)
        default:
            self.init(status: 3, message: [error.path, error.message].compactMap { $0 }.joined(separator: ": "))
        }
    }
}

/// Input that is not UTF-8, and where it stops being UTF-8.
struct NotUTF8: Error {
    /// The offset of the first byte that is not part of valid UTF-8.
    var offset: Int
}

/// The text `bytes` spell, checked: the repairing decoders (`CommandLine.arguments`,
/// `String(decoding:as:)`) would turn bytes that are not UTF-8 into U+FFFD, and the
/// command would store what it was not given.
func utf8Text(_ bytes: some Collection<UInt8>) throws(NotUTF8) -> String {
    if let text = String(validating: bytes, as: UTF8.self) { return text }
    // Only for the message: the decoder walks to the first byte that fails.
    var parser = Unicode.UTF8.ForwardParser()
    var iterator = bytes.makeIterator()
    var offset = 0
    while case .valid(let scalar) = parser.parseScalar(from: &iterator) { offset += scalar.count }
    throw NotUTF8(offset: offset)
}

/// The command's arguments, read from the raw `argv` and each checked to be UTF-8.
func commandLineArguments() throws(Failure) -> [String] {
    var arguments: [String] = []
    for index in 1..<Int(CommandLine.argc) {
        guard let pointer = CommandLine.unsafeArgv[index] else { break }
        let bytes = UnsafeRawBufferPointer(start: pointer, count: strlen(pointer))
        do {
            arguments.append(try utf8Text(bytes))
        } catch {
            throw .usage("argument \(index) (\"\(String(decoding: bytes, as: UTF8.self))\") is not UTF-8 at byte \(error.offset); "
                         + "suite names, keys, values and paths must be UTF-8 text. Nothing was written.")
        }
    }
    return arguments
}

struct Invocation {
    var directory: URL?
    var options = Suite.Options()
    var words: [String] = []
    /// Whether the suite name, the word after the command, came after `--`.
    var suiteNameAfterOptions = false

    init(_ arguments: [String]) throws(Failure) {
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            if !optionsEnded && argument == "--dir" {
                guard index + 1 < arguments.count else { throw .usage("--dir needs a directory") }
                directory = URL(fileURLWithPath: arguments[index + 1], isDirectory: true)
                index += 2
                continue
            }
            if !optionsEnded && argument == "--timeout" {
                guard index + 1 < arguments.count, let seconds = Double(arguments[index + 1]), seconds >= 0, seconds < 1e9 else {
                    throw .usage("--timeout needs a number of seconds")
                }
                options.lockTimeout = .milliseconds(Int64((seconds * 1000).rounded()))
                index += 2
                continue
            }
            if !optionsEnded && argument.hasPrefix("--dir=") {
                directory = URL(fileURLWithPath: String(argument.dropFirst(6)), isDirectory: true)
            } else if !optionsEnded && argument == "--" {
                optionsEnded = true
            } else {
                if words.count == 1 { suiteNameAfterOptions = optionsEnded }
                words.append(argument)
            }
            index += 1
        }
    }

    /// Opens the suite named by the word after the command. A name, or a file at
    /// NAME.suite, that cannot be a suite is refused before anything is opened or
    /// created; with `mustExist`, a missing suite is "not found" rather than created.
    func suite(_ name: String, mustExist: Bool) throws -> Suite {
        if name.hasPrefix("-") && !suiteNameAfterOptions {
            throw Failure.usage("\(name) looks like an option, and suite-defaults has none by that name; put -- before a suite name that starts with \"-\" (suite-defaults -- write -odd KEY VALUE)")
        }
        if try !Suite.checkExists(named: name, directory: directory) && mustExist {
            throw Failure.notFound("suite \(name) not found in \((directory ?? Suite.defaultDirectory()).path)")
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
    guard !words.isEmpty else { throw Failure.usage("no command given") }
    let command = words.removeFirst()
    func arguments(_ range: ClosedRange<Int>, _ shape: String) throws -> [String] {
        guard range.contains(words.count) else { throw Failure.usage("\(command) takes \(shape)") }
        return words
    }

    switch command {
    case "read":
        let given = try arguments(1...2, "SUITE [KEY]")
        let suite = try invocation.suite(given[0], mustExist: true)
        try suite.reload()
        if given.count == 2 {
            guard let value = suite.storedValue(forKey: given[1]) else {
                throw Failure.notFound("key \(given[1]) not found in suite \(given[0])")
            }
            print(printable(value))
        } else {
            print(SuiteValue.dictionary(suite.storedValues()).jsonText(style: .plain, pretty: true))
        }

    case "write":
        guard words.count == 3 || words.count == 4 else { throw Failure.usage("write takes SUITE KEY [TYPE] VALUE") }
        var kind = SuiteValue.Kind.string
        if words.count == 4 {
            let flag = words[2].drop(while: { $0 == "-" })
            guard words[2].hasPrefix("-"), let named = typeFlags[String(flag)] else {
                throw Failure.usage("unknown type \(words[2]); use --string, --int, --double, --bool, --date, --data or --json")
            }
            kind = named
        } else if words[2].hasPrefix("--"), typeFlags[String(words[2].dropFirst(2))] != nil {
            throw Failure.usage("\(words[2]) needs a value after it")
        }
        let value = try SuiteValue(parsing: words[words.count - 1], as: kind)
        try invocation.suite(words[0], mustExist: false).setValue(value, forKey: words[1])

    case "delete":
        let given = try arguments(1...2, "SUITE [KEY]")
        let suite = try invocation.suite(given[0], mustExist: true)
        if given.count == 2 {
            guard suite.storedValue(forKey: given[1]) != nil else {
                throw Failure.notFound("key \(given[1]) not found in suite \(given[0])")
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
            throw Failure(status: 3, message: "cannot read \(given[1]): \(error.localizedDescription)")
        }
        let text: String
        do {
            text = try utf8Text(data)
        } catch {
            let source = given[1] == "-" ? "standard input" : given[1]
            throw Failure(status: 2, message: "\(source) is not UTF-8 at byte \(error.offset); an import must be UTF-8 JSON text. Nothing was written.")
        }
        try invocation.suite(given[0], mustExist: false).importJSON(text)

    case "help", "-h", "--help":
        print(usageText)

    default:
        throw Failure.usage("unknown command \(command)")
    }
}

// Past RLIMIT_FSIZE (ulimit -f) a write would kill the process with SIGXFSZ; ignored,
// the write fails with EFBIG, which the library cuts back and reports as `.noSpace`.
signal(SIGXFSZ, SIG_IGN)

do {
    try run(try Invocation(commandLineArguments()))
} catch let failure as Failure {
    FileHandle.standardError.write(Data("suite-defaults: \(failure.message)\n".utf8))
    exit(failure.status)
} catch let error as SuiteError {
    let failure = Failure(error)
    FileHandle.standardError.write(Data("suite-defaults: \(failure.message)\n".utf8))
    exit(failure.status)
} catch {
    FileHandle.standardError.write(Data("suite-defaults: \(error)\n".utf8))
    exit(3)
}
