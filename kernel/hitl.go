package kernel

import (
	"encoding/json"
	"fmt"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/jsonexact"
	"github.com/chiokernel/chio/policy"
)

// checkHITLArgs validates confirm / ask arguments before anything is
// stored: a human will read them. The prompt (the request's one-line
// summary), the questions and their options are shown as text, so they
// hold no control or format characters (shown_text.go); a confirm's
// details are data, shown escaped like tool arguments.
func checkHITLArgs(tool string, args json.RawMessage) error {
	switch tool {
	case policy.ToolConfirm:
		a, err := approval.ParseConfirm(args)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrBadCall, err)
		}
		return checkShownText("arguments.prompt", a.Prompt)
	case policy.ToolAsk:
		a, err := approval.ParseAsk(args)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrBadCall, err)
		}
		if err := checkShownText("arguments.prompt", a.Prompt); err != nil {
			return err
		}
		for i, q := range a.Questions {
			// The id is a name; the question's text is prose, and so are
			// its options ("⚠️ proceed anyway", "Oui, d'accord !"), which
			// are compared with each other instead: an approver must be
			// able to tell any two apart (lookalikeOptions).
			if err := checkShownName(fmt.Sprintf("arguments.questions[%d].id", i), q.ID); err != nil {
				return err
			}
			if err := checkShownText(fmt.Sprintf("arguments.questions[%d].text", i), q.Text); err != nil {
				return err
			}
			for j, o := range q.Options {
				if err := checkShownText(fmt.Sprintf("arguments.questions[%d].options[%d]", i, j), o); err != nil {
					return err
				}
			}
			if j, k, same := lookalikeOptions(q.Options); same {
				return fmt.Errorf("%w: arguments.questions[%d].options[%d] (%q) looks the same to an approver as options[%d] "+
					"(%q): they differ only in spaces or invisible characters", ErrBadCall, i, k, q.Options[k], j, q.Options[j])
			}
		}
	}
	return nil
}

// applyHITL turns a request into a confirm or question: the prompt is the
// summary, and the arguments (the prompt and details a human must read) are
// always shown.
func applyHITL(req *approval.Request, rec *CallRecord) {
	req.Arguments = rec.Arguments
	switch rec.Tool {
	case policy.ToolConfirm:
		a, _ := approval.ParseConfirm(rec.Arguments)
		req.Kind, req.Summary = approval.KindConfirm, a.Prompt
	case policy.ToolAsk:
		a, _ := approval.ParseAsk(rec.Arguments)
		req.Kind = approval.KindQuestion
		req.Summary = a.Prompt
		if req.Summary == "" {
			req.Summary = a.Questions[0].Text
		}
		req.Questions, _ = json.Marshal(a.Questions)
	}
}

// hitlOutput is what an answered confirm / ask returns to the agent.
func hitlOutput(req *approval.Request, tok *approval.Token, vote *approval.Vote) json.RawMessage {
	out := map[string]any{"confirmed": true}
	if req.Kind == approval.KindQuestion && tok != nil {
		out = map[string]any{"answers": tok.Answers}
	}
	if vote != nil {
		out["approver"] = vote.Approver
		if vote.Note != "" {
			out["note"] = vote.Note
		}
	}
	b, _ := jsonexact.Marshal(out) // the answers as the approver signed them
	return b
}
