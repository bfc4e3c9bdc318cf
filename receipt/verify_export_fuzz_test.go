package receipt

import (
	"bytes"
	"reflect"
	"testing"
)

// FuzzVerifyExport feeds `chio receipt verify` files: the honest fixture
// export and line-level edits of it (a line dropped, two swapped),
// which the fuzzer mutates further. Whatever the file:
//
//   - VerifyExport returns a report, never an error (the input is readable
//     and no line is over MaxExportLine), and never panics;
//   - the report does not depend on how many workers check lines;
//   - a report without problems vouches only for the kernel's own log: the
//     file's receipts are exactly the first Receipts receipts the kernel
//     signed, byte for byte and in order (no receipt can be forged, so any
//     other file must have a problem).
func FuzzVerifyExport(f *testing.F) {
	honest := fxExport(f, fxReceipts(), fxKernel, nil)
	f.Add(honest)
	ls := lines(honest)
	for i := range ls {
		drop := append(append([][]byte{}, ls[:i]...), ls[i+1:]...)
		f.Add(join(drop))
		if i+1 < len(ls) {
			sw := append([][]byte{}, ls...)
			sw[i], sw[i+1] = sw[i+1], sw[i]
			f.Add(join(sw))
		}
	}
	f.Add([]byte{})
	f.Add([]byte("\n\n"))
	var signedReceipts [][]byte
	for _, l := range ls {
		if _, err := VerifyCanonical(l, fxKernel.Public()); err == nil {
			signedReceipts = append(signedReceipts, l)
		}
	}
	f.Fuzz(func(t *testing.T, file []byte) {
		one, err := VerifyExport(bytes.NewReader(file), VerifyOptions{KernelKey: fxKernel.Public(), Workers: 1})
		if err != nil {
			t.Fatalf("VerifyExport: %v", err)
		}
		three, err := VerifyExport(bytes.NewReader(file), VerifyOptions{KernelKey: fxKernel.Public(), Workers: 3})
		if err != nil {
			t.Fatalf("VerifyExport (3 workers): %v", err)
		}
		if !reflect.DeepEqual(one, three) {
			t.Fatalf("the report depends on the workers:\n%+v\n%+v", one, three)
		}
		if !one.OK() {
			return
		}
		var got [][]byte
		for _, l := range bytes.Split(file, []byte("\n")) {
			if _, err := VerifyCanonical(bytes.TrimSuffix(l, []byte("\r")), fxKernel.Public()); err == nil {
				got = append(got, l)
			}
		}
		if uint64(len(got)) != one.Receipts || len(got) > len(signedReceipts) {
			t.Fatalf("report OK with %d receipts, file has %d signed receipt lines", one.Receipts, len(got))
		}
		for i := range got {
			if !bytes.Equal(got[i], signedReceipts[i]) {
				t.Fatalf("report OK, but receipt %d is not the kernel's:\n%s\n%s", i+1, got[i], signedReceipts[i])
			}
		}
	})
}
