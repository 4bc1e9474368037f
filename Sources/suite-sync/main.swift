// suite-sync: mirrors suites through etcd (Docs/Sync.md).
import ChildProcess
import Foundation
import SuiteDefaults
import SuiteSync
import ToolSupport

let syntax = CommandLineSyntax(
    synopsis: ["suite-sync --endpoints URL[,URL...] --prefix PREFIX [--dir DIR] [--once] [--json] SUITE..."],
    arguments: [CommandLineArgument("SUITE", help: "a suite to mirror, under PREFIX/SUITE/ in etcd")],
    options: [
        .value("--endpoints", "URLS", help: "etcd's client URLs, comma-separated (http:// or https://)"),
        .value("--prefix", "PREFIX", help: "the etcd key prefix, /suite-defaults/alice: keys are PREFIX/SUITE/KEY"),
        .value("--dir", "DIR", help: """
            the suite directory (default: $SUITE_DEFAULTS_DIR,
            $XDG_CONFIG_HOME/suite-defaults or ~/.config/suite-defaults)
            """),
        .flag("--once", help: "reconcile every suite with etcd, then exit"),
        .flag("--json", help: "status lines as JSON objects on standard output (never values)"),
        .value("--user", "USER", help: "the etcd user (with --password-file)"),
        .value("--password-file", "FILE", help: "a file whose first line is the etcd user's password"),
        .value("--cacert", "FILE", help: "the PEM certificate authorities to trust for https endpoints"),
    ],
    notes: "Runs until SIGINT or SIGTERM. Exit status: 0 stopped, 2 usage, 3 a failure retrying cannot mend."
)

let commandLine = syntax.parseCommandLine()
let configuration: SuiteMirror.Configuration
do {
    guard let endpoints = commandLine.value("--endpoints") else { throw commandLine.usageError("missing --endpoints") }
    guard let prefix = commandLine.value("--prefix") else { throw commandLine.usageError("missing --prefix") }
    guard !commandLine.arguments.isEmpty else { throw commandLine.usageError("name at least one suite") }
    var credentials: EtcdCredentials?
    switch (commandLine.value("--user"), commandLine.value("--password-file")) {
    case (let user?, let file?): credentials = try EtcdCredentials(name: user, passwordFile: file)
    case (nil, nil): credentials = nil
    default: throw commandLine.usageError("--user and --password-file go together")
    }
    var etcd = try EtcdConfiguration(endpointList: endpoints, credentials: credentials)
    etcd.certificateAuthorityFile = commandLine.value("--cacert")
    configuration = SuiteMirror.Configuration(
        etcd: etcd, prefix: prefix,
        directory: commandLine.value("--dir").map { URL(fileURLWithPath: $0, isDirectory: true) },
        suites: commandLine.arguments)
} catch let error as EtcdError {
    ToolError.usage("\(error)\n\n\(syntax.help)").exit()
} catch {
    ToolError(error).exit()
}

let json = commandLine.isSet("--json")
let mirror: SuiteMirror
do {
    mirror = try SuiteMirror(configuration: configuration) { event in
        if json {
            Output.line(event.jsonLine)
        } else if event.isProblem {
            Output.errorLine("suite-sync: \(event.humanLine)")
        } else {
            Output.line(event.humanLine)
        }
    }
} catch let error as MirrorFailure {
    ToolError.usage(error.message).exit()
} catch {
    ToolError(error).exit()
}

// SIGINT and SIGTERM stop it: every state file is always whole, so exiting at once is safe.
TerminationSignals.handle { _ in exit(0) }

let once = commandLine.isSet("--once")
let finished = DispatchSemaphore(value: 0)
Task {
    do {
        try await mirror.run(once: once)
        exit(0)
    } catch {
        let message = (error as? MirrorFailure)?.message ?? "\(error)"
        if json { Output.line(MirrorEvent.error(message + "; stopping").jsonLine) }
        ToolError(status: 3, message: message).exit()
    }
}
dispatchMain()
