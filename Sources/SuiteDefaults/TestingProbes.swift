/// What tests ask of the library's state that nothing public shows, for the test
/// worker, which runs scenarios in a process of its own and cannot import this module
/// `@testable` (a release build is not compiled for testing).
@_spi(Testing)
public enum SuiteTestingProbes {
    /// Whether `suite`'s commits skip their files' status calls while no event arrives
    /// (`SuiteStore.skipsFileStatusWhileUnchanged`).
    public static func skipsFileStatusWhileUnchanged(_ suite: Suite) -> Bool {
        suite.store.skipsFileStatusWhileUnchanged
    }

    /// The paths of the directories the change watcher watches now.
    public static var watchedDirectories: [String] { ChangeWatcher.shared.watchedDirectories }

    /// In a forked child: the change watcher's state inherited from the parent (its
    /// inotify instance and timer) let go of now (`ChangeWatcher.forgetStateInheritedByFork`).
    public static func forgetStateInheritedByFork() { ChangeWatcher.shared.forgetStateInheritedByFork() }
}
