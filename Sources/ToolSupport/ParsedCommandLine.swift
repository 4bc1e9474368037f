/// A command line read by its `CommandLineSyntax`: the arguments, and the options given.
public struct ParsedCommandLine: Sendable {
    /// The arguments in order, options and `--` taken out.
    public var arguments: [String] = []
    /// How many of `arguments` came before `--`.
    public var argumentsBeforeEnd = 0
    /// Whether `-h` or `--help` asked for the help.
    public var wantsHelp = false
    var flags: Set<String> = []
    var values: [String: String] = [:]
    /// The help text, for usage errors found after parsing.
    let usage: String

    init(usage: String) {
        self.usage = usage
    }

    /// Whether the flag `name` was given.
    public func isSet(_ name: String) -> Bool { flags.contains(name) }

    /// The value given for `name`, as it was typed.
    public func value(_ name: String) -> String? { values[name] }

    /// The value given for `name`, converted; nil when the option was not given.
    ///
    /// - Throws: a usage error with `message` when `convert` refuses the value.
    public func value<Value>(_ name: String, _ convert: (String) -> Value?, else message: @autoclosure () -> String)
        throws(ToolError) -> Value? {
        guard let text = values[name] else { return nil }
        guard let value = convert(text) else { throw usageError(message()) }
        return value
    }

    /// The value given for `name`, converted.
    ///
    /// - Throws: a usage error when the option is missing or `convert` refuses its value.
    public func required<Value>(_ name: String, _ convert: (String) -> Value?) throws(ToolError) -> Value {
        guard let value = try value(name, convert, else: "\(name) has a value that does not fit: \(values[name] ?? "")") else {
            throw usageError("missing \(name)")
        }
        return value
    }

    /// A usage error: the message, then the help.
    public func usageError(_ message: String) -> ToolError {
        .usage(message + "\n\n" + usage)
    }
}
