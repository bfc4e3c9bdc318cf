package policy

import "strings"

// Delivery semantics a server or tool may declare (SPEC §9). The empty
// string means "the default" on a server and "inherit" on a tool.
const (
	DeliveryAtLeastOnce = "at_least_once"
	DeliveryAtMostOnce  = "at_most_once"
)

var deliveryModes = []string{DeliveryAtLeastOnce, DeliveryAtMostOnce}

// delivery checks delivery and retry_deadline_seconds of a server or a
// tool (base is its table; owner names it in messages).
func (v *validator) delivery(base []string, owner, delivery string, retryDeadline int) {
	switch delivery {
	case "", DeliveryAtLeastOnce, DeliveryAtMostOnce:
	default:
		hint := ""
		if s := strings.ReplaceAll(strings.ToLower(delivery), "-", "_"); s == DeliveryAtLeastOnce || s == DeliveryAtMostOnce {
			hint = " (did you mean \"" + s + "\"?)"
		}
		v.at(base, k("delivery"), "%s: delivery = %q: use \"%s\" (re-sent after a crash; the tool must deduplicate by Idempotency-Key) or \"%s\" (never re-sent)%s",
			owner, delivery, deliveryModes[0], deliveryModes[1], hint)
	}
	v.intRange(base, "retry_deadline_seconds", retryDeadline, 0, MaxRetryDeadlineSeconds)
}
