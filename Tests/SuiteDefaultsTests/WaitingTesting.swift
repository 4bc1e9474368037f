import Foundation
@testable import SuiteDefaults

/// Waits (with a deadline) for `done`; true when it held.
func eventually(_ seconds: Int = 10, _ done: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while !done() {
        if ContinuousClock.now >= deadline { return done() }
        usleep(1_000)
    }
    return true
}

/// Whether this process's change watcher watches the directory at `url`.
func isWatched(_ url: URL) -> Bool {
    let path = PathNormalization.standardized(url.path)
    return ChangeWatcher.shared.watchedDirectories.contains { PathNormalization.standardized($0) == path }
}
