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
    return 0
}
