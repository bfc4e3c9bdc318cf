package invisible

import (
	"strings"
	"testing"
)

// TestLookalikeNames: in a member name holding an ASCII letter and a letter
// of another script than Latin, every non-ASCII letter is marked; values,
// and names in one script (or Latin with accents), are not.
func TestLookalikeNames(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"to":"acct-1","tо":"tо"}`, `{"to":"acct-1","t^":"tо"}`},
		{`{"a":{"аmоunt":5}}`, `{"a":{"^m^unt":5}}`},
		{`{"сумма":1,"金額":2,"số_tiền":3,"id_顧客":4}`, `{"сумма":1,"金額":2,"số_tiền":3,"id_^^":4}`},
		{`{ "pаy" : "x" , "l":["pаy"]}`, `{ "p^y" : "x" , "l":["pаy"]}`},
		{`{"t\"о":1}`, `{"t\"^":1}`},
		{`"tо"`, `"tо"`},
		{`{"tо":`, `{"tо":`},
	} {
		st := LookalikeNames(c.in)
		var got strings.Builder
		for i, r := range c.in {
			if st.At(i) {
				got.WriteByte('^')
			} else {
				got.WriteRune(r)
			}
		}
		if got.String() != c.want {
			t.Errorf("LookalikeNames(%s) = %s, want %s", c.in, got.String(), c.want)
		}
	}
}
