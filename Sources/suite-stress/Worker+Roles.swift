import Dispatch
import Foundation
import Glibc
import Synchronization
import SuiteDefaults
import ToolSupport
import UnitPreferences
import WorkerRoles

extension Worker {
    /// Runs the role. The shared ones (their jobs in WorkerRoles) run on this library's
    /// suite, or with "fd-" on Foundation's UserDefaults; they count errors rather than
    /// stop at the first.
    func runRole() {
        switch role {
        case "increment", "fd-increment":
            // THREADS threads, each doing COUNT read-increment-write transactions.
            let preferences = store(suiteName)
            let threads = number("threads"), count = number("count")
            readyThenWaitForGo()
            let errors = preferences.incrementConcurrently("counter", threads: threads, count: count) { _ in }
            Output.line("done \(threads * count) errors \(errors)")

        case "write-keys", "fd-write-keys":
            // Writes PREFIX.0 ... PREFIX.(COUNT-1) = 0 ... COUNT-1; with --keys K, to
            // PREFIX.(n % K), so that keys are overwritten; with --value-bytes B, each
            // value is a string of B bytes that starts with the number.
            let preferences = store(suiteName)
            let prefix = string("prefix"), count = number("count"), keys = number("keys", default: count)
            let valueBytes = number("value-bytes", default: 0)
            var errors = 0
            readyThenWaitForGo()
            preferences.writeKeys(prefix: prefix, count: count, keys: keys, value: { value in
                valueBytes == 0 ? .integer(value) : .string("\(value):".padding(toLength: valueBytes, withPad: "v", startingAt: 0))
            }, written: { _, error in
                if error != nil { errors += 1 }
            })
            Output.line("done \(count) errors \(errors)")

        case "ack-loop", "fd-ack-loop":
            // Writes PREFIX.n = n for n = 0, 1, ..., acknowledging each once its write
            // returned, until a line arrives on standard input. With --hold-micros, each
            // write is a transaction that keeps the lock that long.
            let preferences = store(suiteName)
            let prefix = string("prefix"), hold = UInt32(number("hold-micros", default: 0))
            Output.line("ready")
            let acknowledged = preferences.ackLoop(prefix: prefix, holdingLockFor: hold, until: { hasInput },
                                             acknowledge: { Output.line("ack \($0)") }, failed: { Output.line("error \($0)") })
            Output.line("stopped \(acknowledged)")

        case "getter", "fd-getter":
            // For each "go SUITE": the shared unit system of a fresh suite, detected
            // from --lang when nothing is stored.
            let lang = string("lang")
            forEachTrial { name in "got \(name) \((try? store(name).currentUnitSystem(lang: lang)) ?? "error")" }

        case "setter", "fd-setter":
            // For each "go SUITE": the user's explicit choice, imperial.
            forEachTrial { name in
                let stored = (try? store(name).setUnitSystem(.imperial)) != nil
                return "set \(name)\(stored ? "" : " error")"
            }

        case "invariant-writer", "fd-invariant-writer":
            // Keeps a + b == 0 and a == version, all three in one transaction;
            // acknowledges each version with the time its write returned.
            let preferences = store(suiteName)
            let count = number("count")
            readyThenWaitForGo()
            preferences.writeInvariant(times: count, acknowledge: { Output.line("ack \($0) \(monotonicNanoseconds())") },
                                 failed: { Output.line("error \($0)") })
            Output.line("done")

        case "invariant-reader", "fd-invariant-reader":
            // Reads until a line arrives on standard input; counts torn states and
            // versions going back, and samples (start time, version seen) for the
            // freshness check. On UserDefaults it also reads the file itself, as another
            // program would, and counts the times it was empty or not a property list.
            let preferences = store(suiteName)
            Output.line("ready")
            let reading = preferences.checkInvariant(sample: { Output.line("sample \($0) \($1)") }, until: { _ in hasInput })
            let files = role.hasPrefix("fd-") ? " empty \(reading.unreadableFiles)" : ""
            Output.line("reads \(reading.reads) torn \(reading.torn) regressions \(reading.regressions)\(files)")

        case "watch":
            runWatcher()

        case "fd-watch":
            runFoundationWatcher()

        case "open":
            // Opens the suite from scratch in a new process and counts its keys.
            let suite = open(suiteName)
            Output.line("opened \(suite.storedValues().count)")

        case "fill":
            // Writes values of --size bytes under new keys until a write fails.
            let suite = open(suiteName)
            let size = number("size")
            var written = 0
            Output.line("ready")
            while true {
                do {
                    try suite.set(String(repeating: "x", count: size), forKey: "fill.\(written)")
                    Output.line("ack \(written)")
                    written += 1
                } catch {
                    Output.line("\(errorReport(error)) after \(written)")
                    break
                }
            }

        case "sync-writer":
            runSyncWriter()

        case "try-set":
            Output.line(open(suiteName).trySet(.string(String(repeating: "y", count: number("size"))), forKey: string("key")))

        case "fork-increment":
            runForkIncrement()

        case "fuzz":
            let (inputs, violations) = Fuzzer(seed: UInt64(number("seed"))).run(from: number("from"), to: number("to"), directory: directory)
            Output.line("done \(inputs) violations \(violations)")

        default:
            ToolError(status: 3, message: "unknown role \(role)").exit()
        }
    }

