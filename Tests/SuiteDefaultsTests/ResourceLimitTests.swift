import ChildProcess
import Foundation
import Glibc
import Testing
import TestSupport
@testable import SuiteDefaults

@Suite("Full disks and read-only places", .serialized)
struct ResourceLimitTests {
    let directory = TemporaryDirectory()

    @Test func aFullDiskFailsTheWriteAndLosesNothing() throws {
        do {
            let suite = try Suite(named: "full", directory: directory.url)
            for index in 0..<50 { try suite.set("value \(index)", forKey: "k\(index)") }
        }
        let before = directory.bytes(of: "full.suite")!
        // RLIMIT_FSIZE makes the file system refuse to grow the file, as a full disk does.
        let limit = ["file-size-limit": "\(before.count + 300)", "key": "big"]
        let refused = try startWorker("try-set", in: directory, suite: "full", limit.merging(["size": "2000"]) { $1 })
        let line = refused.expectLine(startingWith: "error")
        refused.expectSuccess()
        #expect(line == "error noSpace errno \(EFBIG)")
        #expect(directory.bytes(of: "full.suite") == before, "the failed write was cut off again")

        let small = try startWorker("try-set", in: directory, suite: "full", limit.merging(["size": "10"]) { $1 })
        small.expectLine(startingWith: "ok")
        small.expectSuccess()
        let freed = try startWorker("try-set", in: directory, suite: "full", ["key": "big", "size": "2000"])
        freed.expectLine(startingWith: "ok")
        freed.expectSuccess()

        let suite = try Suite(named: "full", directory: directory.url)
        #expect(suite.string(forKey: "big")?.count == 2000)
        for index in 0..<50 where suite.string(forKey: "k\(index)") != "value \(index)" {
            Issue.record("k\(index) was lost")
        }
    }

    /// Runs the worker as another user when the tests run as root (who ignores modes).
    func asUnprivileged(_ path: String) -> [String: String] {
        guard geteuid() == 0 else { return [:] }
        _ = chmod(directory.path, 0o711)
        _ = chown(path, 65534, 65534)
        return ["as-uid": "65534"]
    }

    @Test func aReadOnlyDirectoryRefusesANewSuite() throws {
        let place = directory.file("readonly")
        #expect(mkdir(place.path, 0o500) == 0)
        // The suite opens for reading (there is nothing to read), and the write is refused.
        let worker = try startWorker("try-set", at: place, suite: "prefs", ["key": "k", "value": "v"].merging(asUnprivileged(place.path)) { $1 })
        worker.expectLine(startingWith: "error readOnly")
        worker.expectSuccess()
        #expect((try? FileManager.default.contentsOfDirectory(atPath: place.path)) == [])
    }

    @Test func readOnlyFilesCanBeReadButNotWritten() throws {
        let place = directory.file("frozen")
        do {
            let suite = try Suite(named: "prefs", directory: place)
            try suite.set("kept", forKey: "k")
        }
        let unprivileged = asUnprivileged(place.path)
        for name in ["prefs.suite", "prefs.suite.lock"] {
            let path = place.appendingPathComponent(name).path
            if geteuid() == 0 { _ = chown(path, 65534, 65534) }
            _ = chmod(path, 0o400)
        }
        let before = try Data(contentsOf: place.appendingPathComponent("prefs.suite"))
        let reader = try startWorker("get", at: place, suite: "prefs", ["key": "k"].merging(unprivileged) { $1 })
        reader.expectLine(startingWith: "value \"kept\"")
        reader.expectSuccess()
        let writer = try startWorker("try-set", at: place, suite: "prefs", ["key": "k", "value": "changed"].merging(unprivileged) { $1 })
        writer.expectLine(startingWith: "error readOnly")
        writer.expectSuccess()
        #expect(try Data(contentsOf: place.appendingPathComponent("prefs.suite")) == before)
    }
}

