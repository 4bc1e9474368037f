import ChildProcess
import Foundation
import Glibc
import Testing
import TestSupport
@testable import SuiteDefaults

/// The seventh hostile pass: every status call through statx without the times
/// (`sd_read_file_status`, its fstatat fallback under a seccomp filter or a missing
/// statx, the device encoding that /proc/locks is matched with), and the slot an
/// update's read found, used by its write (`SuiteTransaction.lastRead`).
@Suite("Hostile round seven")
struct HostileRoundSevenTests {
    let directory = TemporaryDirectory()

    // MARK: Helpers

    /// Compiles C `source` into `name` (a shared object with `shared`) in the test's
    /// directory; nil when there is no C compiler.
    func compile(_ source: String, to name: String, shared: Bool = false) throws -> String? {
        let compilers: [String] = ["/usr/bin/cc", "/usr/bin/gcc", "/usr/bin/clang"]
        guard let compiler = compilers.first(where: { access($0, X_OK) == 0 }) else { return nil }
        let sourcePath = directory.file(name + ".c").path, output = directory.file(name).path
        try source.write(toFile: sourcePath, atomically: false, encoding: .utf8)
        let flags = shared ? ["-shared", "-fPIC", "-ldl"] : []
        let built = try run(program: compiler, ["-O1", "-o", output, sourcePath] + flags)
        #expect(built.status == .exited(0), "cc: \(built.errors)")
        return built.status == .exited(0) ? output : nil
    }

