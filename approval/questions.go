package approval

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/chiokernel/chio/internal/canon"
)

// Question types of an `ask` request (the HITL channel seed's form fields).
const (
	QuestionText   = "text"
	QuestionSingle = "single"
	QuestionMulti  = "multi"
)

// Limits on questions, checked before they are stored or shown.
const (
	MaxQuestions    = 20
	MaxOptions      = 50
	MaxQuestionText = 1000
	MaxAnswerText   = 4000
	MaxPromptLen    = 2000
)

// Question is one field of an `ask` request.
type Question struct {
	ID         string   `json:"id"`
	Text       string   `json:"text"`
	Type       string   `json:"type"`
	Options    []string `json:"options,omitempty"`
	AllowOther bool     `json:"allow_other,omitempty"`
}

// ConfirmArgs are the arguments of the `confirm` verb.
type ConfirmArgs struct {
	Prompt  string          `json:"prompt"`
	Details json.RawMessage `json:"details,omitempty"`
}

// AskArgs are the arguments of the `ask` verb.
type AskArgs struct {
	Prompt    string     `json:"prompt,omitempty"`
	Questions []Question `json:"questions"`
}

// ErrBadQuestions marks confirm/ask arguments that cannot be shown to a human.
var ErrBadQuestions = errors.New("invalid confirm/ask arguments")

// ParseConfirm checks confirm arguments.
func ParseConfirm(raw []byte) (*ConfirmArgs, error) {
	var a ConfirmArgs
	if err := canon.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadQuestions, err)
	}
	if a.Prompt == "" || len(a.Prompt) > MaxPromptLen {
		return nil, fmt.Errorf("%w: prompt must be 1..%d bytes", ErrBadQuestions, MaxPromptLen)
	}
	return &a, nil
}

// ParseAsk checks ask arguments: ids unique, types known, options present
// for selects.
func ParseAsk(raw []byte) (*AskArgs, error) {
	var a AskArgs
	if err := canon.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadQuestions, err)
	}
	if len(a.Questions) == 0 || len(a.Questions) > MaxQuestions || len(a.Prompt) > MaxPromptLen {
		return nil, fmt.Errorf("%w: 1..%d questions, prompt ≤ %d bytes", ErrBadQuestions, MaxQuestions, MaxPromptLen)
	}
	// The ids become the member names of the signed answers object, which
	// canon refuses if two differ only in letter case: such a question
	// could never be answered.
	var ids []string
	for _, q := range a.Questions {
		sameID := func(id string) bool { return strings.EqualFold(id, q.ID) }
		switch {
		case q.ID == "" || len(q.ID) > 64 || slices.ContainsFunc(ids, sameID):
			return nil, fmt.Errorf("%w: question ids must be unique (ignoring letter case), 1..64 bytes", ErrBadQuestions)
		case q.Text == "" || len(q.Text) > MaxQuestionText:
			return nil, fmt.Errorf("%w: question %q needs text ≤ %d bytes", ErrBadQuestions, q.ID, MaxQuestionText)
		case q.Type != QuestionText && q.Type != QuestionSingle && q.Type != QuestionMulti:
			return nil, fmt.Errorf("%w: question %q type must be text, single or multi", ErrBadQuestions, q.ID)
		case q.Type != QuestionText && (len(q.Options) == 0 || len(q.Options) > MaxOptions):
			return nil, fmt.Errorf("%w: question %q needs 1..%d options", ErrBadQuestions, q.ID, MaxOptions)
		}
		ids = append(ids, q.ID)
	}
	return &a, nil
}

// ValidateAnswers checks a token's answers against the questions: an
// object from question id to a string (text, single) or a list of strings
// (multi); select answers must be options unless allow_other; a multi
// answer names each choice at most once, none empty; a typed answer (not
// an offered option) holds a visible character; every question is
// answered.
func ValidateAnswers(questions []Question, raw json.RawMessage) error {
	if len(raw) == 0 {
		return fmt.Errorf("%w: answers are required for a question request", ErrMalformedToken)
	}
	var ans map[string]json.RawMessage
	if err := json.Unmarshal(raw, &ans); err != nil {
		return fmt.Errorf("%w: answers must be an object", ErrMalformedToken)
	}
	if len(ans) != len(questions) {
		return fmt.Errorf("%w: %d answers for %d questions", ErrMalformedToken, len(ans), len(questions))
	}
	for _, q := range questions {
		v, ok := ans[q.ID]
		if !ok {
			return fmt.Errorf("%w: question %q not answered", ErrMalformedToken, q.ID)
		}
		var picks []string
		if q.Type == QuestionMulti {
			if json.Unmarshal(v, &picks) != nil || len(picks) == 0 {
				return fmt.Errorf("%w: question %q wants a list of choices", ErrMalformedToken, q.ID)
			}
		} else {
			var s string
			if json.Unmarshal(v, &s) != nil || s == "" {
				return fmt.Errorf("%w: question %q wants a non-empty string", ErrMalformedToken, q.ID)
			}
			picks = []string{s}
		}
		// ["A","A"] is not a shape the form offers: a tool acting once
		// per pick would act twice on one choice. (A map: allow_other
		// lists are bounded only by the token's size.)
		chosen := make(map[string]bool, len(picks))
		for _, p := range picks {
			if p == "" { // "" or null: no choice, though a list took it
				return fmt.Errorf("%w: question %q wants non-empty choices", ErrMalformedToken, q.ID)
			}
			if chosen[p] {
				return fmt.Errorf("%w: %q is chosen more than once in %q", ErrMalformedToken, p, q.ID)
			}
			chosen[p] = true
			if len(p) > MaxAnswerText || !utf8.ValidString(p) {
				return fmt.Errorf("%w: answer to %q too long", ErrMalformedToken, q.ID)
			}
			offered := q.Type != QuestionText && slices.Contains(q.Options, p)
			if q.Type != QuestionText && !q.AllowOther && !offered {
				return fmt.Errorf("%w: %q is not an option of %q", ErrMalformedToken, p, q.ID)
			}
			// A typed answer (text, or "Other") that shows as nothing is
			// no answer, as "" is not: the form refuses it too. An offered
			// option is taken as the agent wrote it.
			if !offered && Blank(p) {
				return fmt.Errorf("%w: the answer to %q is only spaces or invisible characters", ErrMalformedToken, q.ID)
			}
		}
	}
	return nil
}
