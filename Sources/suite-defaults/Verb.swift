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
        Verb(names: ["export"], forms: ["export SUITE"], summary: """
            every stored value as typed JSON, to standard output,
            defaults marked as such. See help export
            """, details: """
            One JSON object of the keys, sorted, that import reads back to the same
            values, types and bytes: data is {"$data": base64}, a date {"$date": ...},
            encoded JSON {"$json": ...}. A first-access default (stored by a program's
            setIfAbsent, say, rather than chosen) is "KEY": {"$default": VALUE}, so
            that import stores it as a default again; every other value is written as
            it always was.
            """),
        Verb(names: ["import"], forms: ["import SUITE FILE"], summary: """
            replace the suite's contents with FILE (- for stdin),
            defaults as defaults. See help import
            """, details: """
            FILE is what export writes, UTF-8 JSON, and replaces everything stored in
            one transaction. "KEY": {"$default": VALUE} stores VALUE as a first-access
            default, every other member as a choice; an export without such marks
            imports every value as a choice. A "$default" anywhere else (inside a
            value, doubled, alone), bad JSON, or a key or value no write takes is a
            usage error (naming the key of a bad member), and nothing is written.
            """),
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
        // The pointer to this very help is for the whole help only.
        let summary = summary.split(separator: "\n").joined(separator: " ").replacingOccurrences(of: " See help \(names[0])", with: "")
        text += "\n\n" + summary
        if let details { text += "\n\n" + details }
        return text + "\n\n" + exitStatuses
    }
}

let exitStatuses = """
    exit status: 0 ok, 1 suite or key not found, 2 usage, 3 I/O error, full disk
    (or quota, or file size limit), damaged file, refused file, or a lock held too long
    """
