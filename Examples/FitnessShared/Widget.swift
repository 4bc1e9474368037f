import ChildProcess
import Dispatch
import Foundation
import Glibc
import SuiteDefaults
import ToolSupport

/// The loop every widget runs: print the rendered line, then print it again on every
/// change of the keys it shows, from any process, until SIGTERM or SIGINT. What
/// keeps changes from arriving is printed to standard error, and the loop goes on.
///
///     WIDGET [--dir DIR] [--once] [--timestamps]
public enum Widget {
    /// The options of every widget.
    public static let options = [
        FitnessSuite.directoryOption,
        CommandLineOption.flag("--once", help: "render once and exit"),
        CommandLineOption.flag("--timestamps", help: """
            start each line with CLOCK_MONOTONIC nanoseconds at the moment of rendering,
            for measuring how long a change took to arrive
            """),
    ]

    /// A widget program: reads its command line, opens the suite and runs the loop.
    public static func run(_ observation: SuiteObservation, render: @escaping @Sendable (Suite) -> String) -> Never {
        let syntax = CommandLineSyntax(synopsis: ["\(Output.programName) [--dir DIR] [--once] [--timestamps]"], options: options)
        let commandLine = syntax.parseCommandLine()
        if let unexpected = commandLine.arguments.first { commandLine.usageError("unknown argument \(unexpected)").exit() }
        run(observation, suite: FitnessSuite.open(commandLine), commandLine: commandLine, render: render)
    }

    /// The loop, on `suite`, with `--once` and `--timestamps` as `commandLine` gives them.
    public static func run(
        _ observation: SuiteObservation, suite: Suite, commandLine: ParsedCommandLine,
        render: @escaping @Sendable (Suite) -> String
    ) -> Never {
        let once = commandLine.isSet("--once")
        let timestamps = commandLine.isSet("--timestamps")
        let show: @Sendable () -> Void = {
            let line = render(suite)
            Output.line(timestamps ? "\(monotonicNanoseconds()) \(line)" : line)
        }
        if once {
            show()
            exit(0)
        }
        TerminationSignals.handle { _ in exit(0) }
        // Observe first, then render: a change in between renders again, none is missed.
        let token: SuiteCancellable
        do {
            token = try observation.start(in: suite, onError: { error in
                Output.errorLine("\(Output.programName): not receiving changes: \(error)")
            }, onChange: { _ in show() })
        } catch {
            ToolError(status: 3, message: "cannot watch for changes: \(error)").exit()
        }
        show()
        withExtendedLifetime(token) { dispatchMain() }
    }
}
