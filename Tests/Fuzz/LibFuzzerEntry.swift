// The libFuzzer entry point for the suite file decoder. It is not part of the package
// build: Tests/Fuzz/run-libfuzzer compiles it together with the SuiteDefaults sources
// with -sanitize=fuzzer,address, and runs it.

/// Reads the input as a suite file. It must never trap, and what it reports must fit
/// the bytes; a violation traps on purpose, so that libFuzzer keeps the input.
@_cdecl("LLVMFuzzerTestOneInput")
public func suiteDecoderFuzzTarget(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    let inspection = SuiteFileInspection(bytes: bytes)
    var end = 0
    var sequence: UInt64?
    for record in inspection.records {
        precondition(record.range.lowerBound >= end && record.range.upperBound <= bytes.count, "a record outside the bytes")
        if let sequence { precondition(record.sequence > sequence, "sequence numbers out of order") }
        end = record.range.upperBound
        sequence = record.sequence
    }
    precondition(inspection.unreadableBytes <= bytes.count, "more unreadable bytes than bytes")
    readingThroughWindowsMatchesReadingWhole(bytes)
    return 0
}

/// Opening a suite reads its records through a window; whatever the window's size, it
/// must accept and refuse exactly what reading the whole file does, with the same result.
func readingThroughWindowsMatchesReadingWhole(_ bytes: [UInt8]) {
    guard bytes.count >= DataFileHeader.size else { return }
    var whole: SuiteContents?
    if let records = StoreState.records(in: bytes, from: DataFileHeader.size, after: nil) {
        var contents = SuiteContents()
        for record in records { contents.apply(record) }
        whole = contents
    }
    for size in [1, 64, 1 << 16] {
        var window = RecordWindow(end: bytes.count, preferredSize: size) { buffer, offset in
            let count = max(0, min(buffer.count, bytes.count - offset))
            bytes.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[offset..<(offset + count)])) }
            return count
        }
        let windowed = try? StoreState.contents(reading: &window, from: DataFileHeader.size)
        precondition((windowed == nil) == (whole == nil), "a window of \(size) bytes and the whole file disagree on whether the records are valid")
        if let windowed, let whole {
            precondition(windowed.changes(to: whole).isEmpty && windowed.lastSequence == whole.lastSequence
                         && windowed.liveBytes == whole.liveBytes, "a window of \(size) bytes read other contents")
        }
    }
}
