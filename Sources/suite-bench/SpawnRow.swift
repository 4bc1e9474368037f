import Foundation
import ToolSupport

extension Bench {
    /// A widget's start: from `posix_spawn` to the exit of a process that opens a 100-key
    /// suite, reads one value and prints it. Ours as `swift build` links it and as the docs
    /// recommend building a widget (Scripts/build-widget-static); a C program that prints a line (the floor); and
    /// with --peers, a C program doing the same job with LMDB. The programs take turns
    /// in one loop, so that the machine's noise falls on all alike.
    func spawnToFirstReadRow() throws -> BenchRow {
        _ = try suite("spawn", keys: 100)
        struct Program {
            var path: String
            var arguments: [String]
            var expected: String
            var samples = Samples()
        }
        var programs: [String: Program] = [:]
        let read = [root.path, "spawn", "key.7"]
        programs["dynamic"] = Program(path: StartUpPrograms.dynamicProbe, arguments: read, expected: "value 7\n")
        programs["dynamic bare"] = Program(path: StartUpPrograms.dynamicProbe, arguments: ["--bare"], expected: "bare\n")
        let staticProbe = StartUpPrograms.staticProbe(given: options.staticProbe)
        if let path = staticProbe.path {
            programs["static"] = Program(path: path, arguments: read, expected: "value 7\n")
            programs["static bare"] = Program(path: path, arguments: ["--bare"], expected: "bare\n")
        }
        let programsDirectory = root.appendingPathComponent("start-up-programs", isDirectory: true)
        try FileManager.default.createDirectory(at: programsDirectory, withIntermediateDirectories: true)
        let hello = StartUpPrograms.compile(StartUpPrograms.helloSource, named: "hello", in: programsDirectory)
        if case .success(let path) = hello { programs["C hello"] = Program(path: path, arguments: [], expected: "hello\n") }
        var lmdbNote = Peer.lmdb.notInstalled
        if options.peers && Peer.lmdb.isInstalled {
            let store = Peer.lmdb.path("spawn", in: root)
            _ = try peerStore(.lmdb, "spawn", keys: 100)
            switch StartUpPrograms.compile(StartUpPrograms.lmdbSource, named: "lmdb-first-read", in: programsDirectory) {
            case .success(let path): programs["C LMDB"] = Program(path: path, arguments: [store, "key.7"], expected: "value 7\n")
            case .failure(let error): lmdbNote = error.description
            }
        }

        // One round first that is not counted: it brings every program into the page cache.
        let names = programs.keys.sorted(), rounds = options.samples(200, quick: 10)
        var staticNote = staticProbe.note
        for round in 0...rounds {
            for offset in names.indices {
                // Each round starts with the next program, so that none always follows the same one.
                let name = names[(round + offset) % names.count]
                guard let program = programs[name] else { continue }
                let run = try TimedSpawn(program.path, program.arguments)
                guard run.status == 0, run.output == program.expected else {
                    let failure = "\(program.path) \(program.arguments.joined(separator: " ")) ended with \(run.status): \(run.output.suffix(300))"
                    // A broken static build costs its line, not the run.
                    guard name.hasPrefix("static") else { throw ToolError(status: 1, message: failure) }
                    programs["static"] = nil
                    programs["static bare"] = nil
                    staticNote = "not measured: \(failure)"
                    continue
                }
                if round > 0 { programs[name]!.samples.add(run.microseconds) }
            }
        }

        func figure(_ name: String) -> BenchRow.Figure? { programs[name].flatMap { .init($0.samples) } }
        func milliseconds(_ name: String) -> String { figure(name).map { String(format: "%.2f ms", $0.median / 1_000) } ?? "not measured" }
        var row = BenchRow(
            name: "spawn_to_first_read", ours: figure("dynamic")!, foundation: nil, floor: figure("C hello"),
            note: "from posix_spawn to the exit (reaped) of a process that opens a 100-key suite, reads one value and prints it: suite-first-read, which links only SuiteDefaults, as swift build links it (the Swift runtime and FoundationEssentials loaded dynamically); "
                + "the same program opening no suite (--bare) takes \(milliseconds("dynamic bare")), and \(milliseconds("static bare")) in the static build; "
                + "floor: a C program that prints a line (cc -O2)\(hello.failureNote); \(rounds) rounds, the programs taking turns")
        row.oursStatic = .init(figure: figure("static"), note: staticNote)
        if options.peers {
            row.peers = [
                .init(peer: .sqlite, figure: nil, note: "not measured: no C program for SQLite here (cold_start has its library part)"),
                .init(peer: .lmdb, figure: figure("C LMDB"),
                      note: programs["C LMDB"] == nil ? lmdbNote
                        : "a C program (cc -O2) that loads liblmdb.so.0 with dlopen, opens the 100-key store as the other rows do (MDB_NOSUBDIR, MDB_NOTLS, MDB_NOSYNC), reads the key in a read transaction with mdb_get and prints it; timed in the same loop as ours"),
            ]
        }
        return row
    }
}

extension Result where Failure == PeerError {
    /// ", none: WHY" when there is no program, else nothing.
    var failureNote: String {
        if case .failure(let error) = self { return ", none: \(error.description)" }
        return ""
    }
}
