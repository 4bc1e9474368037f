import ChildProcess
import Foundation
import Glibc
import SuiteDefaults
import ToolSupport

extension Bench {
    /// From a write's return in this process to the observer's delivery in another,
    /// with 1 and with 8 watching processes, and with 1 whose observation asked for
    /// `.watcherThread`; and what a watcher's CPU costs per change. Each row's floor,
    /// a bare inotify wake, takes turns with its writes, so that a slow spell of the
    /// machine falls on both alike.
    func notificationRows() throws -> [BenchRow] {
        let writes = options.samples(500, quick: 50)
        var cpuPerThousand = Samples(), cpuOnWatcherThread = Samples()
        let measured = try [(1, false), (1, true), (8, false)].map { watchers, onWatcherThread in
            let name = "notify_\(watchers)" + (onWatcherThread ? "_watcher_thread" : "")
            let run = try deliveryLatencies(suite: name, watchers: watchers, writes: writes, onWatcherThread: onWatcherThread)
            if name == "notify_1" { cpuPerThousand = run.cpuPerThousand }
            if onWatcherThread { cpuOnWatcherThread = run.cpuPerThousand }
            let delivery = onWatcherThread ? "on the watcher's thread (SuiteObservation.Delivery.watcherThread)" : "on the suite's observer queue (the default)"
            return BenchRow(name: name, ours: .init(run.latencies)!, foundation: nil, floor: .init(run.floor),
                            note: String(format: "from a write's return to delivery in another process, %d watching, %d changes each, delivered %@; max %.0f µs; floor: a bare inotify wake after a write, in turns with ours (blocks of %d); Foundation delivers none across processes",
                                         watchers, writes, delivery, run.latencies.maximum ?? 0, Self.notificationTurn))
        }
        guard let cpu = BenchRow.Figure(cpuPerThousand) else {
            throw ToolError(status: 1, message: "the watcher did not report its CPU time")
        }
        let onWatcherThread = BenchRow.Figure(cpuOnWatcherThread).map { String(format: " (%.1f ms with delivery on the watcher's thread)", $0.median) } ?? ""
        return measured + [BenchRow(name: "notify_cpu", ours: cpu, foundation: nil, floor: nil,
                                    note: "ms of CPU, not µs: the watching process's CPU time (every thread) per 1,000 changes delivered, while notify_1's \(writes) changes came, 1 ms apart\(onWatcherThread); Foundation delivers none across processes")]
    }

    /// How many writes of ours, or of the floor, follow one another before the other
    /// takes its turn.
    static let notificationTurn = 10

    /// `writes` sets 1 ms apart, each timed from its return to its delivery in each of
    /// `watchers` processes, in turns with as many writes to a file that a bare
    /// inotify reader watches (the floor); and each watcher's CPU per 1,000 changes.
    private func deliveryLatencies(suite name: String, watchers: Int, writes: Int, onWatcherThread: Bool)
        throws -> (latencies: Samples, floor: Samples, cpuPerThousand: Samples) {
        let suite = try self.suite(name, keys: 10)
        var values = ["suite": name, "count": "\(writes)"]
        if onWatcherThread { values["delivery"] = "watcher-thread" }
        let processes = try (0..<watchers).map { _ in try worker("watch", values) }
        // The floor's file lies in a directory of its own: our watchers watch the
        // suite's directory, and would wake for its writes too.
        let floorDirectory = root.appendingPathComponent("\(name).floor")
        try FileManager.default.createDirectory(at: floorDirectory, withIntermediateDirectories: true)
        let floorPath = floorDirectory.appendingPathComponent("floor.notify").path
        let floorFile = open(floorPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard floorFile >= 0 else { throw ToolError(status: 1, message: "cannot make \(floorPath)") }
        defer { close(floorFile) }
        let floorWatcher = try worker("inotify-floor", ["count": "\(writes)", "file": floorPath])
        for process in processes + [floorWatcher] { _ = try process.expect("ready") }
        // Ours set "t" to 0 ..< writes; the floor writes 1 ... writes.
        var returned: [UInt64] = [], floorReturned: [UInt64] = [0]
        while returned.count < writes {
            for _ in 0..<min(Self.notificationTurn, writes - returned.count) {
                var word = UInt64(floorReturned.count)
                _ = pwrite(floorFile, &word, 8, 0)
                floorReturned.append(monotonicNanoseconds())
                usleep(1_000)
            }
            for _ in 0..<min(Self.notificationTurn, writes - returned.count) {
                try suite.set(returned.count, forKey: "t")
                returned.append(monotonicNanoseconds())
                usleep(1_000)
            }
        }
        var latencies = Samples(), cpuPerThousand = Samples()
        for process in processes {
            _ = try process.expect("got \(writes - 1) ")
            let cpu = try process.expect("cpu ").split(separator: " ")
            if cpu.count == 2, let nanoseconds = Double(cpu[1]) {
                cpuPerThousand.add(nanoseconds / Double(writes) * 1_000 / 1_000_000)
            }
            latencies.add(contentsOf: Self.deliveryLatencies(reportedBy: process, returned: returned))
            process.closeInput()
            _ = process.wait(timeout: .seconds(60))
        }
        guard latencies.values.count == watchers * writes else {
            throw ToolError(status: 1, message: "the watchers received \(latencies.values.count) of \(watchers * writes) changes")
        }
        _ = try floorWatcher.expect("got \(writes) ")
        _ = floorWatcher.wait(timeout: .seconds(60))
        var floor = Samples()
        for line in floorWatcher.lines where line.hasPrefix("got ") {
            let fields = line.split(separator: " ")
            if fields.count == 3, let sequence = Int(fields[1]), sequence > 0, sequence <= writes, let arrived = UInt64(fields[2]) {
                floor.add((Double(arrived) - Double(floorReturned[sequence])) / 1_000)
            }
        }
        return (latencies, floor, cpuPerThousand)
    }

    /// The microseconds from each write's return (`returned[n]`, monotonic ns) to its
    /// delivery, from a watcher's "got N NANOSECONDS" lines.
    static func deliveryLatencies(reportedBy watcher: ChildProcess, returned: [UInt64]) -> [Double] {
        watcher.lines.compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count == 3, fields[0] == "got", let sequence = Int(fields[1]), let arrived = UInt64(fields[2]),
                  sequence >= 0, sequence < returned.count
            else { return nil }
            return (Double(arrived) - Double(returned[sequence])) / 1_000
        }
    }
}
