import ChildProcess
import Foundation
import SuiteDefaults

/// W watcher processes (every other one with delivery on the watcher's thread) and P
/// writer processes committing 100-byte values: every watcher must receive every
/// change in commit order, with the right old and new values, each as its own commit:
/// none folded into a net change, however far behind the compactions a watcher falls
/// (within the history kept).
enum NotifyScenario {
    static func run(_ stress: StressRun) throws -> [ScenarioResult] {
        let options = stress.options
        let watchers = options.count(options.threads, quick: 4, normal: 8)
        let writers = options.count(options.processes, quick: 2, normal: 4)
        let writes = options.count(options.iterations, quick: 2_000, normal: 10_000)
        var results = [try once(stress, foundation: false, watchers, writers, writes)]
        if options.againstFoundation {
            // UserDefaults needs a time to watch for; give it the time ours took, and a second more.
            let seconds = results[0].seconds + 1
            results.append(try once(stress, foundation: true, watchers, writers, writes, watchFor: seconds))
        }
        return results
    }

    private static func once(_ stress: StressRun, foundation: Bool, _ watcherCount: Int, _ writerCount: Int, _ writes: Int,
                             watchFor seconds: Double = 0) throws -> ScenarioResult {
        var result = ScenarioResult(scenario: "notify", foundation: foundation)
        let directory = stress.freshDirectory("notify-\(result.subject)")
        let commits = writerCount * writes + (foundation ? 0 : 1)  // and our "stop"
        var folded = 0, delivered = 0
        try timed({ result in
            // Every other watcher of ours has its changes delivered on the watcher's thread.
            let watchers = try (0..<watcherCount).map { index in
                try stress.worker(foundation ? "fd-watch" : "watch", in: directory,
                                  ["suite": "stream", "duration-ms": "\(Int(seconds * 1000))"]
                                    .merging(index % 2 == 1 && !foundation ? ["delivery": "watcher-thread"] : [:]) { $1 })
            }
            for watcher in watchers where watcher.line(startingWith: "ready") == nil { result.crashed += 1 }
            let writers = try (0..<writerCount).map { index in
                try stress.worker(foundation ? "fd-write-keys" : "write-keys", in: directory,
                                  ["suite": "stream", "prefix": "w\(index)", "count": "\(writes)", "keys": "16", "value-bytes": "100"])
            }
            stress.runTogether(writers, into: &result)
            // The last commit: every watcher stops when it sees it.
            if !foundation { try Suite(named: "stream", directory: directory).set(true, forKey: "stop") }
            for watcher in watchers {
                let summary = ChildProcess.fields(watcher.line(startingWith: "commits", within: .seconds(3_600)))
                let got = summary["commits"] ?? 0
                delivered += got
                folded += summary["folded"] ?? 0
                let problems = (summary["order"] ?? 0) + (summary["wrong"] ?? 0) + (summary["gaps"] ?? 0) + (summary["mismatched"] ?? 0)
                result.torn += problems
                // With nothing folded, every commit must have come; folded commits came
                // as net changes, and the final values were checked ("mismatched").
                if (summary["folded"] ?? 0) == 0 { result.lost += max(0, commits - got) }
                if !watcher.endedCleanly() { result.crashed += 1 }
            }
        }, &result)
        result.operations = commits * watcherCount
        result.figure("delivered", delivered)
        if !foundation {
            result.figure("net_changes", folded)
            if result.lost + result.torn > 0 { result.fail("\(result.lost) changes missed, \(result.torn) out of order or wrong") }
            if folded > 0 { result.fail("\(folded) changes arrived folded into net changes instead of one by one") }
        }
        return result
    }
}
