#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Suite {
    /// Where suites live when no directory is given: `$SUITE_DEFAULTS_DIR`, else
    /// `$XDG_CONFIG_HOME/suite-defaults`, else `~/.config/suite-defaults`. It is
    /// created, mode `0700`, on first use.
    public static func defaultDirectory(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> URL {
        URL(fileURLWithPath: defaultDirectoryPath { environment[$0] }, isDirectory: true)
    }

    /// The path of `defaultDirectory(environment:)`, with `variable` giving the
    /// environment's values (the process's own when not given). Made of strings
    /// alone: a widget opening its suite in the default place then runs none of
    /// `URL`'s parsing, whose code is pages of memory it would touch for this only.
    static func defaultDirectoryPath(_ variable: (String) -> String? = Environment.value) -> String {
        if let explicit = variable("SUITE_DEFAULTS_DIR"), !explicit.isEmpty { return expandingTilde(explicit) }
        // The XDG specification says to ignore a relative XDG_CONFIG_HOME.
        if let config = variable("XDG_CONFIG_HOME"), config.utf8.first == UInt8(ascii: "/") {
            return joined(config, "suite-defaults")
        }
        let home: String
        if let value = variable("HOME"), !value.isEmpty {
            home = expandingTilde(value)
        } else {
            home = ProcessIdentity.homeDirectoryFromUserDatabase() ?? "/"
        }
        return joined(joined(home, ".config"), "suite-defaults")
    }

    /// `path` as `URL(fileURLWithPath:)` takes it, which the default directory was
    /// made with before it was built from strings: a leading "~" (or "~user") is a
    /// home directory, as a shell would expand it. Without one, `path` itself, and
    /// none of `URL`'s parsing runs.
    private static func expandingTilde(_ path: String) -> String {
        guard path.utf8.first == UInt8(ascii: "~") else { return path }
        return URL(fileURLWithPath: path, isDirectory: true).filePath
    }

    /// `directory/name`, with one slash between them.
    private static func joined(_ directory: String, _ name: String) -> String {
        directory.utf8.last == UInt8(ascii: "/") ? directory + name : directory + "/" + name
    }

    /// Whether a suite file exists, without opening or creating anything: false also
    /// for an invalid name and for anything `checkExists(named:directory:)` refuses.
    public static func exists(named name: String, directory: URL? = nil) -> Bool {
        (try? checkExists(named: name, directory: directory)) ?? false
    }

    /// Whether a suite's data file, `NAME.suite`, is in the directory, saying why when
    /// something else stands there. It only looks (`lstat`): nothing is opened or
    /// created, so a FIFO cannot block it and no lock file appears.
    ///
    /// - Returns: true for a regular file (opening it may still find it is not a suite
    ///   file); false when there is no such name, or no such directory.
    /// - Throws: `SuiteError` with code `.invalidSuiteName` for a name no suite can
    ///   have; `.symbolicLink` when `NAME.suite` is a symbolic link, `.foreignFile` when
    ///   it is a directory, FIFO, socket or device (what opening the suite would refuse
    ///   too); for a failed `lstat`, the code its `errno` calls for (for instance
    ///   `.permissionDenied`).
    public static func checkExists(named name: String, directory: URL? = nil) throws -> Bool {
        let name = Validation.normalized(name)
        try Validation.checkSuiteName(name)
        // isDirectory: false, else URL stats the file itself and gives a directory's
        // path a trailing "/" (which would then show in the error).
        let path = (directory ?? defaultDirectory())
            .appendingPathComponent(SuiteFiles.dataFileName(of: name), isDirectory: false).filePath
        let status: FileStatus
        do {
            status = try FileStatus.of(path: path, followingLinks: false)
        } catch let failure as SystemCallError where failure.failed(with: .noSuchFileOrDirectory, .notDirectory) {
            // ENOTDIR: a part of the directory's path is a file, so no suite is there either.
            return false
        } catch {
            throw SuiteError(error, suite: name, doing: "look for the suite file")
        }
        guard status.isRegularFile else { throw SuiteFiles.refusal(of: status, suite: name, path: path) }
        return true
    }

    /// The names of the suites in a directory, sorted.
    ///
    /// - Throws: `SuiteError` with code `.notFound` when the directory does not exist.
    public static func names(in directory: URL? = nil) throws -> [String] {
        let path = (directory ?? defaultDirectory()).filePath
        let handle: DirectoryHandle
        do {
            handle = try DirectoryHandle.open(path: path)
        } catch {
            throw SuiteError(error, suite: nil, doing: "list the suite directory")
        }
        let entries: [String]
        do {
            entries = try handle.names()
        } catch {
            throw SuiteError(error, suite: nil, doing: "list the suite directory")
        }
        return entries.compactMap { entry -> String? in
            guard let name = SuiteFiles.suiteName(ofDataFile: entry),
                  (try? Validation.checkSuiteName(name)) != nil,
                  (try? handle.status(of: entry))??.isRegularFile == true
            else { return nil }
            return name
        }.sorted()
    }
}
