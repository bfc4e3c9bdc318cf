package kernel

import (
	"testing"

	"github.com/chiokernel/chio/policy"
)

// forbidden_paths_case_insensitive folded paths as strings.EqualFold does,
// which keeps "ı" (U+0131, dotless i) apart from i. A case-insensitive file
// system does not: NTFS compares names upper-cased, and upper-cases ı to
// I, so "C:/Users/u/prıvate/key" opens the forbidden private directory.
// (And Go's ToLower takes "İ", U+0130, to i.) Such a path is denied as
// the other spellings of a forbidden path are.
func TestForbiddenPathsCaseInsensitiveDotlessI(t *testing.T) {
	c := policy.Constraints{ForbiddenPaths: []string{"/srv/private/**", "**/id_rsa"}, ForbiddenPathsCaseInsensitive: true}
	p := testPipeline()
	for _, arg := range []string{"/srv/prıvate/key", "/SRV/PRİVATE/key", "/home/u/.ssh/ıd_rsa"} {
		if d := p.Evaluate(pathCall(c, arg), true); d.Verdict != Deny || d.Guard != GuardForbiddenPaths {
			t.Errorf("%s: got %v by %q (%s), want denied by %s", arg, d.Verdict, d.Guard, d.Reason, GuardForbiddenPaths)
		}
	}
	if d := p.Evaluate(pathCall(c, "/srv/public/key"), true); d.Verdict != Allow {
		t.Errorf("/srv/public/key: got %v by %q (%s), want allowed", d.Verdict, d.Guard, d.Reason)
	}
}
