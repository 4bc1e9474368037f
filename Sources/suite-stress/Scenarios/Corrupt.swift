import ChildProcess
import Foundation
import Glibc
@_spi(Tools) import SuiteDefaults
import ToolSupport

/// While two processes write to a suite, its file is damaged: bytes flipped, the file
/// cut short, or garbage appended, at random offsets. No process may crash; the
/// damage must be detected and reported; every record the damage did not touch must
/// be kept; a damaged file is moved aside, not deleted.
enum CorruptScenario {
    enum Damage: CaseIterable {
        case flip, truncate, append
    }

    static func run(_ stress: StressRun) throws -> [ScenarioResult] {
        let options = stress.options
        let trials = options.count(options.iterations, quick: 150, normal: 500)
        var result = ScenarioResult(scenario: "corrupt")
        var random = SplitMix64(seed: UInt64(getpid()) &* 31)
        var detected = 0, healed = 0, movedAside = 0, acknowledged = 0
        try timed({ result in
            for trial in 0..<trials {
                let directory = stress.freshDirectory("corrupt-\(trial)")
                let name = "damaged"
                let suite = try Suite(named: name, directory: directory)
                let reports = DiagnosticCounter(directory: suite.directory.path)
                let writers = try (0..<2).map { index in
                    try stress.worker("ack-loop", in: directory, ["suite": name, "prefix": "w\(index)",
                                                                  "compaction-slack": trial % 3 == 0 ? "512" : "65536"])
                }
                for writer in writers where writer.line(startingWith: "ready") == nil { result.crashed += 1 }
                for writer in writers { _ = writer.line(startingWith: "ack \(5 + Int(random.next() % 60))") }

                // Damage the file while holding the suite's lock, so that what it held
                // at that moment is known exactly.
                let damage = Damage.allCases[Int(random.next() % 3)]
                let (damagedKeys, emptied) = try damageFile(suite, damage, &random)
                for writer in writers {
                    let acks = writer.lines.filter { $0.hasPrefix("ack ") }.count
                    _ = writer.line(startingWith: "ack \(acks + 5 + Int(random.next() % 40))")
                    writer.send("stop\n")
                }
                for writer in writers where writer.line(startingWith: "stopped") == nil || !writer.endedCleanly() {
                    result.crashed += 1
                    result.fail("trial \(trial): a writer did not stop cleanly: \(writer.standardError)")
                }
                // A process reading the file from scratch finds any damage left.
                let opener = try stress.worker("open", in: directory, ["suite": name])
                if opener.line(startingWith: "opened") == nil || !opener.endedCleanly() {
                    result.crashed += 1
                    result.fail("trial \(trial): the suite did not open after \(damage): \(opener.standardError)")
                }
                let stored = try Suite(named: name, directory: directory).storedValues()

                var lostHere = 0
                for (index, writer) in writers.enumerated() {
                    for line in writer.lines where line.hasPrefix("ack ") {
                        guard let value = Int(line.dropFirst(4)) else { continue }
                        acknowledged += 1
                        let key = "w\(index).\(value)"
                        switch stored[key] {
                        case .integer(value)?: break
                        case nil where damagedKeys.contains(key): lostHere += 1  // in a record the damage hit
                        case nil:
                            result.lost += 1
                            result.fail("trial \(trial): \(key), in no damaged record, was lost after \(damage)")
                        default:
                            result.torn += 1
                        }
                    }
                }
                let reported = reports.count + writers.reduce(0) { count, writer in
                    count + writer.lines.filter { $0.hasPrefix("diagnostic ") }.count
                } + opener.lines.filter { $0.hasPrefix("diagnostic ") }.count
                let asideCopies = (try? FileManager.default.contentsOfDirectory(atPath: directory.path))?
                    .filter { $0.hasPrefix(name + ".suite.damaged-") }.count ?? 0
                if reported > 0 { detected += 1 }
                if asideCopies > 0 { movedAside += 1 }
                if lostHere > 0 && reported == 0 { result.fail("trial \(trial): \(lostHere) keys went with the damage, unreported") }
                if reported == 0 && lostHere == 0 { healed += 1 }  // rewritten by a compaction before anyone read it
                // A file cut to nothing leaves nothing to keep aside (the repair reports
                // it gone and starts the suite empty).
                if lostHere > 0 && asideCopies == 0 && !emptied {
                    result.fail("trial \(trial): damage (\(damage)) lost data but no copy was kept aside")
                }
                withExtendedLifetime(reports) {}
                stress.removeDirectory(directory)
            }
        }, &result)
        result.operations = acknowledged
        result.figure("trials", trials)
        result.figure("detected", detected)
        result.figure("moved_aside", movedAside)
        result.figure("healed_before_read", healed)
        return [result]
    }

    /// Damages the suite's file under its lock; returns the keys of the records the
    /// damage touched, and whether it cut the file to nothing.
    private static func damageFile(_ suite: Suite, _ damage: Damage, _ random: inout SplitMix64) throws -> (Set<String>, emptied: Bool) {
        let lock = open(suite.lockFileURL.path, O_RDWR | O_CLOEXEC)
        guard lock >= 0, flock(lock, LOCK_EX) == 0 else { throw ToolError(status: 3, message: "cannot lock \(suite.lockFileURL.path)") }
        defer { close(lock) }
        var bytes = [UInt8](try Data(contentsOf: suite.fileURL))
        let records = SuiteFileInspection(bytes: bytes).records
        var touched: [Range<Int>] = []
        switch damage {
        case .flip:
            for _ in 0...(random.next() % 3) {
                let offset = Int(random.next() % UInt64(bytes.count))
                bytes[offset] ^= UInt8(1 + random.next() % 255)
                touched.append(offset..<(offset + 1))
            }
        case .truncate:
            let offset = Int(random.next() % UInt64(bytes.count))
            touched.append(offset..<bytes.count)
            bytes.removeLast(bytes.count - offset)
        case .append:
            bytes += (0...(random.next() % 200)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        }
        try Data(bytes).write(to: suite.fileURL)
        return (Set(records.filter { record in touched.contains { $0.overlaps(record.range) } }.flatMap(\.keys)), bytes.isEmpty)
    }
}

/// Counts the diagnostics of this process for one directory.
final class DiagnosticCounter: Sendable {
    private let counted = Counter()
    private let token: SuiteCancellable

    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        func add() { lock.lock(); value += 1; lock.unlock() }
        var current: Int { lock.lock(); defer { lock.unlock() }; return value }
    }

    init(directory: String) {
        let counted = self.counted
        token = SuiteDiagnostics.observe { if $0.directory == directory { counted.add() } }
    }

    var count: Int { counted.current }
}
