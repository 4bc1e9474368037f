import Foundation
import Glibc
@_spi(Tools) import SuiteDefaults
import ToolSupport

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
