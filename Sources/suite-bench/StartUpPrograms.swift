import ChildProcess
import Foundation
import Glibc
import ToolSupport

/// The programs that spawn_to_first_read starts: the widget probe (suite-first-read) as
/// `swift build` makes it and as a widget should be built, and C programs compiled here.
enum StartUpPrograms {
    static let probeName = "suite-first-read"
    /// Where Scripts/build-widget-static puts the probe, under the package's directory.
    static let staticProbePath = ".build-static/release/suite-first-read"
    static let staticBuildCommand = "Scripts/build-widget-static (swift build -c release --static-swift-stdlib, with libstdc++ linked statically and -no-pie: Docs/Performance.md, \"Building a fast-starting widget\")"

    /// This executable's directory: SwiftPM puts the probe beside suite-bench.
    static let executableDirectory: URL = {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: executable).deletingLastPathComponent()
    }()

    /// The probe that was built with suite-bench (dynamically linked, as `swift build` links).
    static var dynamicProbe: String { executableDirectory.appendingPathComponent(probeName).path }

    /// The package this suite-bench was built in: the nearest directory above it with a Package.swift.
    static var packageDirectory: URL? {
        var directory = executableDirectory
        while directory.path != "/" {
            if FileManager.default.fileExists(atPath: directory.appendingPathComponent("Package.swift").path) { return directory }
            directory.deleteLastPathComponent()
        }
        return nil
    }

    /// The probe built as the docs recommend for widgets: `given` (--static-probe), else
    /// the package's .build-static one. Nil, with the reason, when there is none, or
    /// when it does not answer `--bare` as the probe does (so that a broken build costs
    /// its rows' static lines, not the run).
    static func staticProbe(given: String?) -> (path: String?, note: String) {
        let path = given ?? packageDirectory?.appendingPathComponent(staticProbePath).path
        guard let path, FileManager.default.isExecutableFile(atPath: path) else {
            if let given { return (nil, "not measured: --static-probe \(given) is not an executable file") }
            return (nil, "not built: \(staticBuildCommand)")
        }
        do {
            let trial = try TimedSpawn(path, ["--bare"])
            guard trial.status == 0, trial.output == "bare\n" else {
                return (nil, "not measured: \(path) --bare ended with \(trial.status) and printed \(String(trial.output.prefix(200)).debugDescription), not the probe's \"bare\"")
            }
        } catch {
            return (nil, "not measured: \(path) does not start: \(error.message)")
        }
        if let built = modified(path), let sources = newestSource, built < sources {
            return (path, "\(path), built before the last change to the store's or the probe's sources: rebuild it with \(staticBuildCommand)")
        }
        return (path, "\(ELFLinkage(path: path)?.description ?? "an executable of unknown linkage") (\(path))")
    }

    private static func modified(_ path: String) -> Date? {
        try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date
    }

    /// When the sources of the store and the probe last changed, in the package this
    /// suite-bench was built in: a static probe built before then measures older code.
    private static var newestSource: Date? {
        guard let package = packageDirectory else { return nil }
        let directories = ["Sources/SuiteDefaults", "Sources/CSuiteDefaults", "Sources/\(probeName)"].map { package.appendingPathComponent($0) }
        return directories.flatMap { directory in
            (FileManager.default.enumerator(atPath: directory.path)?.allObjects as? [String] ?? [])
                .compactMap { modified(directory.appendingPathComponent($0).path) }
        }.max()
    }

    /// The system's C compiler: the first `cc` on PATH.
    static var compiler: String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/cc" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Compiles `source` (C) with `cc -O2` into `directory/name`: the program's path, or
    /// why there is none.
    static func compile(_ source: String, named name: String, in directory: URL) -> Result<String, PeerError> {
        guard let compiler else { return .failure(PeerError("no C compiler (cc) on PATH")) }
        let sourceFile = directory.appendingPathComponent("\(name).c"), program = directory.appendingPathComponent(name).path
        do {
            try source.write(to: sourceFile, atomically: true, encoding: .utf8)
            let process = try ChildProcess(executable: compiler, arguments: ["-O2", "-o", program, sourceFile.path], environment: nil)
            process.closeInput()
            guard process.wait(timeout: .seconds(120)) == .exited(0) else {
                return .failure(PeerError("cc failed on \(name).c: \(process.standardError.suffix(300))"))
            }
        } catch {
            return .failure(PeerError("cannot compile \(name).c: \(error)"))
        }
        return .success(program)
    }

    /// The floor of a process start: a C program that prints a line.
    static let helloSource = """
        #include <stdio.h>
        int main(void) { puts("hello"); return 0; }

        """

    /// A C program doing the probe's job with LMDB: open the environment FILE as the
    /// peer rows do (MDB_NOSUBDIR, MDB_NOTLS, MDB_NOSYNC, a 64 MiB map), read KEY in a read
    /// transaction, print its value, exit. liblmdb.so.0 is loaded with dlopen and its
    /// functions declared here, so that no -dev package (lmdb.h, liblmdb.so) is needed.
    static let lmdbSource = """
        #include <dlfcn.h>
        #include <stdio.h>
        #include <string.h>

        typedef struct MDB_env MDB_env;
        typedef struct MDB_txn MDB_txn;
        typedef unsigned int MDB_dbi;
        typedef struct { size_t mv_size; void *mv_data; } MDB_val;
        enum { MDB_NOSUBDIR = 0x4000, MDB_NOSYNC = 0x10000, MDB_RDONLY = 0x20000, MDB_NOTLS = 0x200000 };

        int main(int argc, char **argv) {
            if (argc != 3) { fputs("usage: lmdb-first-read FILE KEY\\n", stderr); return 2; }
            void *lmdb = dlopen("liblmdb.so.0", RTLD_NOW);
            if (!lmdb) { fprintf(stderr, "%s\\n", dlerror()); return 4; }
            int (*env_create)(MDB_env **) = (int (*)(MDB_env **))dlsym(lmdb, "mdb_env_create");
            int (*env_set_mapsize)(MDB_env *, size_t) = (int (*)(MDB_env *, size_t))dlsym(lmdb, "mdb_env_set_mapsize");
            int (*env_open)(MDB_env *, const char *, unsigned, int) = (int (*)(MDB_env *, const char *, unsigned, int))dlsym(lmdb, "mdb_env_open");
            int (*txn_begin)(MDB_env *, MDB_txn *, unsigned, MDB_txn **) = (int (*)(MDB_env *, MDB_txn *, unsigned, MDB_txn **))dlsym(lmdb, "mdb_txn_begin");
            int (*dbi_open)(MDB_txn *, const char *, unsigned, MDB_dbi *) = (int (*)(MDB_txn *, const char *, unsigned, MDB_dbi *))dlsym(lmdb, "mdb_dbi_open");
            int (*get)(MDB_txn *, MDB_dbi, MDB_val *, MDB_val *) = (int (*)(MDB_txn *, MDB_dbi, MDB_val *, MDB_val *))dlsym(lmdb, "mdb_get");
            if (!env_create || !env_set_mapsize || !env_open || !txn_begin || !dbi_open || !get) { fputs("liblmdb.so.0 lacks a function\\n", stderr); return 4; }
            MDB_env *env;
            MDB_txn *txn;
            MDB_dbi dbi;
            if (env_create(&env) || env_set_mapsize(env, (size_t)64 << 20) || env_open(env, argv[1], MDB_NOSUBDIR | MDB_NOTLS | MDB_NOSYNC, 0600)
                || txn_begin(env, NULL, MDB_RDONLY, &txn) || dbi_open(txn, NULL, 0, &dbi)) {
                fprintf(stderr, "cannot open %s\\n", argv[1]);
                return 3;
            }
            MDB_val key = { strlen(argv[2]), argv[2] }, value;
            if (get(txn, dbi, &key, &value)) { fprintf(stderr, "no value for %s\\n", argv[2]); return 1; }
            fwrite(value.mv_data, 1, value.mv_size, stdout);
            putchar('\\n');
            return 0;
        }

        """
}
