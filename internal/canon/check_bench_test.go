package canon

import "testing"

// A call proof's shape: lower-case ASCII names, nested arguments.
var benchProof = []byte(`{"schema":"chio.call_proof.v1","request_id":"req-0123456789","capability_id":"cap-abcdef","server":"demo",` +
	`"tool":"issue_refund","arguments":{"customer_id":"c-42","amount":450,"currency":"USD","note":"duplicate charge"},` +
	`"governed_intent":{"purpose":"refund","max_amount":{"units":450,"currency":"USD"}},"issued_at":"2026-01-02T03:04:05Z",` +
	`"nonce":"9f86d081884c7d659a2feaa0c55ad015","signature":"` + "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff" + `"}`)

// The same with HTTP-style header names in the arguments: names that could
// fold, so Check compares them.
var benchHeaders = []byte(`{"tool":"http","arguments":{"headers":{"Content-Type":"application/json","X-Request-Id":"r1","Authorization":"Bearer x","Accept":"*/*"},"url":"https://example.com"}}`)

func BenchmarkCheckProof(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if err := Check(benchProof); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheckFoldableNames(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if err := Check(benchHeaders); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeProof(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(benchProof); err != nil {
			b.Fatal(err)
		}
	}
}
