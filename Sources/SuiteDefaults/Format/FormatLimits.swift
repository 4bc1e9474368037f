/// Bounds on what a file may claim, so that no number read from a file or the shared
/// header can exhaust memory or overflow arithmetic.
enum FormatLimits {
    /// The largest data file read; a larger one is refused (`.suiteTooLarge`, or
    /// `.foreignFile` without the magic). A healthy journal stays far below it: the
    /// suite size limit is capped at a quarter of it, and compaction keeps the file
    /// within about twice the live size.
    static let maximumFileSize = 1 << 30
    /// The largest sequence number a record may carry. One commit a nanosecond would
    /// take 146 years to reach it, and below it `sequence + 1` cannot overflow.
    static let maximumSequence: UInt64 = 1 << 62

    /// A sequence number read from the shared header, to number commits after; 0 when it
    /// is past half the limit (73 years of a commit a nanosecond), which this library
    /// never writes: 8 bytes forged in the shared page must not use up the numbers left.
    static func sequenceToNumberAfter(fromHeader sequence: UInt64) -> UInt64 {
        sequence <= maximumSequence / 2 ? sequence : 0
    }
}
