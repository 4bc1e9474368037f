import Dispatch
import Foundation
import Glibc
import Synchronization

/// The same jobs done the way a new user would with Foundation's `UserDefaults` on
/// Linux: set, then `synchronize()` so other processes can see it.
extension Worker {
    func runFoundation() {
        switch role {
        case "fd-increment":
            // UserDefaults is documented as thread-safe: its threads share one instance.
            nonisolated(unsafe) let defaults = UserDefaults(suiteName: suiteName)!
            let threads = number("threads"), count = number("count")
            Worker.say("ready")
            _ = nextLine()
            DispatchQueue.concurrentPerform(iterations: threads) { _ in
                for _ in 0..<count {
                    defaults.synchronize()
                    defaults.set(defaults.integer(forKey: "counter") + 1, forKey: "counter")
                    defaults.synchronize()
                }
            }
            Worker.say("done \(threads * count) errors 0")

        case "fd-write-keys":
            let defaults = UserDefaults(suiteName: suiteName)!
            let prefix = string("prefix"), count = number("count"), keys = number("keys", default: count)
            Worker.say("ready")
            _ = nextLine()
            for value in 0..<count {
                if valueBytes == 0 {
                    defaults.set(value, forKey: "\(prefix).\(value % keys)")
                } else {
                    defaults.set(padded(value), forKey: "\(prefix).\(value % keys)")
                }
                defaults.synchronize()
            }
            Worker.say("done \(count) errors 0")

        case "fd-ack-loop":
            let defaults = UserDefaults(suiteName: suiteName)!
            let prefix = string("prefix")
            var value = 0
            Worker.say("ready")
            while !hasInput {
                defaults.set(value, forKey: "\(prefix).\(value)")
                defaults.synchronize()
                Worker.say("ack \(value)")
                value += 1
            }
            Worker.say("stopped \(value)")

        case "fd-getter":
            // The naive first-access getter: read; if nothing, detect; check again;
            // write; re-read.
            forEachTrial { name in
                let defaults = UserDefaults(suiteName: name)!
                if defaults.string(forKey: "units.system") == nil {
                    let detected = "metric"
                    defaults.synchronize()
                    if defaults.string(forKey: "units.system") == nil {
                        defaults.set(detected, forKey: "units.system")
                        defaults.synchronize()
                    }
                }
                defaults.synchronize()
                return "got \(name) \(defaults.string(forKey: "units.system") ?? "none")"
            }

        case "fd-setter":
            forEachTrial { name in
                let defaults = UserDefaults(suiteName: name)!
                defaults.set("imperial", forKey: "units.system")
                defaults.synchronize()
                return "set \(name)"
            }

        case "fd-invariant-writer":
            let defaults = UserDefaults(suiteName: suiteName)!
            let count = number("count")
            Worker.say("ready")
            _ = nextLine()
            for _ in 0..<count {
                defaults.synchronize()
                let next = defaults.integer(forKey: "version") + 1
                defaults.set(next, forKey: "a")
                defaults.set(-next, forKey: "b")
                defaults.set(next, forKey: "version")
                defaults.synchronize()
                Worker.say("ack \(next) \(Worker.monotonicNanoseconds())")
            }
            Worker.say("done")

        case "fd-invariant-reader":
            // Also reads the file itself, as another program would, and counts the
            // times it was empty or not a property list.
            let defaults = UserDefaults(suiteName: suiteName)!
            let file = directory.appendingPathComponent(suiteName + ".plist")
            var reads = 0, torn = 0, regressions = 0, last = 0, emptyFiles = 0
            Worker.say("ready")
            while true {
                let started = Worker.monotonicNanoseconds()
                defaults.synchronize()
                let a = defaults.integer(forKey: "a"), b = defaults.integer(forKey: "b"), version = defaults.integer(forKey: "version")
                reads += 1
                if a + b != 0 || a != version { torn += 1 }
                if version < last { regressions += 1 }
                last = version
                if let data = try? Data(contentsOf: file),
                   (try? PropertyListSerialization.propertyList(from: data, format: nil)) == nil {
                    emptyFiles += 1
                }
                if reads % 64 == 0 { Worker.say("sample \(started) \(version)") }
                if hasInput { break }
            }
            Worker.say("reads \(reads) torn \(torn) regressions \(regressions) empty \(emptyFiles)")

        case "fd-watch":
            // Counts the change notifications UserDefaults delivers, for --duration.
            let defaults = UserDefaults(suiteName: suiteName)!
            let received = Atomic<Int>(0)
            let observer = NotificationCenter.default.addObserver(forName: UserDefaults.didChangeNotification, object: defaults,
                                                                  queue: nil) { _ in received.wrappingAdd(1, ordering: .relaxed) }
            Worker.say("ready")
            RunLoop.current.run(until: Date().addingTimeInterval(Double(number("duration-ms")) / 1000))
            Worker.say("commits \(received.load(ordering: .relaxed)) folded 0 order 0 wrong 0 gaps 0 mismatched 0")
            withExtendedLifetime(observer) {}

        default:
            Worker.fail("unknown role \(role)")
        }
    }
}

/// Reads a UserDefaults suite's property list the way another process would.
func foundationSuite(_ name: String, in directory: URL) -> [String: Any]? {
    guard let data = try? Data(contentsOf: directory.appendingPathComponent(name + ".plist")) else { return [:] }
    return try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any]
}
