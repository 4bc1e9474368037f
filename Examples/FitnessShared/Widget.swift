import ChildProcess
import Dispatch
import Foundation
import Glibc
import SuiteDefaults

/// The loop every widget runs: print the rendered line, then print it again on every
/// change of the keys it shows, from any process, until SIGTERM or SIGINT.
///
///     WIDGET [--dir DIR] [--once] [--timestamps]
///
/// `--once` renders once and exits. `--timestamps` starts each line with
/// CLOCK_MONOTONIC nanoseconds at the moment of rendering, for measuring how long
/// a change took to arrive.
public enum Widget {
    public static func run(
        keys: [String], arguments: [String] = Array(CommandLine.arguments.dropFirst()), suite: Suite? = nil,
        render: @escaping @Sendable (Suite) -> String
    ) -> Never {
        var arguments = arguments
        let suite = suite ?? FitnessSuite.open(&arguments)
        let once = arguments.contains("--once")
        let timestamps = arguments.contains("--timestamps")
        if let unknown = arguments.first(where: { $0 != "--once" && $0 != "--timestamps" }) {
            Output.fail("unknown argument \(unknown); usage: [--dir DIR] [--once] [--timestamps]", status: 2)
        }
        let show: @Sendable () -> Void = {
            let line = render(suite)
            Output.line(timestamps ? "\(Output.monotonicNanoseconds()) \(line)" : line)
        }
        if once {
            show()
            exit(0)
        }
        TerminationSignals.handle { _ in exit(0) }
        // Observe first, then render: a change in between renders again, none is missed.
        let token: SuiteCancellable
        do {
            token = try suite.observe(keys: keys) { _ in show() }
        } catch {
            Output.fail("cannot watch for changes: \(error)", status: 3)
        }
        show()
        withExtendedLifetime(token) { dispatchMain() }
    }
}
