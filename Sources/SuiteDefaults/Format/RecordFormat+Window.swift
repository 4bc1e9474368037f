extension RecordFormat {
    /// `apply(_:at:limit:to:sequenceAfter:)` for a record read through `window`. A record
    /// larger than the window's preferred size (the snapshot of a large suite) is never
    /// held whole: it is checked and applied operation by operation as the window moves
    /// over it, its checksum computed on the way and compared at its end. On `.invalid`
    /// (and `.incomplete`), `contents` may hold part of the record and must be dropped.
    ///
    /// - Throws: what the window's reads throw.
    static func apply(_ window: inout RecordWindow, at offset: Int, to contents: inout SuiteContents,
                      sequenceAfter last: UInt64?) throws -> ParseOutcome<Fields> {
        guard try window.hold(from: offset, count: overhead) else { return .incomplete }
        let framing = window.withBytes { buffer, start in framedEnd(buffer, at: offset - start, limit: buffer.count) }
        guard case .record(let framedEnd, _) = framing else { return framing.withoutValue() }
        let end = framedEnd + window.start
        if end > window.end { return .incomplete }
        if end - offset <= window.preferredSize {
            guard try window.hold(from: offset, count: end - offset) else { return .incomplete }
            return window.withBytes { buffer, start in
                switch apply(buffer, at: offset - start, limit: end - start, to: &contents, sequenceAfter: last) {
                case .record(let fields, let end): .record(fields, end: end + start)
                case .incomplete: .incomplete
                case .invalid(let error): .invalid(error)
                }
            }
        }
        return try applyLarge(&window, at: offset, end: end, to: &contents, sequenceAfter: last)
    }

    private static func applyLarge(_ window: inout RecordWindow, at offset: Int, end: Int, to contents: inout SuiteContents,
                                   sequenceAfter last: UInt64?) throws -> ParseOutcome<Fields> {
        // The header, whole in the window since `apply` held `overhead` bytes from it.
        let header: Result<(Fields, crc: UInt32), FormatError> = window.withBytes { buffer, start in
            let local = offset - start
            if let problem = headerProblem(buffer, at: local) { return .failure(problem) }
            var reader = ByteReader(buffer, from: local, to: local + headerSize)
            do throws(FormatError) {
                let fields = try decodeFields(from: &reader)
                return .success((fields, CRC32C.checksum(UnsafeRawBufferPointer(rebasing: buffer[(local + 4)..<(local + headerSize)]))))
            } catch {
                return .failure(error)
            }
        }
        guard case .success(let (fields, headerCRC)) = header else {
            if case .failure(let error) = header { return .invalid(error) }
            return .incomplete
        }
        if let last, fields.sequence <= last { return .invalid(FormatError(reason: "record out of sequence", offset: offset)) }
        contents.begin(fields.kind)
        let payload = (offset + headerSize)..<(end - 4)
        if contents.count == 0 {
            // Counted first, as `apply` does, so that the table is made its final size at once.
            var sets = 0
            if try walkOperations(&window, over: payload, { reader throws(FormatError) in
                if try skipOperation(from: &reader) { sets += 1 }
            }) == nil {
                contents.reserve(sets)
            }
        }
        var crc = headerCRC
        if let problem = try walkOperations(&window, over: payload, { reader throws(FormatError) in
            contents.apply(try decodeOperation(from: &reader, in: fields.kind))
        }, consumed: { crc = CRC32C.checksum($0, continuing: crc) }) {
            return .invalid(problem)
        }
        guard try window.hold(from: end - 4, count: 4) else { return .incomplete }
        let stored = window.withBytes { buffer, start in
            UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: end - 4 - start, as: UInt32.self))
        }
        guard stored == crc else { return .invalid(FormatError(reason: "record checksum mismatch", offset: offset)) }
        contents.finish(sequence: fields.sequence)
        return .record(fields, end: end)
    }

    /// Runs `step` on each operation of `range` in turn, with a reader over the window,
    /// and hands the bytes of each to `consumed`. An operation that runs past the
    /// window is tried again with the window grown (to twice what it held of it), so
    /// one larger than the window is held whole; an error where the window reaches the
    /// end of `range` is the record's. Answers that error, or nil.
    private static func walkOperations(_ window: inout RecordWindow, over range: Range<Int>,
                                       _ step: (inout ByteReader) throws(FormatError) -> Void,
                                       consumed: (UnsafeRawBufferPointer) -> Void = { _ in }) throws -> FormatError? {
        enum Outcome {
            case stepped(to: Int)
            case needsMore(held: Int)
            case failed(FormatError)
        }
        var position = range.lowerBound
        var wanted = 1
        while position < range.upperBound {
            guard try window.hold(from: position, count: wanted) else {
                return FormatError(reason: "the file ends inside a record", offset: position)
            }
            let outcome: Outcome = window.withBytes { buffer, start in
                let limit = min(range.upperBound, start + buffer.count)
                var reader = ByteReader(buffer, from: position - start, to: limit - start)
                do throws(FormatError) {
                    try step(&reader)
                } catch {
                    return limit == range.upperBound ? .failed(error) : .needsMore(held: limit - position)
                }
                consumed(UnsafeRawBufferPointer(rebasing: buffer[(position - start)..<reader.offset]))
                return .stepped(to: reader.offset + start)
            }
            switch outcome {
            case .stepped(let next):
                position = next
                wanted = 1
            case .needsMore(let held):
                wanted = 2 * max(held, 1)
            case .failed(let error):
                return error
            }
        }
        return nil
    }
}

extension RecordFormat.ParseOutcome {
    /// The same outcome for a record that was not read: `.record` becomes `.incomplete`.
    func withoutValue<Other>() -> RecordFormat.ParseOutcome<Other> {
        switch self {
        case .record: .incomplete
        case .incomplete: .incomplete
        case .invalid(let error): .invalid(error)
        }
    }
}
