import Foundation

/// `suite-bench [--quick] [--json] [--dir DIR] [--svg FILE]`
struct BenchOptions: Sendable {
    var quick = false
    var json = false
    var directory: URL?
    var svg: URL?
    /// `-h` or `--help`: print the usage and exit 0.
    var help = false

    static let usage = "usage: suite-bench [--quick] [--json] [--dir DIR] [--svg FILE]"

    init(_ arguments: [String]) throws(UsageError) {
        var index = 0
        while index < arguments.count {
            switch arguments[index] {
            case "--quick": quick = true
            case "--json": json = true
            case "-h", "--help": help = true
            case "--dir", "--svg":
                guard index + 1 < arguments.count else { throw UsageError("\(arguments[index]) needs a path") }
                let url = URL(fileURLWithPath: arguments[index + 1])
                if arguments[index] == "--dir" { directory = url } else { svg = url }
                index += 1
            default:
                throw UsageError("unknown argument \(arguments[index])")
            }
            index += 1
        }
    }

    /// A sample count: fewer with --quick.
    func samples(_ normal: Int, quick quickCount: Int) -> Int { quick ? quickCount : normal }
}

struct UsageError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}
