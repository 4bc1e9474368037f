import ChildProcess
import Foundation
import Glibc
import SuiteDefaults
import ToolSupport

extension Bench {
    /// From a write's return in this process to the observer's delivery in another,
    /// with 1 and with 8 watching processes, and with 1 whose observation asked for
    /// `.watcherThread`; and what a watcher's CPU costs per change.
    func notificationRows() throws -> [BenchRow] {
        let writes = options.samples(500, quick: 50)
        let floor = try inotifyFloor(writes)
        var cpuPerThousand = Samples(), cpuOnWatcherThread = Samples()
        let measured = try [(1, false), (1, true), (8, false)].map { watchers, onWatcherThread in
            let name = "notify_\(watchers)" + (onWatcherThread ? "_watcher_thread" : "")
            let (latencies, cpu) = try deliveryLatencies(suite: name, watchers: watchers, writes: writes, onWatcherThread: onWatcherThread)
            if name == "notify_1" { cpuPerThousand = cpu }
            if onWatcherThread { cpuOnWatcherThread = cpu }
            let delivery = onWatcherThread ? "on the watcher's thread (SuiteObservation.Delivery.watcherThread)" : "on the suite's observer queue (the default)"
            return BenchRow(name: name, ours: .init(latencies)!, foundation: nil, floor: .init(floor),
                            note: String(format: "from a write's return to delivery in another process, %d watching, %d changes each, delivered %@; max %.0f µs; floor: a bare inotify wake after a write; Foundation delivers none across processes",
                                         watchers, writes, delivery, latencies.maximum ?? 0))
        }
        guard let cpu = BenchRow.Figure(cpuPerThousand) else {
            throw ToolError(status: 1, message: "the watcher did not report its CPU time")
        }
        let onWatcherThread = BenchRow.Figure(cpuOnWatcherThread).map { String(format: " (%.1f ms with delivery on the watcher's thread)", $0.median) } ?? ""
        return measured + [BenchRow(name: "notify_cpu", ours: cpu, foundation: nil, floor: nil,
                                    note: "ms of CPU, not µs: the watching process's CPU time (every thread) per 1,000 changes delivered, while notify_1's \(writes) changes came, 1 ms apart\(onWatcherThread); Foundation delivers none across processes")]
    }

    /// `writes` sets 1 ms apart, each timed from its return to its delivery in each of
    /// `watchers` processes; and each watcher's CPU per 1,000 changes.
    private func deliveryLatencies(suite name: String, watchers: Int, writes: Int,
                                   onWatcherThread: Bool) throws -> (latencies: Samples, cpuPerThousand: Samples) {
        let suite = try self.suite(name, keys: 10)
        var values = ["suite": name, "count": "\(writes)"]
        if onWatcherThread { values["delivery"] = "watcher-thread" }
        let processes = try (0..<watchers).map { _ in try worker("watch", values) }
        for process in processes { _ = try process.expect("ready") }
        var returned: [UInt64] = []
        for sequence in 0..<writes {
            try suite.set(sequence, forKey: "t")
            returned.append(monotonicNanoseconds())
            usleep(1_000)
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
        return (latencies, cpuPerThousand)
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

    /// A process blocked on inotify, woken by a write to the file it watches.
    private func inotifyFloor(_ writes: Int) throws -> Samples {
        let path = root.appendingPathComponent("floor.notify").path
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw ToolError(status: 1, message: "cannot open \(path) for the inotify floor: \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        let watcher = try worker("inotify-floor", ["count": "\(writes)"])
        _ = try watcher.expect("ready")
        // Writes 1 ... writes; the watcher reports each it saw.
        var returned: [UInt64] = [0]
        for sequence in 1...UInt64(writes) {
            var word = sequence
            _ = pwrite(descriptor, &word, 8, 0)
            returned.append(monotonicNanoseconds())
            usleep(1_000)
        }
        _ = try watcher.expect("got \(writes) ")
        var samples = Samples()
        for line in watcher.lines where line.hasPrefix("got ") {
            let fields = line.split(separator: " ")
            if fields.count == 3, let sequence = Int(fields[1]), sequence > 0, sequence <= writes, let arrived = UInt64(fields[2]) {
                samples.add((Double(arrived) - Double(returned[sequence])) / 1_000)
            }
        }
        return samples
    }
}
