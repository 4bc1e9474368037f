import ChildProcess
import Foundation
import Glibc
import SuiteDefaults

/// A full disk: a small tmpfs when this process may mount one, else the file size
/// limit (RLIMIT_FSIZE), which the file system enforces the same way. Writes must
/// fail with a clear SuiteError, nothing written before may be lost, and writes must
/// succeed again once there is room.
enum DiskFullScenario {
    static func run(_ stress: StressRun) throws -> [ScenarioResult] {
        let options = stress.options
        let rounds = options.count(options.iterations, quick: 5, normal: 20)
        var result = ScenarioResult(scenario: "disk-full")
        var onTmpfs = 0, newSuitesRefused = 0
        try timed({ result in
            for round in 0..<rounds {
                let directory = stress.freshDirectory("full-\(round)")
                let mounted = mount("tmpfs", directory.path, "tmpfs", 0, "size=256k,mode=0700") == 0
                defer { if mounted { umount2(directory.path, Int32(MNT_DETACH)) } }
                if mounted { onTmpfs += 1 }
                // What fills the disk besides the suite, to be removed to make room.
                let filler = directory.appendingPathComponent("filler")
                if mounted { try Data(count: 48 << 10).write(to: filler) }
                var limit: [String: String] = [:]
                if !mounted {
                    // Start from a suite with some data, then cap the file's size above it.
                    let suite = try Suite(named: "full", directory: directory)
                    for index in 0..<20 { try suite.set(String(repeating: "s", count: 500), forKey: "seed.\(index)") }
                    limit["file-size-limit"] = "\(20_000 + Int(round) * 1_000)"
                }
                let filling = try stress.worker("fill", in: directory, ["suite": "full", "size": "2000"].merging(limit) { $1 })
                let end = filling.line(startingWith: "error", within: .seconds(600))
                if !filling.endedCleanly() { result.crashed += 1 }
                let acks = filling.lines.filter { $0.hasPrefix("ack ") }.count
                result.operations += acks + 1
                if end?.hasPrefix("error noSpace") == true {
                    result.errors += 1
                } else {
                    result.fail("round \(round): the write past the limit did not fail with noSpace: \(end ?? "no answer")")
                }
                // A new suite on the full disk: its lock file's page cannot be
                // allocated, which must be the same clear error, not a SIGBUS.
                if mounted {
                    // The open itself fails (the worker then exits with status 3).
                    let fresh = try stress.worker("try-set", in: directory, ["suite": "new-\(round)", "key": "k", "size": "10"])
                    result.operations += 1
                    let ended = fresh.wait(timeout: .seconds(60))
                    if fresh.standardError.contains("SuiteError.noSpace") || fresh.lines.contains(where: { $0.hasPrefix("error noSpace") }) {
                        result.errors += 1
                        newSuitesRefused += 1
                    } else {
                        result.fail("round \(round): creating a suite on the full disk did not fail with noSpace: \(fresh.lines) \(fresh.standardError)")
                    }
                    if case .signaled? = ended { result.crashed += 1 }
                }
                // Nothing acknowledged was lost.
                let stored = try Suite(named: "full", directory: directory).storedValues()
                for index in 0..<acks where stored["fill.\(index)"] != .string(String(repeating: "x", count: 2000)) {
                    result.lost += 1
                }
                // Room again: the write goes through.
                if mounted { try FileManager.default.removeItem(at: filler) }
                let retry = try stress.worker("try-set", in: directory, ["suite": "full", "key": "after", "size": "2000"])
                result.operations += 1
                if retry.line(startingWith: "ok") == nil {
                    result.fail("round \(round): writing failed again with room: \(retry.lines.last ?? "")")
                }
                if !retry.endedCleanly() { result.crashed += 1 }
            }
        }, &result)
        result.figure("rounds", rounds)
        result.figure("on_tmpfs", onTmpfs)
        result.figure("new_suites_refused", newSuitesRefused)
        if result.lost > 0 { result.fail("\(result.lost) acknowledged writes were lost") }
        return [result]
    }
}
