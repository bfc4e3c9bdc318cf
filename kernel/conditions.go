package kernel

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/chiokernel/chio/policy"
)

// The argument-condition guards evaluate a grant's deny_when and
// require_approval_when (compiled by policy at load) against the call. An
// evaluation error of either kind — a missing key, a type mismatch, the
// cost limit — is a deny naming the expression: a condition that cannot be
// decided must not let the call through.

// checkDenyWhen denies when any deny_when expression is true.
func checkDenyWhen(r *Request) (Result, error) {
	if len(r.Grant.Constraints.DenyWhen) == 0 {
		return allow()
	}
	conds, err := compiledConditions(r, policy.KindDenyWhen)
	if err != nil {
		return Result{Deny, GuardDenyWhen, err.Error()}, nil
	}
	in, err := r.conditionInput()
	if err != nil {
		return Result{Deny, GuardDenyWhen, fmt.Sprintf("grant %q: deny_when cannot be evaluated: %v", r.Grant.ID, err)}, nil
	}
	for _, c := range conds {
		hit, err := c.Eval(in)
		if err != nil {
			return Result{Deny, GuardDenyWhen, evalFailure(r.Grant.ID, c, err)}, nil
		}
		if hit {
			return Result{Deny, GuardDenyWhen, fmt.Sprintf("grant %q: %s is true", r.Grant.ID, c)}, nil
		}
	}
	return allow()
}

// checkApprovalWhen asks a human when any require_approval_when expression
// is true. Every expression is evaluated: one that fails denies even if
// another is true, because deny dominates.
func checkApprovalWhen(r *Request) (Result, error) {
	if len(r.Grant.Constraints.RequireApprovalWhen) == 0 {
		return allow()
	}
	conds, err := compiledConditions(r, policy.KindRequireApprovalWhen)
	if err != nil {
		return Result{Deny, GuardApprovalWhen, err.Error()}, nil
	}
	in, err := r.conditionInput()
	if err != nil {
		return Result{Deny, GuardApprovalWhen, fmt.Sprintf("grant %q: require_approval_when cannot be evaluated: %v", r.Grant.ID, err)}, nil
	}
	var fired []string
	for _, c := range conds {
		hit, err := c.Eval(in)
		if err != nil {
			return Result{Deny, GuardApprovalWhen, evalFailure(r.Grant.ID, c, err)}, nil
		}
		if hit {
			fired = append(fired, c.String())
		}
	}
	if len(fired) > 0 {
		return Result{PendingApproval, GuardApprovalWhen, fmt.Sprintf("grant %q: %s is true", r.Grant.ID, strings.Join(fired, ", "))}, nil
	}
	return allow()
}

func evalFailure(grantID string, c *policy.Condition, err error) string {
	msg := err.Error()
	if len(msg) > maxConditionError {
		msg = msg[:maxConditionError] + "…"
	}
	return fmt.Sprintf("grant %q: %s could not be evaluated (%s); an undecidable condition denies", grantID, c, msg)
}

// compiledConditions returns the grant's compiled expressions of one kind.
// A grant whose expressions were not compiled (a Policy not built by
// policy.Parse) is an error, never a pass.
func compiledConditions(r *Request, kind string) ([]*policy.Condition, error) {
	var gc *policy.GrantConditions
	if r.Policy != nil {
		gc = r.Policy.Conditions(r.Grant.ID)
	}
	if gc == nil {
		gc = &policy.GrantConditions{}
	}
	want, got := len(r.Grant.Constraints.DenyWhen), gc.DenyWhen
	if kind == policy.KindRequireApprovalWhen {
		want, got = len(r.Grant.Constraints.RequireApprovalWhen), gc.RequireApprovalWhen
	}
	if len(got) != want {
		return nil, fmt.Errorf("grant %q: %s was not compiled with the policy", r.Grant.ID, kind)
	}
	return got, nil
}

// conditionInput builds the variables conditions see, once per request.
func (r *Request) conditionInput() (*policy.ConditionInput, error) {
	if r.condInputOK || r.condErr != nil {
		return r.condInput, r.condErr
	}
	in, err := r.buildConditionInput()
	r.condInput, r.condErr, r.condInputOK = in, err, err == nil
	return in, err
}

func (r *Request) buildConditionInput() (*policy.ConditionInput, error) {
	args, err := r.arguments()
	if err != nil {
		return nil, err
	}
	in := &policy.ConditionInput{Subject: r.Subject}
	in.Args, _ = celValue(args).(map[string]any)
	if r.Call != nil {
		in.Tool, in.Server = r.Call.Tool, r.Call.Server
		if raw := r.Call.GovernedIntent; len(raw) > 0 && string(raw) != "null" {
			if len(raw) > MaxArgumentsBytes {
				return nil, fmt.Errorf("governed_intent larger than %d bytes", MaxArgumentsBytes)
			}
			intent, err := decodeJSON(raw)
			if err != nil {
				return nil, fmt.Errorf("governed_intent: %w", err)
			}
			in.Intent = celValue(intent)
		}
	}
	return in, nil
}

// celValue converts decoded JSON for CEL: a whole number becomes an int
// (so args.count % 2 works), any other number a double.
func celValue(v any) any {
	switch t := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			return i
		}
		// canon.Check has already refused numbers that do not parse.
		f, _ := strconv.ParseFloat(string(t), 64)
		if f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
			return int64(f)
		}
		return f
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = celValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = celValue(e)
		}
		return out
	}
	return v
}
