package kernel

import (
	"encoding/json"
	"fmt"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/policy"
)

// GuardAmendment names the check that refuses an approver's amended call
// when it resumes (deny receipts carry it as `guard`).
const GuardAmendment = "amendment"

// SchemaValidator checks arguments against a tool's declared input schema
// (MCP tools publish one). The kernel calls it for amendments; transports
// check calls as they arrive. nil: no transport's tool declares a schema.
// Schemas the policy declares (input_schema on an http tool) the kernel
// checks itself: the input_schema guard, and checkAmendment.
type SchemaValidator interface {
	ValidateArguments(server, tool string, args json.RawMessage) error
}

// amendment is an approver's edit of a parked call, checked and bound.
type amendment struct {
	args json.RawMessage // canonical bytes: what the tool will receive
	hash string          // the amended call's parameter_hash
	meta map[string]any  // for the allow receipt
}

// checkAmendment applies the rules an approver's edit must satisfy. It
// runs when the token is presented (a refused amendment consumes nothing)
// and again when the call resumes (the policy may have changed since):
//
//   - the grant exposes arguments to approvers, and did when the call was
//     parked (its request carries them): nobody may rewrite what they were
//     not shown;
//   - the edit is a JSON object within the argument limits, held in its
//     canonical form (the bytes the tool receives are the bytes hashed);
//   - it validates against the tool's input schema, when one is known
//     (the transport's, through SchemaValidator, or the policy's own);
//   - the amount it carries (derived from the arguments, never from the
//     intent) has the currency the approver was shown and is no larger:
//     an approver may lower a refund, not raise or redirect its money.
//
// The amended call then runs every non-approval guard again (resume).
func (k *Kernel) checkAmendment(p *policy.Policy, req *approval.Request, rec *CallRecord, raw json.RawMessage) (*amendment, error) {
	if req.Kind != approval.KindToolCall {
		return nil, fmt.Errorf("%w: only tool calls can be amended", approval.ErrAmendmentRefused)
	}
	g, ok := p.Grant(rec.GrantID)
	if !ok || g.Approval == nil || !g.Approval.ExposeArguments {
		return nil, fmt.Errorf("%w: grant %s does not set expose_arguments, so its approvers are not shown the arguments and cannot amend them",
			approval.ErrAmendmentRefused, rec.GrantID)
	}
	// Exposed now is not enough: the approvers must have been shown this
	// call, i.e. it was parked with exposure and its request carries the
	// arguments. A reload that turns expose_arguments on shows nothing of
	// calls parked before it, so they cannot be rewritten unseen.
	if len(req.Arguments) == 0 {
		return nil, fmt.Errorf("%w: this call was parked while grant %s did not set expose_arguments; its approvers were not shown the arguments and cannot amend them",
			approval.ErrAmendmentRefused, rec.GrantID)
	}
	if len(raw) > MaxArgumentsBytes {
		return nil, fmt.Errorf("%w: amended_arguments larger than %d bytes", approval.ErrAmendmentRefused, MaxArgumentsBytes)
	}
	args, err := canon.Canonicalize(raw)
	if err != nil || args[0] != '{' {
		return nil, fmt.Errorf("%w: amended_arguments must be a JSON object: %v", approval.ErrAmendmentRefused, err)
	}
	if len(args) > MaxArgumentsBytes {
		// The canonical form is what is stored, shown and sent, and it can
		// be longer than what was signed ("9e15" is 9000000000000000), as
		// authenticate checks for an agent's arguments. (Today the 64 KiB
		// token limit keeps an amendment's canonical form under 256 KiB;
		// this holds the limit if either changes.)
		return nil, fmt.Errorf("%w: amended_arguments larger than %d bytes in canonical form", approval.ErrAmendmentRefused, MaxArgumentsBytes)
	}
	if k.schemas != nil {
		if err := k.schemas.ValidateArguments(rec.Server, rec.Tool, args); err != nil {
			return nil, fmt.Errorf("%w: amended_arguments do not match the tool's input schema: %v", approval.ErrAmendmentRefused, err)
		}
	}
	// The schema the policy in force declares for the tool (input_schema).
	if s := p.InputSchema(rec.Server, rec.Tool); s != nil {
		if err := s.Validate(args); err != nil {
			return nil, fmt.Errorf("%w: amended_arguments do not match the tool's input schema: %v", approval.ErrAmendmentRefused, err)
		}
	}
	hash, err := ParameterHash(rec.Server, rec.Tool, args, rec.Intent)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", approval.ErrAmendmentRefused, err)
	}
	meta := map[string]any{"original_parameter_hash": rec.ParameterHash, "amended_parameter_hash": hash, "amended": true}
	if err := k.checkAmendedAmount(p, req, rec, args, meta); err != nil {
		return nil, err
	}
	return &amendment{args: args, hash: hash, meta: meta}, nil
}

// checkAmendedAmount keeps an amended call's money within what the
// approver was shown: same currency, amount no larger. What was shown is
// the request's amount, fixed when the call was parked; it is derived
// again from the original arguments only for a request that carries none.
// (Derived under the policy in force alone, a reload that drops or moves
// the tool's amount pointers would let an amendment raise the amount.)
func (k *Kernel) checkAmendedAmount(p *policy.Policy, req *approval.Request, rec *CallRecord, args json.RawMessage, meta map[string]any) error {
	tool, _ := p.Tool(rec.Server, rec.Tool)
	before, err := DeriveAmount(tool, rec.Arguments)
	if err != nil {
		return fmt.Errorf("%w: the original call's amount: %v", approval.ErrAmendmentRefused, err)
	}
	if req.Amount != nil {
		before = &Amount{Units: req.Amount.Units, Currency: req.Amount.Currency}
	}
	after, err := DeriveAmount(tool, args)
	if err != nil {
		return fmt.Errorf("%w: %v", approval.ErrAmendmentRefused, err)
	}
	switch {
	case before == nil && after == nil:
		return nil
	case before == nil || after == nil:
		return fmt.Errorf("%w: the amount cannot be added or removed by an amendment", approval.ErrAmendmentRefused)
	case after.Currency != before.Currency:
		return fmt.Errorf("%w: currency %q differs from the %q the approver was shown", approval.ErrAmendmentRefused, after.Currency, before.Currency)
	case after.Units > before.Units:
		return fmt.Errorf("%w: amount %d %s exceeds the %d %s the approver was shown", approval.ErrAmendmentRefused,
			after.Units, after.Currency, before.Units, before.Currency)
	}
	meta["original_amount"] = map[string]any{"units": before.Units, "currency": before.Currency}
	meta["amount"] = map[string]any{"units": after.Units, "currency": after.Currency}
	return nil
}
