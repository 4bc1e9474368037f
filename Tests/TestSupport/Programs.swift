import ChildProcess
import Foundation

/// What a program run to its end did.
public struct ProgramRun: Sendable {
    /// How it ended; nil if it had not ended by the deadline (it was killed then).
    public var status: ChildProcess.Termination?
    /// Its standard output, line by line.
    public var lines: [String]
    /// Everything it wrote to standard error.
    public var errors: String
}

/// Runs `program` with `arguments` to its end and returns how it ended and what it
/// wrote. `program` is one of the executables this package builds (see `Products`),
/// or, if it contains a slash, the path of any program.
///
/// `input`, if given, is written to the program's standard input, which is then
/// closed; `environment` is its whole environment (nil: this process's). A program
/// that has not ended by the deadline is killed, and its status is nil; either way
/// it is reaped before this returns.
public func run(program: String, _ arguments: [String], input: String? = nil, environment: [String: String]? = nil,
                within timeout: Duration = .seconds(60)) throws -> ProgramRun {
    let executable = program.contains("/") ? program : Products.path(program)
    let process = try ChildProcess(executable: executable, arguments: arguments, environment: environment)
    if let input { process.send(input) }
    process.closeInput()
    let status = process.wait(timeout: timeout)
    if status == nil { process.kill() }
    return ProgramRun(status: status, lines: process.lines, errors: process.standardError)
}
