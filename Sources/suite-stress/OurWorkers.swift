import Dispatch
import Foundation
import Glibc
import Synchronization
import SuiteDefaults
import UnitPreferences

extension Worker {
    /// The roles that work on suite-defaults.
    func runOurs() {
        switch role {
        case "increment":
            // THREADS threads, each doing COUNT read-increment-write transactions.
            let suite = open(suiteName)
            let threads = number("threads"), count = number("count")
            let errors = Atomic<Int>(0)
            Worker.say("ready")
            _ = nextLine()
            DispatchQueue.concurrentPerform(iterations: threads) { _ in
                for _ in 0..<count {
                    do {
                        try suite.update { tx in try tx.set((tx.integer(forKey: "counter") ?? 0) + 1, forKey: "counter") }
                    } catch {
                        errors.wrappingAdd(1, ordering: .relaxed)
                    }
                }
            }
            Worker.say("done \(threads * count) errors \(errors.load(ordering: .relaxed))")

        case "write-keys":
            // Writes PREFIX.0 ... PREFIX.(COUNT-1) = 0 ... COUNT-1; with --keys K, to
            // PREFIX.(n % K), so that keys are overwritten; with --value-bytes B, each
            // value is a string of B bytes that starts with the number.
            let suite = open(suiteName)
            let prefix = string("prefix"), count = number("count"), keys = number("keys", default: count)
            var errors = 0
            Worker.say("ready")
            _ = nextLine()
            for value in 0..<count {
                let stored: SuiteValue = valueBytes == 0 ? .integer(value) : .string(padded(value))
                do { try suite.setValue(stored, forKey: "\(prefix).\(value % keys)") } catch { errors += 1 }
            }
            Worker.say("done \(count) errors \(errors)")

        case "ack-loop":
            // Writes PREFIX.n = n for n = 0, 1, ..., acknowledging each once its write
            // returned, until a line arrives on standard input. With --hold-micros, each
            // write is a transaction that keeps the lock that long.
            let suite = open(suiteName)
            let prefix = string("prefix"), hold = UInt32(number("hold-micros", default: 0))
            var value = 0
            Worker.say("ready")
            while !hasInput {
                do {
                    if hold > 0 {
                        try suite.update { tx in
                            try tx.set(value, forKey: "\(prefix).\(value)")
                            usleep(hold)
                        }
                    } else {
                        try suite.set(value, forKey: "\(prefix).\(value)")
                    }
                } catch {
                    Worker.say("error \(error)")
                    usleep(1_000)  // no hot loop while the trouble lasts
                    continue
                }
                Worker.say("ack \(value)")
                value += 1
            }
            Worker.say("stopped \(value)")

        case "getter":
            // For each "go SUITE": the shared unit system of a fresh suite, detected
            // from --lang when nothing is stored.
            let environment = ["LANG": string("lang")]
            forEachTrial { name in
                let system = try? UnitSystem.current(in: open(name), environment: environment)
                return "got \(name) \(system?.rawValue ?? "error")"
            }

        case "setter":
            // For each "go SUITE": the user's explicit choice, imperial.
            forEachTrial { name in
                let stored = (try? UnitSystem.setCurrent(.imperial, in: open(name))) != nil
                return "set \(name)\(stored ? "" : " error")"
            }

        case "invariant-writer":
            // Keeps a + b == 0 and a == version, all three in one transaction;
            // acknowledges each version with the time its write returned.
            let suite = open(suiteName)
            let count = number("count")
            Worker.say("ready")
            _ = nextLine()
            for _ in 0..<count {
                do {
                    let version = try suite.update { tx -> Int in
                        let next = (tx.integer(forKey: "version") ?? 0) + 1
                        try tx.set(next, forKey: "a")
                        try tx.set(-next, forKey: "b")
                        try tx.set(next, forKey: "version")
                        return next
                    }
                    Worker.say("ack \(version) \(Worker.monotonicNanoseconds())")
                } catch {
                    Worker.say("error \(error)")
                }
            }
            Worker.say("done")

        case "invariant-reader":
            // Reads until a line arrives on standard input; counts torn states and
            // versions going back, and samples (start time, version seen) for the
            // freshness check.
            let suite = open(suiteName)
            var reads = 0, torn = 0, regressions = 0, last = 0
            Worker.say("ready")
            while true {
                let started = Worker.monotonicNanoseconds()
                let values = suite.storedValues()
                reads += 1
                let a = values["a"].flatMap(Int.init(suiteValue:)), b = values["b"].flatMap(Int.init(suiteValue:))
                let version = values["version"].flatMap(Int.init(suiteValue:)) ?? 0
                if (a ?? 0) + (b ?? 0) != 0 || (a ?? 0) != version || (a == nil) != (b == nil) { torn += 1 }
                if version < last { regressions += 1 }
                last = version
                if reads % 64 == 0 { Worker.say("sample \(started) \(version)") }
                if hasInput { break }
            }
            Worker.say("reads \(reads) torn \(torn) regressions \(regressions)")

        case "watch":
            runWatcher()

        case "open":
            // Opens the suite from scratch in a new process and counts its keys.
            let suite = open(suiteName)
            Worker.say("opened \(suite.storedValues().count)")

        case "fill":
            // Writes values of --size bytes under new keys until a write fails.
            let suite = open(suiteName)
            let size = number("size")
            var written = 0
            Worker.say("ready")
            while true {
                do {
                    try suite.set(String(repeating: "x", count: size), forKey: "fill.\(written)")
                    Worker.say("ack \(written)")
                    written += 1
                } catch let error as SuiteError {
                    Worker.say("error \(error.code.rawValue) errno \(error.errno ?? 0) after \(written)")
                    break
                } catch {
                    Worker.say("error other after \(written)")
                    break
                }
            }

        case "try-set":
            let suite = open(suiteName)
            do {
                try suite.set(String(repeating: "y", count: number("size")), forKey: string("key"))
                Worker.say("ok")
            } catch let error as SuiteError {
                Worker.say("error \(error.code.rawValue) errno \(error.errno ?? 0)")
            } catch {
                Worker.say("error other")
            }

        case "fork-increment":
            runForkIncrement()

        case "fuzz":
            let (inputs, violations) = Fuzzer(seed: UInt64(number("seed"))).run(from: number("from"), to: number("to"), directory: directory)
            Worker.say("done \(inputs) violations \(violations)")

        default:
            Worker.fail("unknown role \(role)")
        }
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
        }
        let model = Model()
        let finished = DispatchSemaphore(value: 0)
        let token: SuiteCancellable
        do {
            token = try suite.observe { change in
                // Runs on the suite's queue, one change at a time.
                if change.sequence < model.lastSequence { model.outOfOrder += 1 }
                switch change.kind {
                case .commit:
                    model.commits += 1
                    if change.oldValue != model.values[change.key] { model.wrongOld += 1 }
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
            Worker.fail("cannot observe: \(error)")
        }
        Worker.say("ready")
        finished.wait()
        let final = suite.storedValues()
        let mismatched = Set(final.keys).union(model.values.keys).filter { final[$0] != model.values[$0] }.count
        Worker.say("commits \(model.commits) folded \(model.folded) order \(model.outOfOrder) wrong \(model.wrongOld) gaps \(model.gaps) mismatched \(mismatched)")
        withExtendedLifetime(token) {}
    }
}