    /// `sd-launch ERRNO UID PROGRAM ARGS...`: as user UID (-1: as it is), with a
    /// seccomp filter that answers statx with ERRNO (0: no filter), execs PROGRAM.
    /// Exits 94 if the filter is not in force (statx did not fail with ERRNO).
    static let launcherSource = #"""
        #define _GNU_SOURCE
        #include <errno.h>
        #include <fcntl.h>
        #include <grp.h>
        #include <linux/audit.h>
        #include <linux/filter.h>
        #include <linux/seccomp.h>
        #include <stddef.h>
        #include <stdlib.h>
        #include <sys/prctl.h>
        #include <sys/stat.h>
        #include <sys/syscall.h>
        #include <unistd.h>
        #if defined(__x86_64__)
        #define SD_ARCH AUDIT_ARCH_X86_64
        #elif defined(__aarch64__)
        #define SD_ARCH AUDIT_ARCH_AARCH64
        #endif
        int main(int argc, char **argv) {
            if (argc < 4) return 90;
            int answer = atoi(argv[1]), uid = atoi(argv[2]);
            if (uid >= 0 && (setgroups(0, NULL) != 0 || setgid(uid) != 0 || setuid(uid) != 0)) return 91;
            if (answer > 0) {
                struct sock_filter filter[] = {
                    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
                    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SD_ARCH, 1, 0),
                    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
                    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_statx, 0, 1),
                    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (answer & SECCOMP_RET_DATA)),
                    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
                };
                struct sock_fprog program = { .len = sizeof filter / sizeof filter[0], .filter = filter };
                if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return 92;
                if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) return 93;
                struct statx probe;
                errno = 0;
                if (syscall(__NR_statx, AT_FDCWD, "/", 0, STATX_TYPE, &probe) != -1 || errno != answer) return 94;
            }
            execv(argv[3], argv + 3);
            return 95;
        }
        """#

    /// An LD_PRELOAD shim for the statx system call, which the library makes through
    /// `syscall` (not glibc's statx, which answers an ENOSYS with its own fstatat), by
    /// $SD_SHIM: unset, the real call; "enosys" and "eperm" fail every call so; "eintr"
    /// fails every other call with EINTR; "partial" leaves the inode and the blocks out
    /// of the answer's mask and puts nonsense in them; "nullpath" answers a NULL path
    /// with EFAULT, as kernels before 6.11 do, and "nullpath-eperm" with EPERM, as a
    /// seccomp filter that looks at the path may. It counts the statx calls, those asking
    /// for a time, the glibc stat-family calls on paths or descriptors under
    /// $SD_SHIM_WATCH, and the statx calls with a NULL path that it refused, into
    /// $SD_SHIM_LOG at exit.
    static let shimSource = #"""
        #define _GNU_SOURCE
        #include <dlfcn.h>
        #include <errno.h>
        #include <fcntl.h>
        #include <stdarg.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <sys/stat.h>
        #include <sys/syscall.h>
        #include <unistd.h>
        static long statx_calls, timed_calls, stat_calls, refused_null_calls;
        static int is_mode(const char *name) { const char *mode = getenv("SD_SHIM"); return mode && !strcmp(mode, name); }
        static int watched_path(int directory, const char *path) {
            const char *watch = getenv("SD_SHIM_WATCH");
            if (!watch) return 0;
            char resolved[4096] = "";
            if (path && path[0] == '/') { snprintf(resolved, sizeof resolved, "%s", path); }
            else {
                char link[64];
                if (directory == AT_FDCWD) { if (!getcwd(resolved, sizeof resolved - 1)) return 0; }
                else {
                    snprintf(link, sizeof link, "/proc/self/fd/%d", directory);
                    ssize_t n = readlink(link, resolved, sizeof resolved - 1);
                    if (n < 0) return 0;
                    resolved[n] = 0;
                }
                if (path && path[0]) { strncat(resolved, "/", sizeof resolved - strlen(resolved) - 1); strncat(resolved, path, sizeof resolved - strlen(resolved) - 1); }
            }
            return strstr(resolved, watch) != NULL;
        }
        long syscall(long number, ...) {
            va_list list;
            va_start(list, number);
            long a1 = va_arg(list, long), a2 = va_arg(list, long), a3 = va_arg(list, long);
            long a4 = va_arg(list, long), a5 = va_arg(list, long), a6 = va_arg(list, long);
            va_end(list);
            static long (*real)(long, ...);
            if (!real) real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
            if (number != SYS_statx) return real(number, a1, a2, a3, a4, a5, a6);
            unsigned int mask = (unsigned int)a4;
            struct statx *buffer = (struct statx *)a5;
            long call = __atomic_add_fetch(&statx_calls, 1, __ATOMIC_RELAXED);
            if (mask & (STATX_ATIME | STATX_MTIME | STATX_CTIME | STATX_BTIME)) __atomic_add_fetch(&timed_calls, 1, __ATOMIC_RELAXED);
            if (is_mode("enosys")) { errno = ENOSYS; return -1; }
            if (is_mode("eperm")) { errno = EPERM; return -1; }
            if (is_mode("eintr") && call % 2 == 1) { errno = EINTR; return -1; }
            if ((is_mode("nullpath") || is_mode("nullpath-eperm")) && a2 == 0) {
                __atomic_add_fetch(&refused_null_calls, 1, __ATOMIC_RELAXED);
                errno = is_mode("nullpath") ? EFAULT : EPERM;
                return -1;
            }
            long result = real(number, a1, a2, a3, a4, a5, a6);
            if (result == 0 && is_mode("partial")) {
                buffer->stx_mask &= ~(STATX_INO | STATX_BLOCKS);
                buffer->stx_ino = 0x5EED0000 + call;
                buffer->stx_blocks = 1u << 30;
            }
            return result;
        }
        #define COUNTED(name, params, directory, path, args) \
            int name params { \
                static int (*real) params; \
                if (!real) real = dlsym(RTLD_NEXT, #name); \
                if (watched_path(directory, path)) __atomic_add_fetch(&stat_calls, 1, __ATOMIC_RELAXED); \
                return real args; \
            }
        COUNTED(stat, (const char *p, struct stat *s), AT_FDCWD, p, (p, s))
        COUNTED(lstat, (const char *p, struct stat *s), AT_FDCWD, p, (p, s))
        COUNTED(fstat, (int fd, struct stat *s), fd, "", (fd, s))
        COUNTED(fstatat, (int d, const char *p, struct stat *s, int f), d, p, (d, p, s, f))
        COUNTED(stat64, (const char *p, struct stat64 *s), AT_FDCWD, p, (p, s))
        COUNTED(lstat64, (const char *p, struct stat64 *s), AT_FDCWD, p, (p, s))
        COUNTED(fstat64, (int fd, struct stat64 *s), fd, "", (fd, s))
        COUNTED(fstatat64, (int d, const char *p, struct stat64 *s, int f), d, p, (d, p, s, f))
        __attribute__((destructor)) static void report(void) {
            const char *log = getenv("SD_SHIM_LOG");
            if (!log) return;
            FILE *file = fopen(log, "a");
            if (!file) return;
            fprintf(file, "statx %ld timed %ld stat %ld null %ld\n", statx_calls, timed_calls, stat_calls, refused_null_calls);
            fclose(file);
        }
        """#

    /// How a program is run: plainly, under the seccomp launcher, or with the shim.
    enum Mode: CustomStringConvertible {
        case plain
        case seccomp(CInt)
        case shim(String)

        var description: String {
            switch self {
            case .plain: "plain"
            case .seccomp(let answer): "seccomp errno \(answer)"
            case .shim(let mode): "shim \(mode)"
            }
        }
    }

    struct Tools {
        let launcher: String
        let shim: String
    }

    func tools() throws -> Tools? {
        guard let launcher = try compile(Self.launcherSource, to: "sd-launch"),
              let shim = try compile(Self.shimSource, to: "sd-shim.so", shared: true) else { return nil }
        return Tools(launcher: launcher, shim: shim)
    }

    /// Starts `program` (a path) with `arguments` in `mode`, as `uid` (nil: root).
    func start(_ program: String, _ arguments: [String], mode: Mode, tools: Tools, uid: Int? = nil,
               log: String? = nil, watch: String? = nil) throws -> ChildProcess {
        var environment = ProcessInfo.processInfo.environment
        var executable = program, words = arguments
        switch mode {
        case .plain:
            if uid != nil { (executable, words) = (tools.launcher, ["0", "-1", program] + arguments) }
        case .seccomp(let answer):
            (executable, words) = (tools.launcher, ["\(answer)", "-1", program] + arguments)
        case .shim(let shimMode):
            environment["LD_PRELOAD"] = tools.shim
            environment["SD_SHIM"] = shimMode
            if uid != nil { (executable, words) = (tools.launcher, ["0", "-1", program] + arguments) }
        }
        if let uid { words[1] = "\(uid)" }
        if let log { environment["SD_SHIM_LOG"] = log; environment["LD_PRELOAD"] = tools.shim }
        if let watch { environment["SD_SHIM_WATCH"] = watch }
        return try ChildProcess(executable: executable, arguments: words, environment: environment)
    }

    /// Runs `program` to its end: its status, and its output and errors, with
    /// `replacing`'s keys replaced by their values.
    func outcome(_ program: String, _ arguments: [String], mode: Mode, tools: Tools, uid: Int? = nil,
                 replacing: [String: String] = [:], log: String? = nil, watch: String? = nil) throws -> String {
        let process = try start(program, arguments, mode: mode, tools: tools, uid: uid, log: log, watch: watch)
        // The worker exits as soon as its standard input (a pipe) closes: only after it ends.
        if program != Self.worker { process.closeInput() }
        let status = process.wait(timeout: .seconds(60))
        if status == nil { _ = process.kill() }
        process.closeInput()
        var text = "\(status.map(\.description) ?? "hung") | \(process.lines.joined(separator: "\\n")) | \(process.standardError)"
        // Longest first, so that a path is replaced before a path it contains.
        for (from, to) in replacing.sorted(by: { $0.key.count > $1.key.count }) {
            text = text.replacingOccurrences(of: from, with: to)
        }
        return text
    }

    static var cli: String { Products.path("suite-defaults") }
    static var worker: String { Products.path("suite-test-worker") }
    static var haveCLI: Bool { access(cli, X_OK) == 0 }

    /// Waits for a `hold-lock` worker started in `place` to hold suite `name`'s lock.
    func holder(in place: String, suite name: String, mode: Mode = .plain, tools: Tools) throws -> ChildProcess {
        let holder = try start(Self.worker, ["hold-lock", "--dir", place, "--suite", name], mode: mode, tools: tools)
        holder.expectLine(startingWith: "holding")
        return holder
    }

    /// Asserts that `ours` says what glibc's `raw` says.
    func expectAgreement(_ ours: FileStatus, _ raw: stat, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(ours.device == UInt64(raw.st_dev), "\(what): device \(ours.device) vs \(raw.st_dev)", sourceLocation: sourceLocation)
        #expect(ours.inode == UInt64(raw.st_ino), "\(what): inode", sourceLocation: sourceLocation)
        #expect(ours.mode == UInt32(raw.st_mode), "\(what): mode", sourceLocation: sourceLocation)
        #expect(ours.owner == raw.st_uid && ours.group == raw.st_gid, "\(what): owner", sourceLocation: sourceLocation)
        #expect(ours.size == Int(raw.st_size), "\(what): size \(ours.size) vs \(raw.st_size)", sourceLocation: sourceLocation)
        #expect(ours.linkCount == Int(raw.st_nlink), "\(what): links", sourceLocation: sourceLocation)
        #expect(ours.allocatedBytes == Int(raw.st_blocks) * 512, "\(what): blocks", sourceLocation: sourceLocation)
    }

    // MARK: 1. Status calls: every kind of file, in process

    /// Every kind of file and descriptor, and every error a path can give: ours says
    /// what glibc's fstatat / fstat says, or fails with the same errno.
    @Test func statusOfEveryKindOfFileAgreesWithGlibc() throws {
        let base = directory.path
        let file = base + "/file", fifo = base + "/fifo", socketPath = base + "/socket", linkPath = base + "/link"
        let dangling = base + "/dangling", loop = base + "/loop", sub = base + "/sub", hard = base + "/hard"
        let longName = String(repeating: "n", count: 255), tooLongName = String(repeating: "n", count: 256)
        #expect(FileManager.default.createFile(atPath: file, contents: Data(repeating: 7, count: 12_345)))
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(symlink(file, linkPath) == 0 && symlink(base + "/nothing", dangling) == 0 && symlink(loop, loop) == 0)
        #expect(mkdir(sub, 0o700) == 0)
        #expect(link(file, hard) == 0)
        #expect(FileManager.default.createFile(atPath: base + "/" + longName, contents: Data([1])))
        // A file of another owner, and a sparse one.
        let foreign = base + "/foreign", sparse = base + "/sparse"
        #expect(FileManager.default.createFile(atPath: foreign, contents: Data([1, 2, 3])))
        if geteuid() == 0 { #expect(chown(foreign, 65534, 65534) == 0) }
        let sparseFD = open(sparse, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        #expect(ftruncate(sparseFD, 1 << 40) == 0)
        close(sparseFD)
        // A bound Unix socket.
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            for (index, byte) in socketPath.utf8.enumerated() where index < bytes.count - 1 { bytes[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        // On tmpfs too.
        let shm = "/dev/shm/hostile7-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        #expect(FileManager.default.createFile(atPath: shm, contents: Data(repeating: 1, count: 9000)))
        defer { unlink(shm) }

        let paths: [(String, Bool)] = [
            (file, true), (file, false), (fifo, false), (socketPath, false), (linkPath, false), (linkPath, true), (dangling, false),
            (sub, true), (hard, true), (base + "/" + longName, true), (foreign, true), (sparse, true), (shm, true),
            ("/dev/shm", true), ("/dev/null", true), ("/dev/zero", false), ("/proc/self/status", true), ("/proc/self/stat", true), ("/proc/self", false),
            ("/proc/self", true), ("/proc/self/fd/0", false), ("/proc/self/ns/mnt", true), ("/sys/kernel", true), ("/", true),
            ("/proc/sys/kernel/random/boot_id", true), ("/proc/locks", true),
        ]
        for (path, follows) in paths {
            var raw = stat()
            guard fstatat(AT_FDCWD, path, &raw, follows ? 0 : AT_SYMLINK_NOFOLLOW) == 0 else {
                Issue.record("glibc could not stat \(path)")
                continue
            }
            expectAgreement(try FileStatus.of(path: path, followingLinks: follows), raw, "\(path) follows \(follows)")
        }
        // Errors: the same errno as glibc's, and the directory handle's nil only for ENOENT.
        let failing: [(String, Bool)] = [
            (dangling, true), (loop, true), (base + "/" + tooLongName, true), (file + "/below", true), (base + "/missing", false),
            ("", true), ("", false), ("/" + String(repeating: "d/", count: 2100), true), (linkPath + "/x", false),
        ]
        for (path, follows) in failing {
            var raw = stat()
            #expect(fstatat(AT_FDCWD, path, &raw, follows ? 0 : AT_SYMLINK_NOFOLLOW) == -1)
            let expected = errno
            do {
                _ = try FileStatus.of(path: path, followingLinks: follows)
                Issue.record("\(path.prefix(80)): no error, glibc's was \(expected)")
            } catch let failure as SystemCallError {
                #expect(failure.errno == expected, "\(path.prefix(80)): errno \(failure.errno), glibc's \(expected)")
            }
        }
        let handle = try DirectoryHandle.open(path: base)
        for name in ["file", "fifo", "socket", "link", "dangling", "loop", "sub", "hard", longName, "foreign", "sparse"] {
            var raw = stat()
            #expect(fstatat(AT_FDCWD, base + "/" + name, &raw, AT_SYMLINK_NOFOLLOW) == 0)
            expectAgreement(try #require(try handle.status(of: name)), raw, "handle \(name.prefix(20))")
        }
        #expect(try handle.status(of: "missing") == nil)
        #expect(try handle.status(of: "dangling/x") == nil, "ENOENT through a dangling link")
        for (name, expected) in [("file/x", ENOTDIR), (tooLongName, ENAMETOOLONG), ("loop/x", ELOOP), ("", ENOENT)] {
            do {
                let status = try handle.status(of: name)
                #expect(expected == ENOENT && status == nil, "\(name.prefix(20)): \(String(describing: status))")
            } catch let failure as SystemCallError {
                #expect(failure.errno == expected && failure.call == "fstatat", "\(name.prefix(20)): \(failure)")
            }
        }
    }

    /// Descriptors of every kind: pipes, sockets, inotify, O_PATH (of a file
    /// and of a symbolic link), a deleted file, devices, directories, /proc.
    @Test func statusOfEveryKindOfDescriptorAgreesWithFstat() throws {
        let base = directory.path
        #expect(FileManager.default.createFile(atPath: base + "/file", contents: Data(repeating: 1, count: 100)))
        #expect(symlink(base + "/file", base + "/link") == 0)
        var descriptors: [(CInt, String)] = []
        defer { for (descriptor, _) in descriptors { close(descriptor) } }
        var pipeEnds: [CInt] = [0, 0]
        #expect(pipe(&pipeEnds) == 0)
        descriptors += [(pipeEnds[0], "pipe read"), (pipeEnds[1], "pipe write")]
        var pair: [CInt] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        descriptors += [(pair[0], "socketpair")]
        close(pair[1])
        let pathOnly: CInt = 0o10000000 // O_PATH, which Glibc's module leaves out
        // A tmpfs directory of this test's own: /dev/shm itself changes size and link
        // count between the two calls whenever another test makes something there.
        var template = Array("/dev/shm/suite-status-XXXXXX".utf8CString)
        let tmpfsDirectory = try #require(mkdtemp(&template).map { String(cString: $0) })
        defer { rmdir(tmpfsDirectory) }
        descriptors += [(inotify_init1(CInt(IN_CLOEXEC)), "inotify")]
        descriptors += [(open(base + "/file", O_RDONLY | O_CLOEXEC), "file"),
                        (open(base + "/file", pathOnly | O_CLOEXEC), "O_PATH file"),
                        (open(base + "/link", pathOnly | O_NOFOLLOW | O_CLOEXEC), "O_PATH link"),
                        (open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC), "directory"),
                        (open("/dev/null", O_RDWR | O_CLOEXEC), "/dev/null"),
                        (open("/proc/self/stat", O_RDONLY | O_CLOEXEC), "/proc/self/stat"),
                        (open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC), "pid namespace"),
                        (open(tmpfsDirectory, O_RDONLY | O_DIRECTORY | O_CLOEXEC), "tmpfs directory")]
        let deleted = open(base + "/deleted", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        #expect(write(deleted, "abc", 3) == 3)
        #expect(unlink(base + "/deleted") == 0)
        descriptors.append((deleted, "deleted file"))
        for (descriptor, what) in descriptors {
            try #require(descriptor >= 0, "\(what)")
            var raw = stat()
            #expect(fstat(descriptor, &raw) == 0, "\(what)")
            expectAgreement(try FileDescriptor(rawValue: descriptor).status(), raw, what)
        }
        // A closed descriptor: EBADF, named as fstat.
        let closed = open("/dev/null", O_RDONLY | O_CLOEXEC)
        close(closed)
        #expect {
            try FileDescriptor(rawValue: closed).status()
        } throws: { ($0 as? SystemCallError).map { $0.errno == EBADF && $0.call == "fstat" } ?? false }
    }

    // MARK: 1. Status calls: real processes under seccomp and with statx shimmed

    /// The CLI and the worker, run plainly, under a seccomp filter that answers statx
    /// with EPERM or ENOSYS, and with statx shimmed to fail (ENOSYS, EPERM, every
    /// other call EINTR) or to leave fields out of its answer: every scenario ends
    /// the same way, byte for byte, as it does plainly. The scenarios touch every
    /// status call: opening, committing, a missing suite (ENOENT through the
    /// fallback), a FIFO, a link and a directory at the suite's name, a 224-byte
    /// name, a lock holder named by pid, and a directory another user may not enter.
    @Test(.enabled(if: geteuid() == 0 && HostileRoundSevenTests.haveCLI, "needs root (a second user) and the CLI"))
    func everyScenarioEndsAlikeWhateverStatxAnswers() throws {
        guard let tools = try tools() else { return }
        let modes: [Mode] = [.plain, .seccomp(EPERM), .seccomp(ENOSYS), .shim("enosys"), .shim("eperm"), .shim("eintr"), .shim("partial"), .shim("nullpath"), .shim("nullpath-eperm")]
        _ = chmod(directory.path, 0o711)
        // Another user reaches the built programs only where every directory above them
        // lets it (a checkout in a 0700 directory does not): the launcher then cannot
        // exec them (status 95), and the other user's steps have nothing to show.
        let otherUserCanRun = !(try outcome(Self.cli, ["--help"], mode: .plain, tools: tools, uid: 65534)
            .hasPrefix("exited with status 95"))
        var outcomes: [[String]] = []
        for (index, mode) in modes.enumerated() {
            let place = directory.file("mode\(index)").path
            #expect(mkdir(place, 0o755) == 0)
            #expect(mkfifo(place + "/F.suite", 0o644) == 0 && mkdir(place + "/D.suite", 0o700) == 0)
            let privatePlace = place + "/private"
            #expect(mkdir(privatePlace, 0o700) == 0)
            try Suite(named: "P", directory: URL(fileURLWithPath: privatePlace)).set("secret", forKey: "k")
            let longName = String(repeating: "s", count: Validation.maximumNameLength)
            let log = place + "/shim.log"
            let shimLog: String? = if case .shim = mode { log } else { nil }
            func cli(_ words: [String], uid: Int? = nil) throws -> String {
                try outcome(Self.cli, ["--dir", place, "--timeout", "0.3"] + words, mode: mode, tools: tools, uid: uid,
                            replacing: [place: "DIR", longName: "LONG"], log: shimLog)
            }
            var results: [String] = []
            results.append(try cli(["write", "S", "k", "v"]))
            results.append(try cli(["read", "S", "k"]))
            results.append(try cli(["write", "S", "n", "-int", "7"]))
            results.append(try cli(["read", "S"]))
            results.append(try cli(["read", "Missing", "k"]))
            results.append(try cli(["read", "F", "k"]))
            results.append(try cli(["read", "D", "k"]))
            #expect(symlink(place + "/S.suite", place + "/L.suite") == 0)
            results.append(try cli(["read", "L", "k"]))
            results.append(try cli(["write", longName, "k", "v"]))
            results.append(try cli(["read", longName, "k"]))
            results.append(try cli(["delete", "S", "n"]))
            results.append(try cli(["list"]))
            for words in [["read", "P", "k"], ["write", "P", "k", "stolen"]] {
                guard otherUserCanRun else {
                    results.append("not run: user 65534 cannot reach the built programs")
                    continue
                }
                results.append(try outcome(Self.cli, ["--dir", privatePlace, "--timeout", "0.3"] + words, mode: mode, tools: tools,
                                           uid: 65534, replacing: [place: "DIR"], log: shimLog))
            }
            // The worker, as a library user: reads one key, writes another.
            results.append(try outcome(Self.worker, ["hostile-check", "--dir", place, "--suite", "S", "--key", "k", "--key2", "w", "--value", "x"],
                                       mode: mode, tools: tools, log: shimLog))
            let holder = try holder(in: place, suite: "Locked", tools: tools)
            results.append(try cli(["write", "Locked", "k", "v"]).replacingOccurrences(of: "process \(holder.pid) holds", with: "process HOLDER holds"))
            _ = holder.kill()
            results.append(try cli(["read", "Locked", "holder"]))
            outcomes.append(results)
            if case .shim(let shimMode) = mode {
                let counts = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
                #expect(!counts.isEmpty, "\(mode): the shim was not loaded")
                for line in counts.split(separator: "\n") {
                    let numbers = line.split(separator: " ").compactMap { Int($0) }
                    guard numbers.count == 4 else { continue }
                    #expect(numbers[1] == 0, "\(mode): a statx asked for a time: \(line)")
                    // Once statx is found missing, it is not asked again; once a NULL
                    // path is refused, it is not offered again.
                    if shimMode == "enosys" || shimMode == "eperm" { #expect(numbers[0] <= 2, "\(mode): \(line)") }
                    #expect(numbers[3] <= 1, "\(mode): a NULL path offered again after its refusal: \(line)")
                }
                if shimMode.hasPrefix("nullpath") {
                    #expect(counts.contains(" null 1\n"), "\(mode): no process offered a NULL path: \(counts)")
                    // A refused NULL path is not taken for a missing statx: the calls go on.
                    #expect(counts.split(separator: "\n").contains { $0.hasSuffix(" null 1") && ($0.split(separator: " ").compactMap { Int($0) }.first ?? 0) > 3 },
                            "\(mode): statx stopped after the NULL path's refusal: \(counts)")
                }
            }
        }
        let plain = outcomes[0]
        #expect(plain[0].hasPrefix("exited with status 0") && plain[1].hasPrefix("exited with status 0 | v |"), "\(plain)")
        #expect(plain[4].hasPrefix("exited with status 1") && plain[5].hasPrefix("exited with status 3") && plain[6].hasPrefix("exited with status 3"), "\(plain)")
        if otherUserCanRun {
            #expect(plain[12].hasPrefix("exited with status 3") && plain[12].contains("ermission"), "\(plain[12])")
        }
        #expect(plain[15].hasPrefix("exited with status 3") && plain[15].contains("process HOLDER holds"), "\(plain[15])")
        for (index, mode) in modes.enumerated().dropFirst() {
            for (step, (theirs, ours)) in zip(plain, outcomes[index]).enumerated() {
                #expect(ours == theirs, "\(mode), step \(step): \(ours)\n  plainly: \(theirs)")
            }
        }
    }

    /// Plainly, no status call of the library's reaches glibc's stat family for the
    /// suite's files (the data and lock files; the worker's own `URL(fileURLWithPath:)`
    /// lstats the directory), and none asks statx for a time: a commit leaves the data file's
    /// change time unreported (Linux 6.13's multigrain timestamps).
    @Test(.enabled(if: HostileRoundSevenTests.haveCLI, "needs the CLI"))
    func noStatusCallOfTheLibraryAsksForTheTimes() throws {
        guard let tools = try tools() else { return }
        let place = directory.file("watched").path
        #expect(mkdir(place, 0o700) == 0)
        let log = directory.file("counts.log").path
        for words in [["write", "S", "k", "v"], ["write", "S", "k", "w"], ["read", "S", "k"], ["write", "S", "j", "-int", "1"],
                      ["delete", "S", "j"], ["read", "S"]] {
            let result = try outcome(Self.cli, ["--dir", place] + words, mode: .plain, tools: tools, log: log, watch: place + "/S.suite")
            #expect(result.hasPrefix("exited with status 0"), "\(words): \(result)")
        }
        let worker = try outcome(Self.worker, ["hostile-check", "--dir", place, "--suite", "S", "--key", "k", "--key2", "k2", "--value", "x"],
                                 mode: .plain, tools: tools, log: log, watch: place + "/S.suite")
        #expect(worker.contains("read \"w\" wrote x"), "\(worker)")
        let counts = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
        #expect(counts.count == 7, "\(counts)")
        for line in counts {
            let numbers = line.split(separator: " ").compactMap { Int($0) }
            #expect(numbers.count == 4 && numbers[0] > 0 && numbers[1] == 0 && numbers[2] == 0 && numbers[3] == 0, "\(line)")
        }
    }

    /// A seccomp filter that answers statx with ENOSYS (as bubblewrap, flatpak and
    /// older container profiles do) or EPERM: the library asks statx once, then
    /// fstatat for good. (Found in this round: through glibc's statx, which a glibc
    /// built for kernels before statx answers with its own fstatat on ENOSYS, the
    /// library never saw the ENOSYS, and every status call was a refused statx plus
    /// an fstatat that reports the times. It now makes the system call itself.)
    @Test(.enabled(if: HostileRoundSevenTests.haveCLI, "needs the CLI"))
    func underASeccompFilterRefusingStatxItIsAskedOnceOnly() throws {
        guard let tools = try tools() else { return }
        let place = directory.file("sandboxed").path
        #expect(mkdir(place, 0o700) == 0)
        for (answer, log) in [(EPERM, "eperm.log"), (ENOSYS, "enosys.log")] {
            let logPath = directory.file(log).path
            let result = try outcome(Self.cli, ["--dir", place, "write", "S", "k", "v"], mode: .seccomp(answer), tools: tools, log: logPath)
            #expect(result.hasPrefix("exited with status 0"), "\(result)")
            let line = try String(contentsOfFile: logPath, encoding: .utf8)
            let statxCalls = try #require(line.split(separator: " ").compactMap { Int($0) }.first)
            #expect((1...2).contains(statxCalls), "errno \(answer): the statx system call was made \(statxCalls) times in one write: \(line)")
        }
    }

    // MARK: 1. The device number, as /proc/locks shows it

    /// A lock holder on tmpfs (/dev/shm, an anonymous device 0:N) is named by pid in
    /// `.lockTimeout`, plainly and with statx refused by seccomp (fstatat's st_dev).
    @Test(.enabled(if: HostileRoundSevenTests.haveCLI, "needs the CLI"))
    func aLockHolderOnTmpfsIsNamedWhateverStatxAnswers() throws {
        guard let tools = try tools() else { return }
        let place = "/dev/shm/hostile7-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        #expect(mkdir(place, 0o700) == 0)
        defer { try? FileManager.default.removeItem(atPath: place) }
        let holder = try holder(in: place, suite: "S", tools: tools)
        defer { _ = holder.kill() }
        for mode in [Mode.plain, .seccomp(EPERM), .seccomp(ENOSYS), .shim("enosys")] {
            let result = try outcome(Self.cli, ["--dir", place, "--timeout", "0.2", "write", "S", "k", "v"], mode: mode, tools: tools)
            #expect(result.hasPrefix("exited with status 3") && result.contains("process \(holder.pid) holds"), "\(mode): \(result)")
        }
        // And in process: the library's own error.
        #expect {
            let suite = try Suite(named: "S", directory: URL(fileURLWithPath: place), options: .init(lockTimeout: .milliseconds(200)))
            try suite.set("v", forKey: "k")
        } throws: { ($0 as? SuiteError).map { $0.code == .lockTimeout && $0.lockHolder == holder.pid } ?? false }
    }

    /// A device whose minor number is over 255 (glibc puts its high bits above the
    /// major's: 0:278 is 0x100016): in a mount namespace of its own, with tmpfs mounted
    /// until one gets such a number, the holder is named, plainly and under seccomp.
    @Test(.enabled(if: geteuid() == 0 && HostileRoundSevenTests.haveCLI && access("/usr/bin/unshare", X_OK) == 0,
                   "needs root, unshare and the CLI"))
    func aLockHolderOnADeviceWithAMinorOver255IsNamed() throws {
        guard let tools = try tools() else { return }
        let script = #"""
            set -u
            base="$1"; worker="$2"; cli="$3"; launch="$4"
            exec 3<&0
            i=0
            while :; do
              i=$((i + 1)); m="$base/m$i"; mkdir -p "$m"
              mount -t tmpfs -o size=1m,mode=0700 hostile7 "$m" || { echo "mount failed"; exit 2; }
              [ "$(stat -c %Ld "$m")" -gt 255 ] && break
              [ $i -ge 1200 ] && { echo "no minor over 255"; exit 2; }
            done
            echo "device $(stat -c '%Hd:%Ld' "$m") glibc $(stat -c %d "$m")"
            "$worker" hold-lock --dir "$m" --suite S > "$base/holder.out" 2>&1 <&3 &
            holder=$!
            n=0
            until grep -q holding "$base/holder.out" 2>/dev/null; do sleep 0.05; n=$((n + 1)); [ $n -ge 1200 ] && break; done
            echo "holder $holder"
            echo "plain $("$cli" --dir "$m" --timeout 0.2 write S k v 2>&1; echo " status $?")"
            echo "seccomp $("$launch" 1 -1 "$cli" --dir "$m" --timeout 0.2 write S k v 2>&1; echo " status $?")"
            echo "locks $(grep -c FLOCK /proc/locks)"
            kill $holder; wait $holder 2>/dev/null
            echo "end"
            """#
        let scriptPath = directory.file("minor.sh").path
        try script.write(toFile: scriptPath, atomically: false, encoding: .utf8)
        let shell = try ChildProcess(executable: "/usr/bin/unshare",
                                     arguments: ["-m", "--propagation", "private", "/bin/sh", scriptPath, directory.path, Self.worker, Self.cli, tools.launcher])
        defer {
            shell.closeInput()
            _ = shell.kill()
        }
        let ended = shell.waitForLine(timeout: .seconds(120)) { $0 == "end" || $0.hasPrefix("mount failed") || $0.hasPrefix("no minor") }
        let lines = shell.lines
        guard ended == "end" else {
            Issue.record("the namespace script did not finish: \(lines) \(shell.standardError)")
            return
        }
        let holder = try #require(lines.first { $0.hasPrefix("holder ") }.map { String($0.dropFirst(7)) })
        for prefix in ["plain ", "seccomp "] {
            let index = try #require(lines.firstIndex { $0.hasPrefix(prefix) })
            #expect(lines[index].contains("process \(holder) holds"), "\(prefix): \(lines)")
            #expect(lines.dropFirst(index + 1).first == " status 3", "\(prefix): \(lines)")
        }
    }

    // MARK: 1. The change time is left alone by a whole commit

    /// Through the whole library: 300 commits with nothing else looking at the data
    /// file leave its change time lagging the clock by a coarse tick, not by one
    /// commit, as a status call that reported the times between them would. (The
    /// control: the same commits with glibc's fstat of the file after each.)
    @Test func commitsLeaveTheDataFilesChangeTimeCoarse() throws {
        let suite = try Suite(named: "times", directory: directory.url)
        try suite.set(0, forKey: "k")
        let data = directory.file("times.suite").path
        func nanoseconds(_ time: timespec) -> Int64 { Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec) }
        func lag(after body: () throws -> Void) throws -> Int64 {
            var raw = stat()
            _ = stat(data, &raw)
            for _ in 0..<300 { try body() }
            _ = stat(data, &raw)
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            return nanoseconds(now) - nanoseconds(raw.st_ctim)
        }
        var counter = 0
        func commit() throws {
            counter += 1
            try suite.update { try $0.set(($0.integer(forKey: "k") ?? 0) + 1, forKey: "k") }
        }
        let controls = try (0..<7).map { _ in try lag { try commit(); var raw = stat(); _ = stat(data, &raw) } }
        let sorted = controls.sorted()
        let fine = sorted[sorted.count / 2]
        // Stamped at the clock's ticks whatever is asked, or too slow to tell apart.
        guard fine < 200_000 else { return }
        let ours = try (0..<7).map { _ in try lag { try commit() } }
        #expect(ours.filter { $0 > 2 * fine }.count >= 4, "ours \(ours) ns, with fstat after each commit \(controls) ns")
        #expect(suite.integer(forKey: "k") == counter)
    }

    // MARK: 2. The slot an update's read found

    /// Reads and writes of every shape, each transaction checked against a table
    /// kept here and against a suite opened afresh on the file.
    @Test func updatesOfEveryShapeCommitWhatAFreshLookupWould() throws {
        let name = "slots7"
        let suite = try Suite(named: name, directory: directory.url)
        var expected: [String: SuiteValue] = [:]
        func check(_ what: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            #expect(suite.storedValues() == expected, "\(what): in process", sourceLocation: sourceLocation)
            let fresh = try Suite(named: name, directory: directory.url)
            #expect(fresh.storedValues() == expected, "\(what): read afresh", sourceLocation: sourceLocation)
        }
        let nfc = "caf\u{E9}", nfd = "cafe\u{301}", angstrom = "\u{212B}", ringA = "A\u{30A}", hangul = "\u{D55C}", jamo = "\u{1112}\u{1161}\u{11AB}"
        try suite.set(1, forKey: nfc)
        expected[nfc] = 1
        // Read in one form, write in another: the one key.
        try suite.update { try $0.set(($0.integer(forKey: nfd) ?? 0) + 1, forKey: nfc) }
        expected[nfc] = 2
        try suite.update { try $0.set(($0.integer(forKey: nfc) ?? 0) + 1, forKey: nfd) }
        expected[nfc] = 3
        try check("NFC and NFD")
        // Singletons and Hangul: U+212B is Å, and jamo compose into one syllable.
        try suite.update { try $0.set(($0.integer(forKey: angstrom) ?? 10) + 1, forKey: ringA) }
        expected["\u{C5}"] = 11
        try suite.update { try $0.set(($0.integer(forKey: jamo) ?? 20) + 1, forKey: hangul) }
        expected[hangul] = 21
        try suite.update { try $0.set(($0.integer(forKey: hangul) ?? 0) + 1, forKey: jamo) }
        expected[hangul] = 22
        try check("singletons and Hangul")
        // Read absent, write: a new key; then read absent, write nothing.
        try suite.update { try $0.set(($0.integer(forKey: "fresh") ?? 100) + 1, forKey: "fresh") }
        expected["fresh"] = 101
        try suite.update { _ = $0.integer(forKey: "never") }
        try check("absent")
        // Read, remove all, write.
        try suite.update { transaction in
            let value = transaction.integer(forKey: "fresh") ?? 0
            try transaction.removeAll()
            try transaction.set(value + 1, forKey: "fresh")
        }
        expected = ["fresh": 102]
        try check("read, clear, write")
        for index in 0..<40 { try suite.set(index, forKey: "k\(index)") }
        for index in 0..<40 { expected["k\(index)"] = .integer(Int(index)) }
        // Read one key, write another; read several, write the first; read, write, read another.
        try suite.update { try $0.set(($0.integer(forKey: "k1") ?? 0) + 1000, forKey: "k2") }
        expected["k2"] = 1001
        try suite.update { transaction in
            let first = transaction.integer(forKey: "k3") ?? 0
            let sum = (4..<30).reduce(0) { $0 + (transaction.integer(forKey: "k\($1)") ?? 0) }
            try transaction.set(first + sum, forKey: "k3")
        }
        expected["k3"] = .integer(Int(3 + (4..<30).reduce(0, +)))
        try suite.update { transaction in
            let value = transaction.integer(forKey: "k5") ?? 0
            try transaction.set(value * 2, forKey: "k5")
            _ = transaction.integer(forKey: "k6")
            _ = transaction.integer(forKey: "k5")
        }
        expected["k5"] = 10
        // Read, then read the same key through the write: the write's value.
        try suite.update { transaction in
            _ = transaction.integer(forKey: "k7")
            try transaction.set(70, forKey: "k7")
            #expect(transaction.integer(forKey: "k7") == 70)
            try transaction.set(71, forKey: "k7")
        }
        expected["k7"] = 71
        // Read, remove the key, read again (absent), write it back.
        try suite.update { transaction in
            let value = transaction.integer(forKey: "k8") ?? 0
            try transaction.removeValue(forKey: "k8")
            #expect(transaction.integer(forKey: "k8") == nil)
            try transaction.set(value + 800, forKey: "k8")
        }
        expected["k8"] = 808
        // Read, remove: a removal, no slot.
        try suite.update { transaction in
            _ = transaction.integer(forKey: "k9")
            try transaction.removeValue(forKey: "k9")
        }
        expected["k9"] = nil
        try check("several keys")
        // Values that compare equal but are stored differently: each a change.
        try suite.set(0.0, forKey: "zero")
        try suite.update { transaction in
            #expect(transaction.double(forKey: "zero") == 0)
            try transaction.set(-0.0, forKey: "zero")
        }
        expected["zero"] = .double(-0.0)
        try suite.set(1, forKey: "one")
        try suite.update { transaction in
            #expect(transaction.integer(forKey: "one") == 1)
            try transaction.set(1.0, forKey: "one")
        }
        expected["one"] = .double(1.0)
        #expect(suite.storedValue(forKey: "zero").map { $0.isStored(identicallyTo: .double(-0.0)) } == true)
        #expect(suite.storedValue(forKey: "one").map { $0.isStored(identicallyTo: .double(1.0)) } == true)
        try check("equal but stored differently")
        let fresh = try Suite(named: name, directory: directory.url)
        #expect(fresh.storedValue(forKey: "zero").map { $0.isStored(identicallyTo: .double(-0.0)) } == true)
    }

    /// A block that throws after reading commits nothing, and the next update (with
    /// the recycled list of writes) writes the key it reads, not the abandoned one's.
    @Test func aThrowingBlockLeavesNoSlotForTheNext() throws {
        struct Stop: Error {}
        let suite = try Suite(named: "thrown", directory: directory.url)
        try suite.set(1, forKey: "a")
        try suite.set(2, forKey: "b")
        #expect(throws: Stop.self) {
            try suite.update { transaction in
                _ = transaction.integer(forKey: "a")
                try transaction.set(99, forKey: "a")
                throw Stop()
            }
        }
        try suite.update { try $0.set(($0.integer(forKey: "b") ?? 0) + 1, forKey: "b") }
        #expect(suite.storedValues() == ["a": 1, "b": 3])
        #expect(try Suite(named: "thrown", directory: directory.url).storedValues() == ["a": 1, "b": 3])
    }

    /// Registered defaults are read, never stored at the key's slot: the write adds the key.
    @Test func aReadThroughARegisteredDefaultWritesANewKey() throws {
        let suite = try Suite(named: "registered", directory: directory.url)
        suite.register(defaults: ["d": 5, "e": 6])
        try suite.set(1, forKey: "a")
        try suite.update { try $0.set(($0.integer(forKey: "d") ?? 0) + 1, forKey: "d") }
        try suite.update { try $0.set(($0.integer(forKey: "d") ?? 0) + 1, forKey: "d") }
        try suite.update { try $0.set($0.registeredDefault(forKey: "e") ?? 0, forKey: "e") }
        #expect(suite.storedValues() == ["a": 1, "d": 7, "e": 6])
        #expect(try Suite(named: "registered", directory: directory.url).storedValues() == ["a": 1, "d": 7, "e": 6])
    }

    /// Two suites, one update inside the other's: each writes at its own slot. The
    /// inner suite has more keys, so that a slot taken for the other table would
    /// point at another key.
    @Test func updatesNestedAcrossTwoSuitesKeepTheirSlots() throws {
        let outer = try Suite(named: "outer", directory: directory.url)
        let inner = try Suite(named: "inner", directory: directory.url)
        try outer.set(1, forKey: "k")
        for index in 0..<50 { try inner.set(index * 10, forKey: "x\(index)") }
        try inner.set(500, forKey: "k")
        for _ in 0..<5 {
            try outer.update { transaction in
                let value = transaction.integer(forKey: "k") ?? 0
                try inner.update { try $0.set(($0.integer(forKey: "k") ?? 0) + 1, forKey: "k") }
                try transaction.set(value + 1, forKey: "k")
            }
            try inner.update { innerTransaction in
                let value = innerTransaction.integer(forKey: "x7") ?? 0
                try outer.update { try $0.set(($0.integer(forKey: "k") ?? 0) * 1, forKey: "k") }
                try innerTransaction.set(value + 1, forKey: "x7")
            }
        }
        #expect(outer.storedValues() == ["k": 6])
        var expectedInner: [String: SuiteValue] = ["k": 505]
        for index in 0..<50 { expectedInner["x\(index)"] = .integer(Int(index * 10)) }
        expectedInner["x7"] = 75
        #expect(inner.storedValues() == expectedInner)
        #expect(try Suite(named: "outer", directory: directory.url).storedValues() == ["k": 6])
        #expect(try Suite(named: "inner", directory: directory.url).storedValues() == expectedInner)
    }

    /// A version 1 file, read and then written as a first-access default: the commit
    /// rewrites the file as version 2 (a compaction) between the read and the store
    /// at the read's slot.
    @Test func aDefaultStoredAtTheReadsSlotAfterTheVersionUpgrade() throws {
        let suite = try Suite(named: "upgrade", directory: directory.url)
        for index in 0..<20 { try suite.set(index, forKey: "k\(index)") }
        try suite.set("not a number", forKey: "n")
        let key = SuiteKey<Int>("n", default: 42)
        #expect(try suite.valueStoringDefault(for: key) == 42)
        try suite.update { transaction in
            let value = transaction.integer(forKey: "k3") ?? 0
            try transaction.setValue(.integer(Int(value + 300)), forKey: "k3", asDefault: true)
        }
        var expected: [String: SuiteValue] = ["n": 42]
        for index in 0..<20 { expected["k\(index)"] = .integer(Int(index)) }
        expected["k3"] = 303
        #expect(suite.storedValues() == expected)
        #expect(try Suite(named: "upgrade", directory: directory.url).storedValues() == expected)
    }

    /// Another process compacts (a new data file, read whole: a new table) and writes
    /// between this process's updates, which read a key and write it: nothing lost.
    @Test func updatesBetweenAnotherProcesssCompactionsAndWrites() throws {
        let name = "between"
        let suite = try Suite(named: name, directory: directory.url, options: .init(compactionSlack: 256))
        for index in 0..<30 { try suite.set(index, forKey: "k\(index)") }
        for round in 0..<4 {
            try suite.update { try $0.set(($0.integer(forKey: "k0") ?? 0) + 1, forKey: "k0") }
            try startWorker("compact", in: directory, suite: name).expectSuccess()
            try suite.update { try $0.set(($0.integer(forKey: "k0") ?? 0) + 1, forKey: "k0") }
            let writer = try startWorker("try-set", in: directory, suite: name, ["key": "w\(round)", "value": "v"])
            writer.expectLine(startingWith: "ok")
            writer.expectSuccess()
            try suite.update { try $0.set(($0.integer(forKey: "k0") ?? 0) + 1, forKey: "k0") }
        }
        #expect(suite.integer(forKey: "k0") == 12)
        let fresh = try Suite(named: name, directory: directory.url)
        #expect(fresh.storedValues() == suite.storedValues())
        #expect(fresh.storedValues().count == 34)
    }

    /// Read-increment-write updates from two processes of four threads each and from
    /// this one, compacting often (a small slack): every increment counts.
    @Test func incrementsFromThreeProcessesCompactingOftenAllCount() throws {
        let name = "counted"
        let suite = try Suite(named: name, directory: directory.url, options: .init(compactionSlack: 64))
        try suite.set(String(repeating: "p", count: 2000), forKey: "padding")
        let workers = try (0..<2).map { _ in
            try startWorker("increment", in: directory, suite: name, ["threads": "4", "count": "150", "compaction-slack": "64"])
        }
        for _ in 0..<300 {
            try suite.update { try $0.set(($0.integer(forKey: "counter") ?? 0) + 1, forKey: "counter") }
        }
        for worker in workers { worker.expectSuccess(within: .seconds(180)) }
        #expect(suite.integer(forKey: "counter") == 1500)
        #expect(try Suite(named: name, directory: directory.url).integer(forKey: "counter") == 1500)
    }

    /// The lock file deleted while an update that read a key is running, and another
    /// process writing through the new one: the update, which ran long, writes
    /// nothing; the other process's value stands, and the next update reads it.
    @Test func anUpdateWhoseLockFileWasReplacedWritesNothing() throws {
        let name = "replaced"
        let suite = try Suite(named: name, directory: directory.url)
        try suite.set(1, forKey: "k")
        let lockPath = directory.file(name + ".suite.lock").path
        #expect(throws: SuiteError.self) {
            try suite.update { transaction in
                let value = transaction.integer(forKey: "k") ?? 0
                #expect(unlink(lockPath) == 0)
                let other = try startWorker("try-set", in: directory, suite: name, ["key": "k", "value": "other"])
                other.expectLine(startingWith: "ok")
                other.expectSuccess()
                try transaction.set(value + 1, forKey: "k")
            }
        }
        let reader = try startWorker("get", in: directory, suite: name, ["key": "k"])
        reader.expectLine(startingWith: "value \"other\"")
        reader.expectSuccess()
        // (A plain read here still answers 1: the old lock file's header, which no
        // process writes any more, stays fresh; `reload()` follows the new one.)
        try suite.reload()
        #expect(suite.string(forKey: "k") == "other")
        try suite.update { transaction in
            #expect(transaction.string(forKey: "k") == "other")
            try transaction.set("mine", forKey: "k")
        }
        #expect(try Suite(named: name, directory: directory.url).string(forKey: "k") == "mine")
    }
}
