import ChildProcess
import Foundation
import Glibc
import SuiteDefaults

/// While two processes write and one observes, the suite's files are attacked as a
/// hostile member of its group could: header fields set to extremes, the lock file
/// cut short, deleted or given a second name, planted history files, and (in the
/// rounds that destroy on purpose) a FIFO or a symbolic link put where the data
/// file was. No process may crash or hang: every writer must go on acknowledging
/// writes once an attack is undone. In the rounds that destroy nothing, no
/// acknowledged write may be lost either.
enum HostileScenario {
    enum Attack: CaseIterable {
        case headerField, cutLockFile, deleteLockFile, linkLockFile, plantHistory, fifoAtData, symlinkAtData

        var destroys: Bool { self == .fifoAtData || self == .symlinkAtData }
    }

    static let extremes: [UInt64] = [0, 1, 31, 33, 0x7FFF_FFFF, 0xFFFF_FFFF, 1 << 61, (1 << 62) + 1, UInt64(Int64.max), UInt64.max - 1, UInt64.max]

    static func run(_ stress: StressRun) throws -> [ScenarioResult] {
        let options = stress.options
        let rounds = options.count(options.iterations, quick: 6, normal: 40)
        let attacksPerRound = options.quick ? 5 : 12
        var generator = SystemRandomNumberGenerator()
        var result = ScenarioResult(scenario: "hostile")
        var attacks = 0, hangs = 0, destructiveRounds = 0
        var byKind: [Attack: Int] = [:]
        try timed({ result in
            for round in 0..<rounds {
                let directory = stress.freshDirectory("hostile-\(round)")
                // Every other round destroys on purpose; the rest must lose nothing.
                let destructive = round % 2 == 1
                if destructive { destructiveRounds += 1 }
                let files = Files(directory: directory, suite: "target")
                // The watcher first: it must see every commit the writers make.
                let watcher = try stress.worker("watch", in: directory, ["suite": "target"])
                if watcher.line(startingWith: "ready") == nil { result.crashed += 1 }
                let writers = try (0..<2).map { index in
                    try stress.worker("ack-loop", in: directory, ["suite": "target", "prefix": "w\(index)", "compaction-slack": "2048"])
                }
                for writer in writers where writer.line(startingWith: "ready") == nil { result.crashed += 1 }
                for number in 0..<attacksPerRound {
                    let choices = Attack.allCases.filter { destructive || !$0.destroys }
                    let attack = choices.randomElement(using: &generator)!
                    attacks += 1
                    byKind[attack, default: 0] += 1
                    let undo = try files.perform(attack, number: number, using: &generator)
                    // Let the writers meet the attack, then undo it; each must then go on.
                    _ = progress(writers, lines: 50, within: .milliseconds(500))
                    undo()
                    if !progress(writers, lines: 1, within: .seconds(20)) {
                        hangs += 1
                        result.fail("round \(round): a writer made no progress after \(attack) was undone")
                    }
                }
                for writer in writers { writer.send("stop\n") }
                var acknowledged: [String: Int] = [:]
                for (index, writer) in writers.enumerated() {
                    for line in writer.lines where line.hasPrefix("ack ") {
                        let value = Int(line.dropFirst(4))!
                        acknowledged["w\(index).\(value)"] = value
                    }
                    if writer.line(startingWith: "stopped", within: .seconds(60)) == nil || !writer.endedCleanly() { result.crashed += 1 }
                }
                result.operations += acknowledged.count
                result.errors += writers.map { $0.lines.filter { $0.hasPrefix("error") }.count }.reduce(0, +)
                let suite = try Suite(named: "target", directory: directory)
                try suite.set(true, forKey: "stop")
                let summary = ChildProcess.fields(watcher.line(startingWith: "commits", within: .seconds(120)))
                if !watcher.endedCleanly() { result.crashed += 1 }
                let torn = (summary["order"] ?? 0) + (summary["wrong"] ?? 0)
                result.torn += torn
                if torn > 0 { result.fail("round \(round)\(destructive ? " (destructive)" : ""): \(torn) torn deliveries; the watcher said:\n\(watcher.standardError)") }
                if !destructive {
                    let stored = suite.storedValues()
                    let missing = acknowledged.filter { stored[$0.key] != .integer($0.value) }.count
                    result.lost += missing
                    if missing > 0 { result.fail("round \(round): \(missing) acknowledged writes are missing") }
                    if summary["mismatched"] != 0 { result.fail("round \(round): the watcher's model differs from the suite: \(summary)") }
                }
                stress.removeDirectory(directory)
            }
        }, &result)
        result.figure("attacks", attacks)
        result.figure("destructive_rounds", destructiveRounds)
        result.figure("hangs", hangs)
        for attack in Attack.allCases { result.figure("\(attack)", byKind[attack] ?? 0) }
        return [result]
    }

