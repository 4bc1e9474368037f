import Foundation
import Glibc

extension Suite {
    /// Where suites live when no directory is given: `$SUITE_DEFAULTS_DIR`, else
    /// `$XDG_CONFIG_HOME/suite-defaults`, else `~/.config/suite-defaults`. It is
    /// created, mode `0700`, on first use.
    public static func defaultDirectory(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> URL {
        if let explicit = environment["SUITE_DEFAULTS_DIR"], !explicit.isEmpty {
            return URL(fileURLWithPath: explicit, isDirectory: true)
        }
        // The XDG specification says to ignore a relative XDG_CONFIG_HOME.
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") {
            return URL(fileURLWithPath: config, isDirectory: true).appendingPathComponent("suite-defaults", isDirectory: true)
        }
        return URL(fileURLWithPath: homeDirectory(environment: environment), isDirectory: true)
            .appendingPathComponent(".config", isDirectory: true)
            .appendingPathComponent("suite-defaults", isDirectory: true)
    }

    private static func homeDirectory(environment: [String: String]) -> String {
        if let home = environment["HOME"], !home.isEmpty { return home }
        if let entry = getpwuid(geteuid()), let directory = entry.pointee.pw_dir {
            return String(cString: directory)
        }
        return "/"
    }

    /// Whether a suite file exists, without opening or creating anything.
    public static func exists(named name: String, directory: URL? = nil) -> Bool {
        let name = Validation.normalized(name)
        guard (try? Validation.checkSuiteName(name)) != nil else { return false }
        let path = (directory ?? defaultDirectory()).appendingPathComponent(name + SuiteFiles.dataSuffix).filePath
        var status = stat()
        return lstat(path, &status) == 0 && FileStatus(status).isRegularFile
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
        defer { handle.close() }
        let entries: [String]
        do {
            entries = try handle.names()
        } catch {
            throw SuiteError(error, suite: nil, doing: "list the suite directory")
        }
        return entries.compactMap { entry -> String? in
            guard entry.hasSuffix(SuiteFiles.dataSuffix) else { return nil }
            let name = String(entry.dropLast(SuiteFiles.dataSuffix.count))
            guard (try? Validation.checkSuiteName(name)) != nil,
                  (try? handle.status(of: entry))??.isRegularFile == true
            else { return nil }
            return name
        }.sorted()
    }
}
