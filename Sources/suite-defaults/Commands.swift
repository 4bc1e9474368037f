import Foundation
import Glibc
@_spi(Tools) import SuiteDefaults
import ToolSupport

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
        do {
            try invocation.suite(name, mustExist: false).importJSON(text)
        } catch let error as SuiteError where ToolError.exitStatus(for: error.code) == 2 {
            // The library's message leaves the key out, and a long file's bad member is found by it.
            guard let key = error.key else { throw error }
            throw ToolError.usage("key \(lineKey(key)): \(error.message) Nothing was imported.")
        }

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