    /// Waits until every writer has said `lines` new things (acknowledgments or errors).
    private static func progress(_ writers: [ChildProcess], lines: Int, within timeout: Duration) -> Bool {
        writers.allSatisfy { writer in
            let seen = writer.lines.count
            return writer.waitForLines(timeout: timeout) { $0.count >= seen + lines }
        }
    }

    /// The suite's files, and the attacks on them.
    struct Files {
        let directory: URL
        let suite: String

        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        var lock: String { path(suite + ".suite.lock") }
        var data: String { path(suite + ".suite") }

        /// Runs `body` holding the suite's `flock` (waiting for it up to 10 s, then
        /// without it: a writer may hold it no longer than a commit).
        func holdingTheLock(_ body: () -> Void) {
            let descriptor = open(lock, O_RDWR | O_CLOEXEC)
            defer { if descriptor >= 0 { close(descriptor) } }
            let deadline = ContinuousClock.now + .seconds(10)
            while descriptor >= 0, flock(descriptor, LOCK_EX | LOCK_NB) != 0, ContinuousClock.now < deadline { usleep(100) }
            body()
        }

        /// Carries out an attack; returns what undoes it.
        func perform(_ attack: Attack, number: Int, using generator: inout SystemRandomNumberGenerator) throws -> () -> Void {
            switch attack {
            case .headerField:
                let offset = [0, 8, 16, 24, 32, 40, 48, 64].randomElement(using: &generator)!
                var value = HostileScenario.extremes.randomElement(using: &generator)!
                let fd = open(lock, O_WRONLY | O_CLOEXEC)
                if fd >= 0 {
                    _ = pwrite(fd, &value, 8, off_t(offset))
                    close(fd)
                }
                return {}
            case .cutLockFile:
                _ = truncate(lock, off_t([0, 8, 100, 4095].randomElement(using: &generator)!))
                return {}
            case .deleteLockFile:
                _ = unlink(lock)
                return {}
            case .linkLockFile:
                let second = path("second-name-\(number)")
                _ = link(lock, second)
                return { _ = unlink(second) }
            case .plantHistory:
                // A FIFO, a link and garbage where history files would be.
                let prefix = suite + ".suite.h."
                _ = mkfifo(path(prefix + "0000000000000001"), 0o600)
                _ = symlink("/etc/passwd", path(prefix + "0000000000000002"))
                _ = FileManager.default.createFile(atPath: path(prefix + "0000000000000003"), contents: Data("not a journal".utf8))
                return {}
            case .fifoAtData, .symlinkAtData:
                let aside = path("moved-\(number)")
                guard rename(data, aside) == 0 else { return {} }
                if attack == .fifoAtData { _ = mkfifo(data, 0o600) } else { _ = symlink(aside, data) }
                return {
                    // Put the data file back, unless a writer has replaced what was planted.
                    // Done holding the suite's lock, as a careful tool would: a writer's
                    // compaction that met the planted file exchanges names and then
                    // exchanges them back, and in between its new file has the name.
                    holdingTheLock {
                        var status = stat()
                        if lstat(data, &status) == 0, status.st_mode & S_IFMT != S_IFREG {
                            _ = rename(aside, data)
                        } else {
                            _ = unlink(aside)
                        }
                    }
                }
            }
        }
    }
}
