import Glibc

/// An option of a command line, declared as a value.
public struct CommandLineOption: Sendable {
    /// The option as it is typed, "--dir".
    public var name: String
    /// What its value stands for in the help, "DIR"; nil for a flag, which takes none.
    public var placeholder: String?
    /// What it does; a line break starts a line under the one before.
    public var help: String

    /// An option that is on or off.
    public static func flag(_ name: String, help: String) -> CommandLineOption {
        CommandLineOption(name: name, placeholder: nil, help: help)
    }

    /// An option with a value, given as `--name VALUE` or `--name=VALUE`; the last one given counts.
    public static func value(_ name: String, _ placeholder: String, help: String) -> CommandLineOption {
        CommandLineOption(name: name, placeholder: placeholder, help: help)
    }

    var shown: String { placeholder.map { "\(name) \($0)" } ?? name }
}

/// A positional argument, or a form of the arguments (a command and its words), for the help.
public struct CommandLineArgument: Sendable {
    public var name: String
    public var help: String

    public init(_ name: String, help: String) {
        self.name = name
        self.help = help
    }
}

/// What a program's command line may hold, declared as values: the parser reads
/// arguments by it, and the `--help` text is written from it.
///
/// Options may stand anywhere among the arguments until `--`, after which every word
/// is an argument. `-h` and `--help` ask for the help; in a program whose arguments
/// may start with "-", only before its first argument, so that they stay values
/// (`suite-defaults write S k -h` stores "-h").
public struct CommandLineSyntax: Sendable {
    /// The forms of the command line, each after "usage: ", starting with the program's name.
    public var synopsis: [String]
    public var arguments: [CommandLineArgument]
    public var options: [CommandLineOption]
    /// What `--` means to this program, for the help.
    public var endOfOptions: String
    /// Whether a word that starts with "-" but is no declared option is an argument
    /// (for programs whose arguments may start with "-"), rather than a usage error.
    public var takesUndeclaredOptionsAsArguments: Bool
    /// Text after the lists: what does not fit one option.
    public var notes: String?

    public init(synopsis: [String], arguments: [CommandLineArgument] = [], options: [CommandLineOption],
                endOfOptions: String = "ends the options: every word after it is an argument",
                takesUndeclaredOptionsAsArguments: Bool = false, notes: String? = nil) {
        self.synopsis = synopsis
        self.arguments = arguments
        self.options = options
        self.endOfOptions = endOfOptions
        self.takesUndeclaredOptionsAsArguments = takesUndeclaredOptionsAsArguments
        self.notes = notes
    }

    /// The `--help` text.
    public var help: String {
        var text = synopsis.enumerated().map { ($0.offset == 0 ? "usage: " : "       ") + $0.element }.joined(separator: "\n")
        let entries = arguments.map { ($0.name, $0.help) }
        let optionEntries = options.map { ($0.shown, $0.help) } + [("-h, --help", "print this help"), ("--", endOfOptions)]
        // The help column: after the longest name, unless a few long names would push it far right.
        let width = min((entries + optionEntries).map(\.0.count).max() ?? 0, 22)
        func list(_ entries: [(String, String)]) -> String {
            entries.map { name, help in
                let lines = help.split(separator: "\n", omittingEmptySubsequences: false)
                let indent = String(repeating: " ", count: width + 4)
                let first = name.count <= width ? "  " + name.padding(toLength: width + 2, withPad: " ", startingAt: 0) + lines[0]
                    : "  \(name)\n\(indent)\(lines[0])"
                return ([first] + lines.dropFirst().map { indent + $0 }).joined(separator: "\n")
            }.joined(separator: "\n")
        }
        if !entries.isEmpty { text += "\n\n" + list(entries) }
        text += "\n\n" + list(optionEntries)
        if let notes { text += "\n\n" + notes }
        return text
    }

    /// A usage error: the message, then the help.
    public func usageError(_ message: String) -> ToolError {
        .usage(message + "\n\n" + help)
    }

    /// Reads `arguments` (the program's, without its name) by this syntax.
    public func parse(_ arguments: [String]) throws(ToolError) -> ParsedCommandLine {
        var parsed = ParsedCommandLine(usage: help)
        var index = 0
        while index < arguments.count {
            let word = arguments[index]
            index += 1
            if word == "--" {
                parsed.arguments += arguments[index...]
                return parsed
            }
            let isValue = takesUndeclaredOptionsAsArguments && !parsed.arguments.isEmpty
            if (word == "-h" || word == "--help") && !isValue {
                parsed.wantsHelp = true
                return parsed
            }
            let name = String(word.prefix { $0 != "=" })
            guard word.hasPrefix("-"), word.count > 1, let option = options.first(where: { $0.name == name }) else {
                if word.hasPrefix("-") && word.count > 1 && !takesUndeclaredOptionsAsArguments {
                    throw usageError("unknown option \(word)")
                }
                parsed.arguments.append(word)
                parsed.argumentsBeforeEnd += 1
                continue
            }
            let attached = word.count > name.count ? String(word.dropFirst(name.count + 1)) : nil
            if option.placeholder == nil {
                guard attached == nil else { throw usageError("\(name) takes no value") }
                parsed.flags.insert(name)
            } else if let attached {
                parsed.values[name] = attached
            } else {
                guard index < arguments.count else { throw usageError("\(name) needs a value: \(option.shown)") }
                parsed.values[name] = arguments[index]
                index += 1
            }
        }
        return parsed
    }

    /// Reads the program's arguments, each checked to be UTF-8. On `-h` or `--help` it
    /// prints the help and exits 0; on a usage error it exits 2 with the message and
    /// the help.
    public func parseCommandLine() -> ParsedCommandLine {
        let arguments: [String]
        do {
            arguments = try checkedArguments()
        } catch {
            usageError(error.message).exit()
        }
        let parsed: ParsedCommandLine
        do {
            parsed = try parse(arguments)
        } catch {
            error.exit()
        }
        if parsed.wantsHelp {
            Output.line(help)
            exit(0)
        }
        return parsed
    }
}
