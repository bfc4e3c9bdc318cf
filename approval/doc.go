// Package approval owns the human side of a suspended call: the
// ApprovalRequest a person reviews, the GovernedApprovalToken they sign, the
// BatchApprovalToken of a standing approval, and the rules that decide
// whether a presented token counts — all of them in verify.go.
//
// approval must never import kernel, channels, net/http or a store driver.
package approval
