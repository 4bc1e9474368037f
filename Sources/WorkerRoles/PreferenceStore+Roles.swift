import Dispatch
import Glibc
import SuiteDefaults
import Synchronization
import ToolSupport

/// The jobs of the worker roles, written once for every store. The workers choose
/// what to say about each event, and whether an error ends them or is counted.
extension PreferenceStore {
    /// increment: `threads` threads, each adding one to `key` `count` times. Each
    /// failed increment goes to `failed`; returns how many failed.
    public func incrementConcurrently(_ key: String, threads: Int, count: Int, failed: @Sendable (any Error) -> Void) -> Int {
        let failures = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            for _ in 0..<count {
                do {
                    try increment(key)
                } catch {
                    failures.wrappingAdd(1, ordering: .relaxed)
                    failed(error)
                }
            }
        }
        return failures.load(ordering: .relaxed)
    }

    /// write-keys: stores `value(n)` under PREFIX.(n % keys) for n = 0 ..< count, in
    /// order; after each write, hands its key and its error, if any, to `written`.
    public func writeKeys(prefix: String, count: Int, keys: Int, value: (Int) -> SuiteValue,
                          written: (_ key: String, _ error: (any Error)?) -> Void) {
        for index in 0..<count {
            let key = "\(prefix).\(index % keys)"
            do {
                try set(value(index), forKey: key)
                written(key, nil)
            } catch {
                written(key, error)
            }
        }
    }

    /// ack-loop: stores n under PREFIX.(n % keys) for n = 0, 1, ... until `stop()`,
    /// handing each n to `acknowledge` once its write returned. A failed write goes to
    /// `failed` and is tried again. Returns how many writes were acknowledged.
    public func ackLoop(prefix: String, keys: Int = .max, holdingLockFor holdMicroseconds: UInt32 = 0,
                        until stop: () -> Bool, acknowledge: (Int) -> Void, failed: (any Error) -> Void) -> Int {
        var value = 0
        while !stop() {
            do {
                try set(.integer(value), forKey: "\(prefix).\(value % keys)", holdingLockFor: holdMicroseconds)
            } catch {
                failed(error)
                usleep(1_000)  // no hot loop while the trouble lasts
                continue
            }
            acknowledge(value)
            value += 1
        }
        return value
    }

    /// invariant-writer: advances the invariant `count` times, handing each new version
    /// to `acknowledge` once its write returned, and each error to `failed`.
    public func writeInvariant(times count: Int, acknowledge: (Int) -> Void, failed: (any Error) -> Void) {
        for _ in 0..<count {
            do {
                acknowledge(try advanceInvariant())
            } catch {
                failed(error)
            }
        }
    }

    /// invariant-reader: reads the invariant until `stop` (which sees each read) says
    /// so, counting torn reads and versions that went back or below `floor`. Every
    /// 64th read goes to `sample`, with the time it began, for a freshness check.
    public func checkInvariant(atLeast floor: Int = 0, sample: ((_ began: UInt64, _ version: Int) -> Void)? = nil,
                               until stop: (InvariantSnapshot) -> Bool) -> InvariantReading {
        var reading = InvariantReading()
        while true {
            let began = sample == nil ? 0 : monotonicNanoseconds()
            let snapshot = readInvariant()
            reading.reads += 1
            if snapshot.isTorn { reading.torn += 1 }
            if snapshot.version < reading.last || snapshot.version < floor { reading.regressions += 1 }
            if snapshot.fileUnreadable { reading.unreadableFiles += 1 }
            reading.last = snapshot.version
            if let sample, reading.reads % 64 == 0 { sample(began, snapshot.version) }
            if stop(snapshot) { return reading }
        }
    }

    /// try-set: stores `value` and says how it went: "ok", or the error's report.
    public func trySet(_ value: SuiteValue, forKey key: String) -> String {
        do {
            try set(value, forKey: key)
            return "ok"
        } catch {
            return errorReport(error)
        }
    }
}

/// An error as a worker's line reports it: "error CODE errno N" for the library's
/// errors, "error other DESCRIPTION" for any other.
public func errorReport(_ error: any Error) -> String {
    if let error = error as? SuiteError {
        return "error \(error.code.rawValue) errno \(error.errno ?? 0)"
    }
    return "error other \(error)"
}
