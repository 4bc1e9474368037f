// swift-tools-version: 6.0
import PackageDescription

/// The package's own directory: the linker's version script is named by its absolute path.
let packageDirectory = Context.packageDirectory

let package = Package(
    name: "suite-defaults",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "SuiteDefaults", targets: ["SuiteDefaults"]),
        .library(name: "UnitPreferences", targets: ["UnitPreferences"]),
        .executable(name: "suite-defaults", targets: ["suite-defaults"]),
        .executable(name: "suite-watch", targets: ["suite-watch"]),
        .executable(name: "suite-stress", targets: ["suite-stress"]),
        .executable(name: "suite-bench", targets: ["suite-bench"]),
        // A widget's start-up and nothing else: what suite-bench's spawn_to_first_read row starts.
        .executable(name: "suite-first-read", targets: ["suite-first-read"]),
        // SuiteUserDefaults: Foundation's UserDefaults backed by a suite (issue #13 A).
        .library(name: "SuiteUserDefaults", targets: ["SuiteUserDefaults"]),
        // The C interface (issue #14): libsuitedefaults.so, soname libsuitedefaults.so.1,
        // with include/suite_defaults.h. Only the sd_ functions of the header are exported.
        .library(name: "suitedefaults", type: .dynamic, targets: ["SuiteDefaultsC"]),
        // SuiteSync: suites mirrored through etcd (issue #15): its etcd client and the mirror.
        .library(name: "SuiteSync", targets: ["SuiteSync"]),
        .executable(name: "suite-sync", targets: ["suite-sync"]),
    ],
    targets: [
        // The few things Swift cannot reach directly: atomics on shared memory, the
        // hardware CRC-32C instruction, and statx.
        .target(name: "CSuiteDefaults"),

        // The store and its observation.
        .target(name: "SuiteDefaults", dependencies: ["CSuiteDefaults"]),

        // The metric/imperial preference, shared through a suite; touches no file itself.
        .target(name: "UnitPreferences", dependencies: ["SuiteDefaults"]),

        // Processes: spawning, reading and reaping children with deadlines (for the
        // tests and the tools that drive several processes), their locks as
        // /proc/locks shows them, and clean termination on SIGINT and SIGTERM.
        .target(name: "ChildProcess"),

        // What the executables share: the option parser, the error and exit statuses,
        // line output, temporary directories, a clock and a seeded generator.
        .target(name: "ToolSupport", dependencies: ["SuiteDefaults"]),

        // A throwaway etcd on loopback (one member or a cluster, http or https, data in a
        // temporary directory, always reaped) for suite-stress sync, suite-bench's sync rows,
        // sync-demo, and the tests (through TestSupport's EtcdCluster).
        .target(name: "LocalEtcd", dependencies: ["ChildProcess", "ToolSupport"]),

        // The jobs worker processes do on a store, this library's suite or Foundation's
        // UserDefaults, for suite-stress, suite-bench and the test worker.
        .target(name: "WorkerRoles", dependencies: ["SuiteDefaults", "UnitPreferences", "ToolSupport"]),

        // SuiteUserDefaults: a drop-in subclass of Foundation's UserDefaults, backed by a
        // suite, in its own module so that the core stays small.
        .target(name: "SuiteUserDefaults", dependencies: ["SuiteDefaults"]),

        // The C interface's public header (include/suite_defaults.h, linked in), so that
        // the Swift side compiles against it, and the per-thread last error message.
        .target(name: "CSuiteDefaultsInterface"),

        // The C interface: @_cdecl functions over the library, for C and Python (ctypes).
        // The linker names the library's ABI version and exports exactly the functions
        // that include/suite_defaults.h declares (Sources/SuiteDefaultsC/exports.map).
        .target(
            name: "SuiteDefaultsC", dependencies: ["SuiteDefaults", "CSuiteDefaults", "CSuiteDefaultsInterface"],
            exclude: ["exports.map"],
            linkerSettings: [.unsafeFlags([
                "-Xlinker", "-soname=libsuitedefaults.so.1",
                "-Xlinker", "--version-script=\(packageDirectory)/Sources/SuiteDefaultsC/exports.map",
            ])]
        ),

        // SuiteSync (issue #15): an etcd v3 client over the JSON gateway, with failover,
        // authentication and streamed watches, on which the mirroring of suites is built.
        // Its HTTP is its own (URLSession on Linux traps on etcd's error replies), and its
        // TLS is OpenSSL's libssl, loaded at run time only for https endpoints.
        // Its mirror (Mirror/) keeps suites and an etcd prefix in step (Docs/Sync.md).
        .target(name: "SuiteSync", dependencies: ["SuiteDefaults"]),

        // Mirrors suites through etcd until stopped; --once reconciles and exits.
        .executableTarget(name: "suite-sync", dependencies: ["SuiteSync", "SuiteDefaults", "ChildProcess", "ToolSupport"]),

        // A `defaults`-style command-line tool over the library.
        .executableTarget(name: "suite-defaults", dependencies: ["SuiteDefaults", "ToolSupport"]),

        // Prints the changes of suites as they happen, from any process.
        .executableTarget(name: "suite-watch", dependencies: ["SuiteDefaults", "ChildProcess", "ToolSupport"]),

        // Concurrency, crash and fault-injection runs over real processes. Its sync
        // scenario starts suite-sync, a dependency so that building suite-stress builds it.
        .executableTarget(name: "suite-stress",
                          dependencies: ["SuiteDefaults", "UnitPreferences", "ChildProcess", "ToolSupport", "WorkerRoles",
                                         "LocalEtcd", "suite-sync"]),

        // A widget's start-up: opens a suite, prints one value, exits. It links only the
        // store, so that it loads only what a widget that needs the store must load.
        .executableTarget(name: "suite-first-read", dependencies: ["SuiteDefaults"]),

        // This library beside Foundation's UserDefaults and the system-call floor. It starts
        // suite-first-read and suite-sync, dependencies so that building suite-bench builds them beside it.
        .executableTarget(name: "suite-bench",
                          dependencies: ["SuiteDefaults", "ChildProcess", "CSuiteDefaults", "ToolSupport", "WorkerRoles",
                                         "LocalEtcd", "suite-first-read", "suite-sync"]),

        // Examples: an app family sharing one suite, and the demo that runs it.
        .target(name: "FitnessShared", dependencies: ["SuiteDefaults", "UnitPreferences", "ChildProcess", "ToolSupport"],
                path: "Examples/FitnessShared"),
        .executableTarget(name: "fitness-app", dependencies: ["FitnessShared", "SuiteDefaults", "UnitPreferences", "ToolSupport"],
                          path: "Examples/fitness-app"),
        .executableTarget(name: "distance-widget", dependencies: ["FitnessShared", "SuiteDefaults", "UnitPreferences"], path: "Examples/distance-widget"),
        .executableTarget(name: "weight-widget", dependencies: ["FitnessShared", "SuiteDefaults", "UnitPreferences"], path: "Examples/weight-widget"),
        .executableTarget(name: "price-ticker", dependencies: ["FitnessShared", "SuiteDefaults", "ToolSupport"], path: "Examples/price-ticker"),
        .executableTarget(
            name: "suite-demo",
            // The programs it starts are dependencies, so `swift run suite-demo` builds them.
            dependencies: ["ChildProcess", "FitnessShared", "SuiteDefaults", "UnitPreferences", "ToolSupport",
                           "fitness-app", "distance-widget", "weight-widget", "price-ticker"],
            path: "Examples/suite-demo"
        ),

        // Two machines, each with the app and two widgets, following each other through a
        // local etcd and two suite-sync processes.
        .executableTarget(
            name: "sync-demo",
            dependencies: ["ChildProcess", "FitnessShared", "SuiteDefaults", "UnitPreferences", "ToolSupport", "LocalEtcd",
                           "fitness-app", "distance-widget", "weight-widget", "suite-sync"],
            path: "Examples/sync-demo"
        ),

        // SuiteUserDefaults: the seed article's App Group code, ported by changing one type name.
        .executableTarget(name: "seed-port", dependencies: ["SuiteUserDefaults"], path: "Examples/seed-port"),

        // The worker that multi-process tests spawn as real child processes.
        .executableTarget(
            name: "suite-test-worker",
            dependencies: ["ChildProcess", "SuiteDefaults", "UnitPreferences", "ToolSupport", "WorkerRoles", "TestRecorders"],
            path: "Tests/suite-test-worker"
        ),
        // What the tests and the test worker share: change recorders, a blocking
        // observer, a locked box (the worker runs forked scenarios with them).
        .target(name: "TestRecorders", dependencies: ["SuiteDefaults"], path: "Tests/TestRecorders"),
        // What the test targets share: temporary directories, workers, recorders (re-exported), etcd.
        .target(name: "TestSupport", dependencies: ["SuiteDefaults", "ChildProcess", "ToolSupport", "LocalEtcd", "TestRecorders"],
                path: "Tests/TestSupport"),
        .testTarget(
            name: "SuiteDefaultsTests",
            dependencies: ["SuiteDefaults", "ChildProcess", "TestSupport", "ToolSupport", "suite-test-worker"]
        ),
        // The tools run as the processes they are.
        .testTarget(
            name: "ToolTests",
            dependencies: ["SuiteDefaults", "ChildProcess", "TestSupport", "ToolSupport", "suite-test-worker", "suite-defaults",
                           "suite-watch", "suite-stress", "suite-bench", "suite-first-read"]
        ),
        .testTarget(
            name: "UnitPreferencesTests",
            dependencies: ["UnitPreferences", "SuiteDefaults", "ChildProcess", "TestSupport", "suite-test-worker"]
        ),
        .testTarget(
            name: "ExamplesTests",
            dependencies: ["ChildProcess", "TestSupport", "SuiteDefaults", "UnitPreferences", "FitnessShared",
                           "fitness-app", "distance-widget", "weight-widget", "price-ticker", "suite-demo", "sync-demo"]
        ),
        // The C interface from C and Python processes: the exports against the header, every
        // call's statuses, Swift and C processes sharing a suite, the C and Python widgets.
        // They compile and load libsuitedefaults.so, which `swift build` makes beside them.
        .testTarget(
            name: "CInterfaceTests",
            dependencies: ["ChildProcess", "TestSupport", "SuiteDefaults", "UnitPreferences", "FitnessShared",
                           "suite-test-worker", "distance-widget", "suite-demo"]
        ),
        // SuiteUserDefaults: Foundation's UserDefaults behaviours, case by case, and the seed port's processes.
        .testTarget(
            name: "SuiteUserDefaultsTests",
            dependencies: ["SuiteUserDefaults", "SuiteDefaults", "ChildProcess", "TestSupport", "seed-port"]
        ),
        // SuiteSync's etcd client against real etcd processes (a member, a 3-member
        // cluster) and against a fake server that answers garbage; they skip where
        // `etcd` is not installed (apt-get install etcd-server).
        .testTarget(
            name: "SuiteSyncTests",
            dependencies: ["SuiteSync", "SuiteDefaults", "ChildProcess", "TestSupport", "suite-sync", "suite-test-worker"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
