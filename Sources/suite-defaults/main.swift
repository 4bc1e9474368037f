// suite-defaults: read and write suites from the command line, like macOS `defaults`.
import Foundation
import SuiteDefaults

let usageText = """
    usage: suite-defaults [--dir DIR] COMMAND ...

      read SUITE [KEY]        print one value, or every stored value as JSON
      write SUITE KEY [TYPE] VALUE
                              store VALUE; TYPE is one of --string (the default),
                              --int, --double, --bool, --date (ISO 8601),
                              --data (base64) or --json (typed JSON, for arrays
                              and dictionaries); -int, -float, -bool ... work too
      delete SUITE [KEY]      remove one key, or every key of the suite
      list                    the suites in the directory
      export SUITE            every stored value as typed JSON, to standard output
      import SUITE FILE       replace the suite's contents with FILE (- for stdin)

      --dir DIR               the suite directory (default: $SUITE_DEFAULTS_DIR,
                              $XDG_CONFIG_HOME/suite-defaults or ~/.config/suite-defaults)

    exit status: 0 ok, 1 suite or key not found, 2 usage, 3 I/O error or damaged file
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

struct Invocation {
    var directory: URL?
    var words: [String] = []

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
            if !optionsEnded && argument.hasPrefix("--dir=") {
                directory = URL(fileURLWithPath: String(argument.dropFirst(6)), isDirectory: true)
            } else if !optionsEnded && argument == "--" {
                optionsEnded = true
            } else {
                words.append(argument)
            }
            index += 1
        }
    }

    func suite(_ name: String, mustExist: Bool) throws -> Suite {
        if mustExist && !Suite.exists(named: name, directory: directory) {
            try Suite.validate(name: name)
            throw Failure.notFound("suite \(name) not found in \((directory ?? Suite.defaultDirectory()).path)")
        }
        return try Suite(named: name, directory: directory)
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
        try invocation.suite(given[0], mustExist: false).importJSON(String(decoding: data, as: UTF8.self))

    case "help", "-h", "--help":
        print(usageText)

    default:
        throw Failure.usage("unknown command \(command)")
    }
}

do {
    try run(try Invocation(Array(CommandLine.arguments.dropFirst())))
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
