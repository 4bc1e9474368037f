import Foundation
import Glibc
import Testing
@testable import SuiteDefaults

/// The System layer's wrappers, and the one owner of suite file names.
@Suite("The system layer")
struct SystemLayerTests {
    @Test func suiteFileNamesGoBothWays() {
        #expect(SuiteFiles.dataFileName(of: "prefs") == "prefs.suite")
        #expect(SuiteFiles.lockFileName(of: "prefs") == "prefs.suite.lock")
        for name in ["prefs", "group.com.example.fitness", "x.suite", "é", "a b"] {
            #expect(SuiteFiles.suiteName(ofDataFile: SuiteFiles.dataFileName(of: name)) == name)
        }
        for other in ["prefs.suite.lock", "prefs.suite.tmp.12.ab", "prefs.suite.h.0000000000000001",
                      "prefs.suite.damaged-20261122T101500Z-12-1", "prefs", "prefs.suit"] {
            #expect(SuiteFiles.suiteName(ofDataFile: other) == nil, "\(other)")
        }
    }

    @Test func fileURLsUseTheSuiteFileNames() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("system-layer-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let suite = try Suite(named: "prefs", directory: directory)
        #expect(suite.fileURL.lastPathComponent == SuiteFiles.dataFileName(of: "prefs"))
        #expect(suite.lockFileURL.lastPathComponent == SuiteFiles.lockFileName(of: "prefs"))
        try suite.set(1, forKey: "k")
        #expect(try Suite.names(in: directory) == ["prefs"])
        #expect(Suite.exists(named: "prefs", directory: directory))
        #expect(!Suite.exists(named: "other", directory: directory))
    }

    @Test func utcCalendarAgreesWithGmtimeAndTimegm() {
        var generator = SystemRandomNumberGenerator()
        var samples: [Int64] = [0, -1, 1, 86_399, 86_400, -86_400, -86_401, 951_782_400, 951_868_800,
                                -62_135_596_800, -62_167_219_200, -62_167_219_201, 99_999_999_999_999_999]
        for _ in 0..<50_000 {
            let magnitude = Int64.random(in: 0...17, using: &generator)
            var bound: Int64 = 1
            for _ in 0..<magnitude { bound *= 10 }
            samples.append(Int64.random(in: -bound...bound, using: &generator))
        }
        for seconds in samples {
            var time = time_t(seconds)
            var parts = tm()
            let fields = UTCCalendar.fields(ofUnixSeconds: seconds)
            guard gmtime_r(&time, &parts) != nil else {
                #expect(Int32(exactly: fields.year - 1900) == nil, "\(seconds)")
                continue
            }
            let expected = UTCCalendar.Fields(
                year: Int64(parts.tm_year) + 1900, month: Int(parts.tm_mon) + 1, day: Int(parts.tm_mday),
                hour: Int(parts.tm_hour), minute: Int(parts.tm_min), second: Int(parts.tm_sec))
            #expect(fields == expected, "\(seconds)")
            #expect(UTCCalendar.unixSeconds(of: expected) == Int64(timegm(&parts)), "\(seconds)")
            var leap = expected
            leap.second = 60
            #expect(UTCCalendar.unixSeconds(of: leap) == UTCCalendar.unixSeconds(of: expected) + 60 - Int64(expected.second))
        }
    }

    @Test func iso8601KeepsItsTexts() {
        #expect(ISO8601.text(forInterval: 0) == "2001-01-01T00:00:00Z")
        #expect(ISO8601.text(forInterval: -0.5) == "2000-12-31T23:59:59.5Z")
        #expect(ISO8601.text(forInterval: -978_307_201) == "1969-12-31T23:59:59Z")
        #expect(ISO8601.text(forInterval: -63_113_904_000) == "0001-01-01T00:00:00Z")
        #expect(ISO8601.text(forInterval: -63_145_526_400) == "0000-01-01T00:00:00Z")
        #expect(ISO8601.text(forInterval: -63_177_062_400) == "-0001-01-01T00:00:00Z")
        #expect(ISO8601.interval(parsing: "1969-12-31T23:59:59Z") == -978_307_201)
        #expect(ISO8601.interval(parsing: "2016-12-31T23:59:60Z") == ISO8601.interval(parsing: "2017-01-01T00:00:00Z"))
        #expect(ISO8601.interval(parsing: "2001-01-01T02:00:00+02:00") == 0)
        // The years struct tm holds, and no more.
        #expect(ISO8601.interval(parsing: "+2147485546-12-31T23:59:60Z") != nil)
        #expect(ISO8601.interval(parsing: "+2147485547-01-01T00:00:00Z") == nil)
        #expect(ISO8601.text(forInterval: 9e16) == nil)
        #expect(ISO8601.text(forInterval: 6e16)?.hasPrefix("+1901") == true)
        #expect(ISO8601.interval(parsing: "2001-02-29T00:00:00Z") == nil)
    }

