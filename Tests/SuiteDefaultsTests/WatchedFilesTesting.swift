import ChildProcess
import Foundation
import Glibc
import Testing
import TestSupport
@_spi(Testing) @testable import SuiteDefaults

/// What tests of a writer's watched files share (`FileChangeCounter`): a suite written
/// until its commits skip their files' status calls, and a read by a new process.
protocol WatchedFilesTesting {
    var directory: TemporaryDirectory { get }
}

extension WatchedFilesTesting {
    func path(_ name: String, lock: Bool = false) -> String {
        directory.file(name + (lock ? ".suite.lock" : ".suite")).path
    }

    /// A suite written twice: the first commit checks both files with status calls,
    /// after which the next commit skips them while no event arrives.
    func writer(_ name: String, options: Suite.Options = .init()) throws -> Suite {
        let suite = try Suite(named: name, directory: directory.url, options: options)
        try suite.set(1, forKey: "first")
        try suite.set(2, forKey: "second")
        #expect(suite.store.skipsFileStatusWhileUnchanged, "the short path is not taken, so this test proves nothing")
        return suite
    }

    /// What a new process reads for `key`: "value …" or "absent".
    func read(_ name: String, _ key: String) throws -> String {
        let worker = try startWorker("get", in: directory, suite: name, ["key": key])
        defer { _ = worker.kill() }
        let line = worker.waitForLine(timeout: .seconds(60)) { $0.hasPrefix("value") || $0.hasPrefix("absent") } ?? "no answer"
        worker.expectSuccess()
        return line
    }

    /// `renameat2(RENAME_EXCHANGE)`, through the C library's symbol.
    func exchange(_ one: String, _ other: String) -> Bool {
        typealias RenameAt2 = @convention(c) (CInt, UnsafePointer<CChar>, CInt, UnsafePointer<CChar>, CUnsignedInt) -> CInt
        guard let symbol = dlsym(nil, "renameat2") else { return false }
        return unsafeBitCast(symbol, to: RenameAt2.self)(AT_FDCWD, one, AT_FDCWD, other, 2) == 0
    }

    /// Once the lock file's name leads to another file: a newcomer holds that one, and
    /// a write of `suite` (whose lock timeout is short) must wait for it, not write
    /// beside it; with the newcomer gone, the write is where a new process reads.
    func expectAWriteWaitsForANewcomer(_ suite: Suite, _ name: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let holder = try startWorker("hold-lock", in: directory, suite: name)
        defer { _ = holder.kill() }
        holder.expectLine(startingWith: "holding", sourceLocation: sourceLocation)
        #expect(sourceLocation: sourceLocation) {
            try suite.set(3, forKey: "third")
        } throws: { ($0 as? SuiteError)?.code == .lockTimeout }
        holder.kill()
        try suite.set(4, forKey: "third")
        #expect(try read(name, "third") == "value 4", sourceLocation: sourceLocation)
    }
}
