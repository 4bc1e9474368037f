import Glibc
import Testing
import TestSupport
@_spi(Tools) @_spi(Testing) @testable import SuiteDefaults

/// A suite whose shared header is not trusted while its data file is gone starts
/// over empty; its commits are still numbered after every number an observer saw, so
/// that the numbers observers receive never go back.
@Suite("A suite that starts over numbers on")
struct StartOverNumberingTests: EngineStateTesting {
    let directory = TemporaryDirectory()
    let name = "again"

    var dataPath: String { directory.file(name + ".suite").path }

    /// Commits in `writer`, then returns the sequence numbers of what `observer` heard.
    func commitAndHear(_ writer: StoreState, _ observer: StoreState) throws -> [UInt64] {
        try commit("after", "1", in: writer)
        try catchUpReadOnly(observer)
        let applied = observer.appliedCommits
        observer.appliedCommitsHandedOver()
        return applied.commits.map(\.sequence)
    }

    /// Twelve commits, read by an observer, then the attack: the header's boot ID
    /// (or `more`) overwritten, the data file removed. Returns the writer and observer.
    func attacked(headerWords offset: Int, _ words: [UInt64]) throws -> (writer: StoreState, observer: StoreState) {
        let writer = try openState(name)
        for index in 0..<12 { try commit("k\(index % 3)", "v\(index)", in: writer) }
        let observer = try openState(name)
        try catchUpReadOnly(observer)
        observer.collectsChanges = true
        for (index, word) in words.enumerated() { try writeHeaderWord(name, at: off_t(offset + 8 * index), word) }
        #expect(unlink(dataPath) == 0)
        return (writer, observer)
    }

    @Test func theWriterNumbersOnFromWhatItSaw() throws {
        // Another boot's ID, and a last sequence number of 0: nothing in the header helps.
        let (writer, observer) = try attacked(headerWords: 40, [0, 0, 0])
        let heard = try commitAndHear(writer, observer)
        #expect(!heard.isEmpty, "the observer heard nothing")
        #expect(heard.allSatisfy { $0 >= 12 }, "numbers went back: \(heard)")
        #expect(heard.last == 13, "the commit after the start-over: \(heard)")
    }

    @Test func aWriterBehindNumbersOnFromTheHeadersNumberEvenWhenTheHeaderIsNotTrusted() throws {
        let behind = try openState(name)
        try commit("early", "0", in: behind)
        let (_, observer) = try attacked(headerWords: 48, [0, 0])
        // `behind` saw only the first commit; the header's number (13, its boot ID gone) says more.
        let heard = try commitAndHear(behind, observer)
        #expect(!heard.isEmpty, "the observer heard nothing")
        #expect(heard.allSatisfy { $0 >= 13 }, "numbers went back: \(heard)")
        #expect(heard.last == 14, "the commit after the start-over: \(heard)")
    }

    @Test(arguments: [FormatLimits.maximumSequence / 2 + 1, FormatLimits.maximumSequence, UInt64.max])
    func aForgedHugeNumberInAnUntrustedHeaderIsIgnored(forged: UInt64) throws {
        // The boot ID gone and the number forged: the writer's own knowledge decides.
        let (writer, observer) = try attacked(headerWords: 40, [forged, 0, 0])
        let heard = try commitAndHear(writer, observer)
        #expect(heard.last == 13, "\(heard)")
    }
}
