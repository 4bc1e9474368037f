import Testing

/// What an exit test's child wrote to its standard error, as text.
func standardErrorText(of result: ExitTest.Result?) -> String {
    String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
}

/// Expects that an exit test's child stopped with `message` on its standard error.
func expectChildStopped(_ result: ExitTest.Result?, saying message: String, sourceLocation: SourceLocation = #_sourceLocation) {
    let errors = standardErrorText(of: result)
    #expect(errors.contains(message), "the child's errors: \(errors.suffix(600))", sourceLocation: sourceLocation)
}
