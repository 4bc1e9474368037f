/// What the bytes of a suite file hold, read without opening the suite or taking its
/// lock: for tools that check files, and for fuzzing the decoder. Reading never traps,
/// whatever the bytes.
@_spi(Tools) public struct SuiteFileInspection: Sendable {
    public enum Verdict: Sendable, Equatable {
        /// Every byte verifies.
        case intact
        /// Only the end is a record cut short, as a killed writer leaves it.
        case tornTail
        /// Bytes inside the file do not verify; the records around them were read.
        case damaged
        /// Not a suite file.
        case foreign
        /// A suite file of a newer format.
        case unsupportedVersion(UInt16)
        /// No bytes at all.
        case empty
    }

    /// One record that verified.
    public struct Record: Sendable, Equatable {
        /// Where it lies in the file.
        public var range: Range<Int>
        public var sequence: UInt64
        /// The process that wrote it.
        public var pid: Int32
        /// Whether it is a snapshot (the state as a whole) rather than one commit.
        public var isSnapshot: Bool
        /// The keys it sets or removes.
        public var keys: [String]
    }

    public var verdict: Verdict
    /// Every record that verifies, in file order.
    public var records: [Record]
    /// The state those records add up to.
    public var values: [String: SuiteValue]
    /// How many bytes did not verify.
    public var unreadableBytes: Int

    /// Reads `bytes` as a suite file would be read from scratch.
    public init(bytes: [UInt8]) {
        guard !bytes.isEmpty else {
            self.init(verdict: .empty, records: [], values: [:], unreadableBytes: 0)
            return
        }
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(DataFileScan.Refusal) in try DataFileScan.scan(buffer, committedLength: nil, keepingRecords: true) }
        }
        switch result {
        case .success(let scan):
            let verdict: Verdict = switch scan.verdict {
            case .intact: .intact
            case .tornTail: .tornTail
            case .damaged: .damaged
            }
            let records = scan.records.map { located in
                Record(range: located.range, sequence: located.record.sequence, pid: located.record.pid,
                       isSnapshot: located.record.kind == .snapshot, keys: located.record.operations.compactMap(\.key))
            }
            self.init(verdict: verdict, records: records, values: scan.contents.values, unreadableBytes: scan.unreadableBytes)
        case .failure(.foreign):
            self.init(verdict: .foreign, records: [], values: [:], unreadableBytes: bytes.count)
        case .failure(.unsupported(let version)):
            self.init(verdict: .unsupportedVersion(version), records: [], values: [:], unreadableBytes: bytes.count)
        }
    }

    private init(verdict: Verdict, records: [Record], values: [String: SuiteValue], unreadableBytes: Int) {
        self.verdict = verdict
        self.records = records
        self.values = values
        self.unreadableBytes = unreadableBytes
    }
}
