// The recorders live in their own module, which the test worker shares; the tests
// reach them through this one.
@_exported import TestRecorders
