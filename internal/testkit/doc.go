// Package testkit builds the fixture shared by the test suites of chio:
// a real kernel (kernel.New) on a real bbolt store (boltstore.Open) with a
// policy parsed from TOML, a dispatcher, optionally served over httptest
// with httpapi.New, plus an agent key, a capability and helpers to submit
// signed calls, sign approval tokens and read verified receipts.
//
// It is for tests only: it must never be imported by non-test code.
package testkit
