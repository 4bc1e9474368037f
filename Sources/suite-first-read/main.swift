// suite-first-read: what a widget does when it starts, and nothing else. It links
// only SuiteDefaults, so that what `suite-bench` times from `posix_spawn` to its exit
// (the spawn_to_first_read row) is the store's start-up, not the tools'.
//
//     suite-first-read DIR SUITE KEY            prints the value of KEY in the suite SUITE of DIR
//     suite-first-read --memory DIR SUITE [COUNT]
//         reads every value, prints "peak_rss_kib N keys M"; with COUNT, reads the values of
//         key.0 ... key.COUNT-1 one by one and keeps none (as suite-bench's memory row and the
//         peers' workers do), rather than taking a copy of them all
//     suite-first-read --bare [--memory]        opens no suite: prints "bare" (and its peak RSS)
//
// --bare is the fair "bare Swift process" to compare with: the same program with the
// same libraries loaded, which touches no suite, so the difference is what the store
// itself costs. Build it as a widget should be built (Docs/Performance.md, "Building a
// fast-starting widget"), into .build-static/, where suite-bench finds it:
//
//     Scripts/build-widget-static
//
// Exit status: 0 printed; 1 no such key (or not a string); 2 usage; 3 the suite did not open.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import SuiteDefaults

/// The peak resident set size so far (VmHWM of /proc/self/status), in KiB; 0 if unreadable.
func peakResidentKiB() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
}

func fail(_ status: Int32, _ message: String) -> Never {
    _ = "suite-first-read: \(message)\n".withCString { write(STDERR_FILENO, $0, strlen($0)) }
    exit(status)
}

/// Opens the suite as a widget does, by name in the default place, which the
/// environment names (`SUITE_DEFAULTS_DIR`, as a session would set it): made of strings
/// alone, without `URL`'s parsing.
func open(_ directory: String, _ name: String) -> Suite {
    setenv("SUITE_DEFAULTS_DIR", directory, 1)
    do {
        return try Suite(named: name)
    } catch {
        fail(3, "\(error)")
    }
}

/// The whole program, in a function rather than top-level code: top-level code is
/// the main actor's, and its closures would check at run time that they run there,
/// touching the concurrency runtime, which is not what a widget's store costs.
func run(_ arguments: [String]) -> Never {
    let usage = "usage: suite-first-read DIR SUITE KEY | --memory DIR SUITE [COUNT] | --bare [--memory]"
    switch arguments.first {
    case "--bare":
        guard arguments.count <= 2, arguments.count == 1 || arguments[1] == "--memory" else { fail(2, usage) }
        print(arguments.count == 2 ? "peak_rss_kib \(peakResidentKiB()) keys 0" : "bare")
    case "--memory":
        guard arguments.count == 3 || arguments.count == 4 else { fail(2, usage) }
        let suite = open(arguments[1], arguments[2])
        if arguments.count == 4 {
            guard let count = Int(arguments[3]), count >= 0 else { fail(2, usage) }
            var found = 0
            for index in 0..<count where suite.string(forKey: "key.\(index)") != nil { found += 1 }
            print("peak_rss_kib \(peakResidentKiB()) keys \(found)")
        } else {
            // Every value read once, as a widget that shows them all would.
            let values = suite.storedValues()
            print("peak_rss_kib \(peakResidentKiB()) keys \(values.count)")
            withExtendedLifetime(values) {}
        }
        withExtendedLifetime(suite) {}
    default:
        guard arguments.count == 3 else { fail(2, usage) }
        guard let value = open(arguments[0], arguments[1]).string(forKey: arguments[2]) else {
            fail(1, "no string for the key \(arguments[2])")
        }
        print(value)
    }
    exit(0)
}

run(Array(CommandLine.arguments.dropFirst()))
