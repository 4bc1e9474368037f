import Foundation

/// Cuts a byte stream into lines at "\n", however the stream's pieces fall: a line split
/// across pieces is joined, several lines in one piece are separated. A line longer than
/// `maximumLineBytes` is refused rather than buffered without end.
struct LineSplitter {
    let maximumLineBytes: Int
    private var pending = Data()

    init(maximumLineBytes: Int) {
        self.maximumLineBytes = maximumLineBytes
    }

    enum Failure: Error, Equatable {
        case lineTooLong
    }

    /// Adds `piece` and returns the lines it completed, without their "\n" (and without a
    /// "\r" before it). Empty lines are left out.
    mutating func append(_ piece: Data) throws(Failure) -> [Data] {
        var lines: [Data] = []
        var start = piece.startIndex
        while let newline = piece[start...].firstIndex(of: 10) {
            let part = piece[start..<newline]
            guard pending.count + part.count <= maximumLineBytes else { throw .lineTooLong }
            var line = pending
            line.append(part)
            pending = Data()
            if line.last == 13 { line.removeLast() }
            if !line.isEmpty { lines.append(line) }
            start = piece.index(after: newline)
        }
        let rest = piece[start...]
        guard pending.count + rest.count <= maximumLineBytes else { throw .lineTooLong }
        pending.append(rest)
        return lines
    }

    /// Bytes received after the last "\n": a line the stream did not finish.
    var unfinishedByteCount: Int { pending.count }
}
