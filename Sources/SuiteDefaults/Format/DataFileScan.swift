/// Reads a whole data file, keeping every record that verifies.
///
/// This is the slow, thorough path: used when a process cannot trust what the
/// shared header says (after a reboot, after a writer died inside a commit) and when
/// damage was found. The fast path reads only the records after the last one seen.
struct DataFileScan {
    /// Why a file cannot be used at all. Nothing is changed in such a file.
    enum Refusal: Error {
        case foreign
        case unsupported(version: UInt16)
    }

    enum Verdict: Equatable {
        /// Every byte verified.
        case intact
        /// Only the end is unreadable, and only in the way an interrupted write leaves
        /// it: the beginning of a record, cut short, past the committed length.
        case tornTail
        /// Bytes inside the file do not verify; the records around them were kept.
        case damaged
    }

    /// Where one record that verified lies in the file.
    struct Located {
        var range: Range<Int>
        var record: Record
    }

    var fileID: UInt64?
    var contents = SuiteContents()
    /// Every record that verified, in file order, when asked for (`keepingRecords`):
    /// only an inspection needs them, and they hold every operation a second time.
    var records: [Located] = []
    var verdict = Verdict.intact
    /// Where the intact prefix ends: the length to keep when the verdict is `tornTail`.
    var validEnd = DataFileHeader.size
    var recordCount = 0
    /// Bytes that did not verify and were skipped.
    var unreadableBytes = 0
    var firstProblem: FormatError?

    /// - Parameter committedLength: the length the shared header says was committed,
    ///   when it can be trusted. Anything unreadable before it is damage, never a torn tail.
    static func scan(_ buffer: UnsafeRawBufferPointer, committedLength: Int?,
                     keepingRecords: Bool = false) throws(Refusal) -> DataFileScan {
        var scan = DataFileScan()
        // Looking for the next record after damage checksums every candidate; a file
        // crafted with a record magic at every byte would make that quadratic. Past
        // this much checksumming, the rest of the file counts as unreadable.
        var budget = 8 * buffer.count + (1 << 20)
        var offset: Int
        switch DataFileHeader.decode(buffer) {
        case .valid(let fileID):
            scan.fileID = fileID
            offset = DataFileHeader.size
        case .unsupported(let version):
            throw .unsupported(version: version)
        case .damaged:
            scan.note(FormatError(reason: "file header does not verify", offset: 0))
            offset = DataFileHeader.size
        case .foreign:
            // A suite file whose first bytes were hit is still ours if records follow;
            // a file with no record at all belongs to someone else.
            guard let first = nextRecord(in: buffer, after: 0, budget: &budget) else { throw .foreign }
            scan.note(FormatError(reason: "file header is missing or overwritten", offset: 0))
            scan.unreadableBytes += first
            offset = first
        }
        var clean = scan.verdict == .intact
        while offset < buffer.count {
            switch RecordFormat.parse(buffer, at: offset, limit: buffer.count) {
            // Only the first record may be a snapshot, as when a file is opened: a later
            // one is skipped as damage rather than wiping the keys before it.
            case .record(let record, let end) where scan.recordCount == 0
                || (record.sequence > scan.contents.lastSequence && record.kind == .transaction):
                scan.contents.apply(record)
                if keepingRecords { scan.records.append(Located(range: offset..<end, record: record)) }
                scan.recordCount += 1
                offset = end
                if clean { scan.validEnd = end }
            case let outcome:
                let problem: FormatError
                switch outcome {
                case .invalid(let error): problem = error
                case .incomplete: problem = FormatError(reason: "record cut short", offset: offset)
                case .record(let record, _) where record.kind == .snapshot:
                    problem = FormatError(reason: "a snapshot after the first record", offset: offset)
                case .record: problem = FormatError(reason: "record out of sequence", offset: offset)
                }
                if let next = nextRecord(in: buffer, after: offset, budget: &budget) {
                    scan.note(problem)
                    scan.unreadableBytes += next - offset
                    clean = false
                    offset = next
                    continue
                }
                scan.unreadableBytes += buffer.count - offset
                let pastCommitted = committedLength.map { offset >= $0 } ?? true
                if case .incomplete = outcome, clean, pastCommitted {
                    scan.verdict = .tornTail
                    scan.firstProblem = problem
                } else {
                    scan.note(problem)
                }
                offset = buffer.count
            }
        }
        if let committedLength, buffer.count < committedLength, scan.verdict != .damaged {
            scan.note(FormatError(reason: "file is shorter than its committed length \(committedLength)", offset: buffer.count))
        }
        return scan
    }

    private mutating func note(_ problem: FormatError) {
        if verdict != .damaged { firstProblem = problem }
        verdict = .damaged
    }

    /// The offset of the next record after `offset` that verifies, if any, spending
    /// at most `budget` bytes of checksumming on candidates.
    static func nextRecord(in buffer: UnsafeRawBufferPointer, after offset: Int, budget: inout Int) -> Int? {
        let magic = RecordFormat.magicBytes
        var candidate = offset + 1
        while candidate + RecordFormat.overhead <= buffer.count {
            if buffer[candidate] == magic[0], buffer[candidate + 1] == magic[1],
               buffer[candidate + 2] == magic[2], buffer[candidate + 3] == magic[3],
               RecordFormat.headerProblem(buffer, at: candidate) == nil {
                let length = Int(UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: candidate + 4, as: UInt32.self)))
                if candidate + RecordFormat.overhead + length <= buffer.count {
                    budget -= RecordFormat.overhead + length
                    if budget < 0 { return nil }
                    if case .record = RecordFormat.parse(buffer, at: candidate, limit: buffer.count) { return candidate }
                }
            }
            candidate += 1
        }
        return nil
    }
}
