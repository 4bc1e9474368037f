import Foundation
import Glibc
import Testing
import TestSupport
import ToolSupport
@testable import SuiteDefaults

/// The third hostile round: the windowed reading of a suite file, the single-set
/// commit at a slot, the reused transaction and the default directory built from strings.
@Suite("Hostile round three")
struct HostileRoundThreeTests {
    // MARK: Reused transactions

    /// A block may keep its transaction weakly (a delegate, a cache): once the block
    /// returned, the handle must be dead, as before the store reused transactions. A
    /// reused object made the stale handle the next update's transaction, so a write
    /// through it went silently into a later, unrelated commit.
    @Test func aWeakHandleFromAnEndedUpdateWritesNothingIntoTheNext() throws {
        let directory = TemporaryDirectory()
        let suite = try Suite(named: "weak", directory: directory.url)
        weak var stale: SuiteTransaction?
        try suite.update { transaction in
            stale = transaction
            try transaction.set(1, forKey: "first")
        }
        try suite.update { transaction in
            // Code that believes it holds a dead handle (or the previous block's).
            if let stale, stale !== transaction { return }
            try stale?.set("leaked", forKey: "from.the.first.update")
            try transaction.set(2, forKey: "second")
        }
        #expect(suite.storedValue(forKey: "from.the.first.update") == nil,
                "a handle kept from an ended update wrote into a later update's commit")
        #expect(stale == nil, "the ended transaction stays alive for a weak handle to reach")
    }

    /// The same from another thread: a handle kept weakly by a block is used from a
    /// second thread while the first runs its next update. With a reused transaction
    /// both threads write the same object, unsynchronized.
    @Test func aWeakHandleUsedFromAnotherThreadReachesNoOpenTransaction() throws {
        let directory = TemporaryDirectory()
        let suite = try Suite(named: "weak-thread", directory: directory.url)
        final class Box: @unchecked Sendable { weak var transaction: SuiteTransaction? }
        let box = Box()
        try suite.update { transaction in
            box.transaction = transaction
            try transaction.set(0, forKey: "seed")
        }
        let inside = DispatchSemaphore(value: 0), written = DispatchSemaphore(value: 0)
        let other = Thread {
            _ = inside.wait(timeout: .now() + 10)
            // Not this thread's transaction, and its block ended long ago.
            if let handle = box.transaction { try? handle.set("from another thread", forKey: "intruder") }
            written.signal()
        }
        other.start()
        try suite.update { transaction in
            inside.signal()
            #expect(written.wait(timeout: .now() + 10) == .success)
            try transaction.set(1, forKey: "mine")
        }
        #expect(suite.storedValue(forKey: "intruder") == nil,
                "another thread wrote into this thread's open transaction through a stale handle")
    }
}
