import Synchronization
import SuiteDefaults

/// Collects the diagnostics of the suites in one test directory.
public final class DiagnosticsRecorder: Sendable {
    private final class Storage: Sendable {
        let diagnostics = Mutex<[SuiteDiagnostic]>([])
    }

    private let storage = Storage()
    private let token: SuiteCancellable

    public init(_ directory: TemporaryDirectory) {
        let path = directory.url.standardizedFileURL.path
        let storage = self.storage
        token = SuiteDiagnostics.observe { diagnostic in
            if diagnostic.directory == path { storage.diagnostics.withLock { $0.append(diagnostic) } }
        }
    }

    public var all: [SuiteDiagnostic] { storage.diagnostics.withLock { $0 } }
    public var kinds: [SuiteDiagnostic.Kind] { all.map(\.kind) }
}
