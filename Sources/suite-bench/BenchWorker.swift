import Dispatch
import Foundation
import CSuiteDefaults
import Glibc
import SuiteDefaults
import ToolSupport
import WorkerRoles

/// A worker process: `suite-bench worker ROLE --dir DIR [--name value ...]`.
enum BenchWorker {
    static let syntax = CommandLineSyntax(
        synopsis: ["suite-bench worker ROLE --dir DIR [--suite NAME] [--count N] [--idle-ms MS] [--delivery watcher-thread]"],
        arguments: [CommandLineArgument("ROLE", help: """
            cold, swift-baseline, fd-cold, contend, fd-contend, floor-contend, watch, inotify-floor, memory
            or fd-memory; for --peers, sqlite- or lmdb- followed by cold, contend, watch or memory
            """)],
        options: [
            .value("--dir", "DIR", help: "the run's directory"),
            .value("--suite", "NAME", help: "the suite (default: bench)"),
            .value("--count", "N", help: "increments, or changes to wait for"),
            .value("--idle-ms", "MS", help: "how long a peer's poller measures its idle CPU"),
            .value("--delivery", "watcher-thread", help: "watch: the observation asks for delivery on the change watcher's thread"),
        ]
    )

    static func run(_ arguments: [String]) -> Never {
        let commandLine: ParsedCommandLine
        do {
            commandLine = try syntax.parse(Array(arguments.dropFirst()))
        } catch {
            error.exit()
        }
        let directory = URL(fileURLWithPath: commandLine.value("--dir") ?? ".")
        let name = commandLine.value("--suite") ?? "bench"
        let count = commandLine.value("--count").flatMap { Int($0) } ?? 0
        // "go" starts the measured work; the end of input (the parent went away) ends us.
        Thread {
            while let line = readLine() {
                if line == "go" { startSignal.signal() }
            }
            _exit(0)
        }.start()
        // The library's part of a cold start is measured from here: the program has
        // its arguments (and its directory's URL) ready, and opens the suite.
        let started = monotonicNanoseconds()
        switch arguments.first {
        case let role? where PeerWorker.isPeerRole(role):
            PeerWorker.run(role, directory: directory, name: name, count: count,
                           idleMilliseconds: commandLine.value("--idle-ms").flatMap { Int($0) } ?? 1_000)
        case "cold":
            let suite = try? Suite(named: name, directory: directory)
            let value = suite?.string(forKey: "key.7")
            Output.line("cold \(started) \(monotonicNanoseconds()) \(value != nil)")
        case "swift-baseline":
            // What any Swift program pays on its first use of such values: one
            // dictionary insert of an enum with Foundation payloads, as a suite holds.
            var entries: [String: SwiftBaselineValue] = [:]
            entries["key.7"] = .string(String(decoding: Array("value 7".utf8), as: UTF8.self))
            Output.line("cold \(started) \(monotonicNanoseconds()) \(entries["key.7"] != nil)")
        case "fd-cold":
            let value = UserDefaults(suiteName: name)?.string(forKey: "key.7")
            Output.line("cold \(started) \(monotonicNanoseconds()) \(value != nil)")
        case "floor-contend":
            Output.line("ready")
            waitForStart()
            _ = Floor.incrementUnderLock(count, path: directory.appendingPathComponent(name).path)
            Output.line("done \(count)")
        case "contend", "fd-contend":
            let store: any PreferenceStore
            if arguments.first == "contend" {
                guard let suite = try? Suite(named: name, directory: directory) else { exit(3) }
                store = suite
            } else {
                store = FoundationStore(suiteName: name, directory: directory)
            }
            Output.line("ready")
            waitForStart()
            _ = store.incrementConcurrently("counter", threads: 1, count: count) { _ in }
            Output.line("done \(count)")
        case "watch":
            // Reports when each value of "t" arrived.
            guard let suite = try? Suite(named: name, directory: directory) else { exit(3) }
            let finished = DispatchSemaphore(value: 0)
            let observation = SuiteObservation.keys(named: ["t"])
                .delivered(on: commandLine.value("--delivery") == "watcher-thread" ? .watcherThread : .suiteQueue)
            let token = try? observation.start(in: suite) { change in
                let arrived = monotonicNanoseconds()
                guard case .integer(let sequence)? = change.newValue else { return }
                Output.line("got \(sequence) \(arrived)")
                if sequence == count - 1 { finished.signal() }
            }
            Output.line("ready")
            let watching = processCPUNanoseconds()
            finished.wait()
            // Every thread's CPU while the changes came: the watcher's, the observers'.
            Output.line("cpu \(processCPUNanoseconds() - watching)")
            withExtendedLifetime(token) {}
        case "inotify-floor":
            // The bare inotify wake: a watch on the file, a blocking read of the event,
            // then a read of which write it was (the kernel merges events a reader has
            // not taken yet, so a wake may stand for more than one write).
            let file = directory.appendingPathComponent("floor.notify").path
            let inotify = inotify_init1(Int32(IN_CLOEXEC))
            let descriptor = open(file, O_RDONLY | O_CLOEXEC)
            inotify_add_watch(inotify, file, UInt32(IN_MODIFY))
            var buffer = [UInt8](repeating: 0, count: 4096)
            var sequence: UInt64 = 0
            Output.line("ready")
            while sequence < UInt64(count) {
                _ = buffer.withUnsafeMutableBytes { read(inotify, $0.baseAddress, $0.count) }
                _ = pread(descriptor, &sequence, 8, 0)
                Output.line("got \(sequence) \(monotonicNanoseconds())")
            }
        case "memory":
            let before = residentKiB("VmRSS"), heapBefore = heapBytesInUse()
            let suite = try? Suite(named: name, directory: directory)
            // Every value read once and none kept, as the peers' workers do (a copy of
            // all values, as storedValues() makes, would be measured too).
            var keys = 0
            for index in 0..<count where suite?.string(forKey: "key.\(index)") != nil { keys += 1 }
            Output.line("memory \(before) \(residentKiB("VmHWM")) \(keys) \(heapBytesInUse() - heapBefore)")
            withExtendedLifetime(suite) {}
        case "fd-memory":
            let before = residentKiB("VmRSS")
            let heapBefore = heapBytesInUse()
            let defaults = UserDefaults(suiteName: name)
            let keys = defaults?.dictionaryRepresentation().count ?? 0
            Output.line("memory \(before) \(residentKiB("VmHWM")) \(keys) \(heapBytesInUse() - heapBefore)")
            withExtendedLifetime(defaults) {}
        default:
            Output.line("unknown role")
            exit(2)
        }
        exit(0)
    }

    /// Waits for "go" on standard input (read by the thread above: a line reaches it).
    static func waitForStart() {
        startSignal.wait()
    }

    static let startSignal = DispatchSemaphore(value: 0)

    /// A line of /proc/self/status, in KiB.
    /// Bytes of the heap in use (`mallinfo2`: small blocks and mapped ones): what
    /// the process holds, without the code pages that first use brings in.
    static func heapBytesInUse() -> Int {
        Int(sd_heap_bytes_in_use())
    }

    static func residentKiB(_ field: String) -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix(field + ":") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
    }
}

/// A value shaped like a suite's, for the cold-start baseline.
enum SwiftBaselineValue: Hashable {
    case string(String), integer(Int), double(Double), data(Data), date(Date)
    case array([SwiftBaselineValue]), dictionary([String: SwiftBaselineValue])
}
