import Foundation
import SuiteDefaults
import ToolSupport

/// The suite the fitness app and its widgets share, as an App Group would.
public enum FitnessSuite {
    public static let name = "group.com.example.fitness"

    /// The option every program of the family takes.
    public static let directoryOption = CommandLineOption.value("--dir", "DIR", help: """
        the suite directory (default: $SUITE_DEFAULTS_DIR,
        $XDG_CONFIG_HOME/suite-defaults or ~/.config/suite-defaults)
        """)

    /// Opens the suite in the directory `--dir DIR` names, else in the default location.
    public static func open(_ commandLine: ParsedCommandLine) -> Suite {
        let directory = commandLine.value(directoryOption.name).map { URL(fileURLWithPath: $0, isDirectory: true) }
        do {
            return try Suite(named: name, directory: directory)
        } catch {
            ToolError(status: 3, message: "cannot open the shared preferences: \(error)").exit()
        }
    }
}
