package invisible

import (
	"encoding/json"
	"unicode"
	"unicode/utf8"
)

// Look-alike member names in JSON a view draws.
//
// A member name may mix scripts: "tо" with a Cyrillic о draws exactly as
// "to", "аmount" with a Cyrillic а as "amount". Arguments
// {"to":"acct-MALLORY","tо":"acct-ALICE"} drawn raw show two members named
// "to", and the approver cannot tell which one the tool reads. So in a
// member name holding an ASCII letter and a letter of another script than
// Latin (LookalikeName), a view writes every non-ASCII letter as an escape
// ("t\u043e"), as it writes invisible characters; the value is unchanged.
// A name in one script ("сумма", "金額", "số_tiền") is drawn as it is. The
// dashboard's canonorder.js applies the same rule (memberName).

// LookalikeName reports whether name holds an ASCII letter and a letter
// whose script is not Latin.
func LookalikeName(name string) bool {
	ascii, other := false, false
	for _, r := range name {
		switch {
		case r < utf8.RuneSelf:
			ascii = ascii || unicode.IsLetter(r)
		case unicode.IsLetter(r) && !unicode.Is(unicode.Latin, r):
			other = true
		}
	}
	return ascii && other
}

// LookalikeNames marks, in JSON text, the bytes of every non-ASCII letter
// in a member name that LookalikeName reports; nil when there is none or the
// text is not valid JSON. The text is as a view draws it (compacted or
// not), so member names are the strings a colon follows.
func LookalikeNames(jsonText string) Stacked {
	if !json.Valid([]byte(jsonText)) {
		return nil
	}
	var st Stacked
	for i := 0; i < len(jsonText); i++ {
		if jsonText[i] != '"' {
			continue
		}
		end := stringEnd(jsonText, i)
		if j := skipSpace(jsonText, end); j < len(jsonText) && jsonText[j] == ':' {
			var name string
			if json.Unmarshal([]byte(jsonText[i:end]), &name) == nil && LookalikeName(name) {
				st = markLetters(st, jsonText, i+1, end-1)
			}
		}
		i = end - 1
	}
	return st
}

// stringEnd returns the index just past the JSON string starting at i.
func stringEnd(s string, i int) int {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(s)
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// markLetters marks the non-ASCII letters of s[from:to] in st (made for s
// if nil).
func markLetters(st Stacked, s string, from, to int) Stacked {
	for j := from; j < to; {
		r, size := utf8.DecodeRuneInString(s[j:])
		if r >= utf8.RuneSelf && unicode.IsLetter(r) {
			if st == nil {
				st = make(Stacked, len(s))
			}
			for k := j; k < j+size; k++ {
				st[k] = true
			}
		}
		j += size
	}
	return st
}