    @Test func errnoNamesAndReasons() throws {
        #expect(Errno.noSuchFileOrDirectory.rawValue == ENOENT)
        #expect(SystemCallError(call: "link", path: "x", code: .fileExists).errno == EEXIST)
        #expect(Errno.permissionDenied.systemReason == String(cString: strerror(EACCES)))
        let missing = "/nonexistent-\(UUID())/file"
        do {
            _ = try FileStatus.of(path: missing, followingLinks: false)
            Issue.record("lstat of a missing path succeeded")
        } catch let failure as SystemCallError {
            #expect(failure.code == .noSuchFileOrDirectory)
            #expect(failure.failed(with: .notDirectory, .noSuchFileOrDirectory))
            #expect(failure.call == "lstat" && failure.path == missing)
            let error = SuiteError(failure, suite: nil, doing: "look")
            #expect(error.code == .notFound && error.systemReason == Errno.noSuchFileOrDirectory.systemReason)
        }
    }

    @Test func statusOfAPathFollowsLinksOnlyWhenAsked() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("system-layer-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("file").path, link = directory.appendingPathComponent("link").path
        #expect(FileManager.default.createFile(atPath: file, contents: Data([1, 2, 3])))
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: file)
        #expect(try FileStatus.of(path: link, followingLinks: false).isSymbolicLink)
        let followed = try FileStatus.of(path: link, followingLinks: true)
        #expect(followed.isRegularFile && followed.size == 3)
        #expect(try FileDescriptor.readContents(ofPath: file, limit: 2) == [1, 2])
    }

    /// A commit checks its data file just before appending to it. On Linux 6.13 and
    /// later (multigrain timestamps: ext4, xfs, btrfs, tmpfs), a status call that reports
    /// a file's change time makes the next write stamp the file with a fine-grained time
    /// and dirty its inode; the library's status calls must not ask for the times. A
    /// write then leaves the times alone until the coarse clock passes them, so after a
    /// run of writes with a status check between each, the change time lags the clock by
    /// up to a tick, not by the one write since it was stamped.
    @Test func aStatusCheckBetweenWritesLeavesTheFileTimesAlone() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("system-layer-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let descriptor = try FileDescriptor.open(directory.appendingPathComponent("file").path, in: nil,
                                                 flags: O_RDWR | O_CREAT, mode: 0o600, pathForErrors: "file")
        defer { descriptor.close() }
        func nanoseconds(_ time: timespec) -> Int64 { Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec) }
        /// How far the file's change time lags the clock after 500 one-byte writes with
        /// `check` between each, the first stamped finely (its time was just read).
        func lagAfterWrites(checking check: () throws -> Void) throws -> Int64 {
            var raw = stat()
            _ = fstat(descriptor.rawValue, &raw)
            for _ in 0..<500 {
                #expect(pwrite(descriptor.rawValue, "x", 1, 0) == 1)
                try check()
            }
            _ = fstat(descriptor.rawValue, &raw)
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            return nanoseconds(now) - nanoseconds(raw.st_ctim)
        }
        let fineLag: Int64 = 50_000
        // With glibc's fstat between the writes, a kernel with multigrain timestamps
        // stamps every write: the time lags by one write (unless this thread was held up).
        let reportedTimesLags = try (0..<9).map { _ in try lagAfterWrites { var raw = stat(); _ = fstat(descriptor.rawValue, &raw) } }
        guard reportedTimesLags.filter({ $0 < fineLag }).count >= 5 else {
            // Times stamped at the clock's ticks whatever is asked: nothing to tell apart.
            return
        }
        // With ours, only a write after the coarse clock passed the stamp stamps again:
        // the time lags by less than `fineLag` only when a tick fell that close to the end.
        let ourLags = try (0..<9).map { _ in try lagAfterWrites { _ = try descriptor.status() } }
        #expect(ourLags.filter { $0 >= fineLag }.count >= 5,
                "lags \(ourLags) ns with our status checks, \(reportedTimesLags) ns with fstat's")
    }

    @Test func sharedWordsLoadStoreAndAdd() {
        let page = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 8)
        defer { page.deallocate() }
        page.initializeMemory(as: UInt8.self, repeating: 0, count: 64)
        let wide = SharedWord64(page + 16)
        wide.storeReleasing(0x0102_0304_0506_0708)
        #expect(wide.loadAcquiring() == 0x0102_0304_0506_0708 && wide.loadRelaxed() == 0x0102_0304_0506_0708)
        wide.storeRelaxed(7)
        #expect(page.load(fromByteOffset: 16, as: UInt64.self) == 7)
        let narrow = SharedWord32(page + 32)
        narrow.add(2)
        narrow.add(UInt32.max)
        #expect(narrow.load() == 1)
        #expect(narrow.wait(whileEqualTo: 0, timeout: .milliseconds(1)) == .changed)
        #expect(narrow.wait(whileEqualTo: 1, timeout: .milliseconds(1)) == .timedOut)
    }
}
