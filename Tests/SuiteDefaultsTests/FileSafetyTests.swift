import Foundation
import Glibc
import Testing
import TestSupport
@testable import SuiteDefaults

@Suite("Files are created privately and foreign files are refused")
struct FileSafetyTests {
    let directory = TemporaryDirectory()

    func mode(of path: String) -> UInt32 {
        var status = stat()
        _ = lstat(path, &status)
        return UInt32(status.st_mode) & 0o7777
    }

    @Test func privateSuitesUseOwnerOnlyModes() throws {
        let nested = directory.file("config/suite-defaults")
        let suite = try Suite(named: "prefs", directory: nested)
        try suite.set(1, forKey: "k")
        #expect(mode(of: nested.path) == 0o700)
        #expect(mode(of: nested.appendingPathComponent("prefs.suite").path) == 0o600)
        #expect(mode(of: nested.appendingPathComponent("prefs.suite.lock").path) == 0o600)
    }

    @Test func groupSuitesUseGroupModes() throws {
        let shared = directory.file("shared")
        let suite = try Suite(named: "prefs", directory: shared, options: .init(sharing: .group))
        try suite.set(1, forKey: "k")
        #expect(mode(of: shared.path) == 0o2770)
        #expect(mode(of: shared.appendingPathComponent("prefs.suite").path) == 0o660)
        #expect(mode(of: shared.appendingPathComponent("prefs.suite.lock").path) == 0o660)
    }

    @Test func aFileOfAnotherFormatIsRefusedAndLeftAlone() throws {
        let plist = Array("<?xml version=\"1.0\"?><plist><dict/></plist>\n".utf8)
        try directory.write(plist, to: "prefs.suite")
        let error = #expect(throws: SuiteError.self) { try Suite(named: "prefs", directory: directory.url) }
        #expect(error?.code == .foreignFile)
        #expect(error?.path?.hasSuffix("prefs.suite") == true)
        #expect(directory.bytes(of: "prefs.suite") == plist)
    }

    @Test func aNewerFormatVersionIsRefused() throws {
        var header = DataFileHeader.encode(fileID: 7)
        header[8] = 3  // version 3, newer than this library reads
        let checksum = header.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[..<28])) }
        withUnsafeBytes(of: checksum.littleEndian) { for index in 0..<4 { header[28 + index] = $0[index] } }
        try directory.write(header, to: "prefs.suite")
        let error = #expect(throws: SuiteError.self) { try Suite(named: "prefs", directory: directory.url) }
        #expect(error?.code == .unsupportedVersion)
        #expect(directory.bytes(of: "prefs.suite") == header)
    }

    @Test func symbolicLinksAreNeverFollowed() throws {
        let target = directory.file("elsewhere")
        try directory.write(Array("secret".utf8), to: "elsewhere")
        #expect(symlink(target.path, directory.file("data.suite").path) == 0)
        let dataError = #expect(throws: SuiteError.self) { try Suite(named: "data", directory: directory.url) }
        #expect(dataError?.code == .symbolicLink)

        #expect(symlink(target.path, directory.file("lock.suite.lock").path) == 0)
        let lockError = #expect(throws: SuiteError.self) { try Suite(named: "lock", directory: directory.url) }
        #expect(lockError?.code == .symbolicLink)
        #expect(directory.bytes(of: "elsewhere") == Array("secret".utf8))
    }

    @Test func aWorldWritableDirectoryIsRefusedUnlessSticky() throws {
        let open = directory.file("open")
        #expect(mkdir(open.path, 0o700) == 0 && chmod(open.path, 0o777) == 0)
        let error = #expect(throws: SuiteError.self) { try Suite(named: "prefs", directory: open) }
        #expect(error?.code == .foreignOwner)
        #expect(chmod(open.path, 0o1777) == 0)
        _ = try Suite(named: "prefs", directory: open)
    }

    @Test(.enabled(if: geteuid() == 0, "giving files to another user needs root"))
    func filesAndDirectoriesOfAnotherUserAreRefused() throws {
        do {
            let suite = try Suite(named: "prefs", directory: directory.url)
            try suite.set("mine", forKey: "k")
        }
        let before = directory.bytes(of: "prefs.suite")
        #expect(chown(directory.file("prefs.suite").path, 65534, 65534) == 0)
        let fileError = #expect(throws: SuiteError.self) { try Suite(named: "prefs", directory: directory.url) }
        #expect(fileError?.code == .foreignOwner)
        #expect(directory.bytes(of: "prefs.suite") == before)

        let foreign = directory.file("foreign")
        #expect(mkdir(foreign.path, 0o700) == 0 && chown(foreign.path, 65534, 65534) == 0)
        let directoryError = #expect(throws: SuiteError.self) { try Suite(named: "prefs", directory: foreign) }
        #expect(directoryError?.code == .foreignOwner)
    }
}

