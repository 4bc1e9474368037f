import ToolSupport

/// The options of the shared roles, as every worker program declares them.
public enum RoleOptions {
    public static let all: [CommandLineOption] = [
        .value("--dir", "DIR", help: "the suite directory (for UserDefaults, XDG_CONFIG_HOME)"),
        .value("--suite", "NAME", help: "the suite to work on"),
        .value("--threads", "T", help: "increment: threads"),
        .value("--count", "N", help: "how many: increments of each thread, writes, versions"),
        .value("--prefix", "P", help: "write-keys and ack-loop: the keys' prefix"),
        .value("--keys", "K", help: "write-keys: the values go to K keys, which are overwritten"),
        .value("--key", "KEY", help: "the key to read or write"),
        .value("--size", "BYTES", help: "try-set: a value of BYTES bytes"),
        .value("--lang", "LANG", help: "the language a unit system is detected from"),
        .value("--compaction-slack", "BYTES", help: "the suite's compaction slack"),
        .value("--file-size-limit", "BYTES", help: "RLIMIT_FSIZE, with SIGXFSZ ignored: a full disk"),
    ]
}
