package cli

import (
	"encoding/json"
	"fmt"

	"github.com/chiokernel/chio/approval"
)

// amountText is the amount an approver is shown, as the dashboard, Slack
// and email show it: the amount the arguments move, as the kernel read it
// where the tool says the money is; failing that, the agent's own
// max_amount, marked as its word (checked against nothing); "" when the
// request has neither. The currency is escaped (approval_text.go).
func amountText(a *approval.Request) string {
	if a.Amount != nil {
		return fmt.Sprintf("%d %s", a.Amount.Units, shown(a.Amount.Currency))
	}
	var in struct {
		MaxAmount *approval.Amount `json:"max_amount"`
	}
	if len(a.GovernedIntent) == 0 || json.Unmarshal(a.GovernedIntent, &in) != nil || in.MaxAmount == nil {
		return ""
	}
	return fmt.Sprintf("up to %d %s (declared by the agent)", in.MaxAmount.Units, shown(in.MaxAmount.Currency))
}
