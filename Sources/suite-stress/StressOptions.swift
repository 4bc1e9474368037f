import Foundation

/// The command line of a scenario run.
struct StressOptions: Sendable {
    var scenario = ""
    var processes: Int?
    var threads: Int?
    var iterations: Int?
    /// Seconds to go on repeating the scenario for; nil runs it once.
    var duration: Double?
    var directory: URL?
    var json = false
    var againstFoundation = false
    var quick = false
    /// `-h` or `--help`: print the usage and exit 0.
    var help = false

    static let usage = """
        usage: suite-stress SCENARIO [--processes N] [--threads T] [--iterations K] [--duration S]
                                     [--dir DIR] [--json] [--against foundation]
               suite-stress all [--quick] [--json]

        scenarios: counter, distinct-keys, first-access, readers, crash, corrupt, notify, disk-full, fuzz,
                   fork, hostile
        --duration S repeats the scenario, round after round, until S seconds have passed,
        and adds the rounds up; it stops at the first round that finds a failure.
        Each ends with one line: SCENARIO: OPS ops, LOST lost, TORN torn, ERRORS errors, SECONDS s
        The exit status is 1 when an invariant failed, 2 for a usage error.
        """

    init(_ arguments: [String]) throws(UsageError) {
        var index = 0
        func value(_ option: String) throws(UsageError) -> String {
            index += 1
            guard index < arguments.count else { throw UsageError("\(option) needs a value") }
            return arguments[index]
        }
        func positive(_ option: String) throws(UsageError) -> Int {
            guard let number = Int(try value(option)), number > 0 else { throw UsageError("\(option) needs a positive number") }
            return number
        }
        while index < arguments.count {
            switch arguments[index] {
            case "--processes": processes = try positive("--processes")
            case "--threads": threads = try positive("--threads")
            case "--iterations": iterations = try positive("--iterations")
            case "--duration":
                guard let seconds = Double(try value("--duration")), seconds > 0 else { throw UsageError("--duration needs seconds") }
                duration = seconds
            case "--dir": directory = URL(fileURLWithPath: try value("--dir"), isDirectory: true)
            case "--json": json = true
            case "--quick": quick = true
            case "-h", "--help": help = true
            case "--against":
                guard try value("--against") == "foundation" else { throw UsageError("--against takes foundation") }
                againstFoundation = true
            case let option where option.hasPrefix("-"):
                throw UsageError("unknown option \(option)")
            case let word:
                guard scenario.isEmpty else { throw UsageError("one scenario at a time; unexpected \(word)") }
                scenario = word
            }
            index += 1
        }
        guard help || !scenario.isEmpty else { throw UsageError("name a scenario") }
    }

    /// A count given on the command line, else the quick or the default one.
    func count(_ given: Int?, quick quickCount: Int, normal: Int) -> Int {
        given ?? (quick ? quickCount : normal)
    }
}

struct UsageError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}