    /// sync scenario: after "go", writes until a line arrives on standard input, in turn
    /// to the shared keys "shared.0" ... (--shared S) and to this machine's own keys
    /// PREFIX.0 ... (--keys K), at random, each value "PREFIX-N" (so every value names its
    /// writer and is written once); every 13th write is a removal. Acknowledges each
    /// write once it returned: "ack N KEY VALUE", "-" for a removal. --pause-micros
    /// between writes.
    private func runSyncWriter() {
        let suite = open(suiteName)
        let prefix = string("prefix"), own = number("keys"), shared = number("shared")
        let pause = UInt32(number("pause-micros", default: 0))
        var random = SplitMix64(seed: UInt64(number("seed", default: Int(getpid()))))
        var written = 0, errors = 0
        readyThenWaitForGo()
        while !hasInput {
            let isShared = random.next() % 2 == 0
            let key = isShared ? "shared.\(random.next() % UInt64(shared))" : "\(prefix).\(random.next() % UInt64(own))"
            let removes = written % 13 == 12
            let value = "\(prefix)-\(written)"
            do {
                if removes { try suite.setValue(nil, forKey: key) } else { try suite.set(value, forKey: key) }
                Output.line("ack \(written) \(key) \(removes ? "-" : value)")
                written += 1
            } catch {
                errors += 1
                Output.line("error \(errorReport(error))")
                usleep(1_000)
            }
            if pause > 0 { usleep(pause) }
        }
        Output.line("done \(written) errors \(errors)")
    }

    /// Counts the change notifications UserDefaults delivers, for --duration-ms.
    private func runFoundationWatcher() {
        let defaults = FoundationStore(suiteName: suiteName, directory: directory).defaults
        let received = Atomic<Int>(0)
        let observer = NotificationCenter.default.addObserver(forName: UserDefaults.didChangeNotification, object: defaults,
                                                              queue: nil) { _ in received.wrappingAdd(1, ordering: .relaxed) }
        Output.line("ready")
        RunLoop.current.run(until: Date().addingTimeInterval(Double(number("duration-ms")) / 1000))
        Output.line("commits \(received.load(ordering: .relaxed)) folded 0 order 0 wrong 0 gaps 0 mismatched 0")
        withExtendedLifetime(observer) {}
    }

    /// Observes every change, checking order and values, until the key "stop" arrives.
    private func runWatcher() {
        let suite = open(suiteName)
        final class Model: @unchecked Sendable {
            var values: [String: SuiteValue] = [:]
            var lastSequence: UInt64 = 0
            var commits = 0, folded = 0, outOfOrder = 0, wrongOld = 0
            var gaps = 0
            var started = false
            /// The last changes received, written to standard error at the first one
            /// out of order or with a wrong old value, to tell what led to it.
            var recent: [SuiteChange] = []
            var reported = false
        }
        let model = Model()
        let finished = DispatchSemaphore(value: 0)
        let token: SuiteCancellable
        do {
            let delivery: SuiteObservation.Delivery = commandLine.value("--delivery") == "watcher-thread" ? .watcherThread : .suiteQueue
            token = try SuiteObservation.allKeys.delivered(on: delivery).start(in: suite) { change in
                // Runs one change at a time, on the suite's queue or the watcher's thread.
                model.recent.append(change)
                if model.recent.count > 12 { model.recent.removeFirst() }
                let outOfOrder = change.sequence < model.lastSequence
                let wrongOld = change.kind == .commit && change.oldValue != model.values[change.key]
                if outOfOrder || wrongOld, !model.reported {
                    model.reported = true
                    let expected = model.values[change.key].map { "\($0)" } ?? "-"
                    Output.errorLine("torn: \(outOfOrder ? "out of order" : "old value \(expected) expected"); the last changes:\n" + model.recent.map { "\($0.kind) \($0)" }.joined(separator: "\n"))
                }
                if outOfOrder { model.outOfOrder += 1 }
                switch change.kind {
                case .commit:
                    model.commits += 1
                    if wrongOld { model.wrongOld += 1 }
                    // A commit must follow the previous one directly, or the same one
                    // (several keys), unless a net change folded the ones between.
                    if model.started && change.sequence > model.lastSequence + 1 { model.gaps += 1 }
                case .netChange:
                    model.folded += 1
                case .initialValue:
                    break
                }
                model.lastSequence = max(model.lastSequence, change.sequence)
                model.started = true
                model.values[change.key] = change.newValue
                if change.key == "stop" { finished.signal() }
            }
        } catch {
            ToolError(status: 3, message: "cannot observe: \(error)").exit()
        }
        Output.line("ready")
        finished.wait()
        let final = suite.storedValues()
        let mismatched = Set(final.keys).union(model.values.keys).filter { final[$0] != model.values[$0] }.count
        Output.line("commits \(model.commits) folded \(model.folded) order \(model.outOfOrder) wrong \(model.wrongOld) gaps \(model.gaps) mismatched \(mismatched)")
        withExtendedLifetime(token) {}
    }
}
