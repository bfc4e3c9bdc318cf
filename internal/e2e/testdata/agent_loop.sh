#!/usr/bin/env bash
# An agent whose only tool is bash (docs/agent-developer.md, "From bash").
#
# Agent env: CHIO_URL, CHIO_KEY, CHIO_CAPABILITY (no bearer token: `chio
# await` reads the agent's own call with a Chio-Proof signed by CHIO_KEY).
# Approver env: APPROVER_KEY, APPROVER_TOKEN. OUT: a directory for outputs.
# Prints "result STEP PHASE CODE" lines for bash_test.go to check.
set -u
: "${OUT:?}" "${APPROVER_KEY:?}" "${APPROVER_TOKEN:?}"

AWAIT_TIMEOUT=60s
OUTPUT=table
ON_PENDING=none

# approver DECISION ID: a human deciding in the background, a little later.
approver() {
	sleep 0.3
	case $1 in
	approve) CHIO_ADMIN_TOKEN=$APPROVER_TOKEN chio approval approve "$2" --key "$APPROVER_KEY" --note "ok from bash" ;;
	deny) CHIO_ADMIN_TOKEN=$APPROVER_TOKEN chio approval deny "$2" --key "$APPROVER_KEY" --reason "not today" ;;
	esac >/dev/null
}

# agent_step NAME CHIO-CALL-ARGS...: the documented loop step,
#   out=$(chio call …) || { [ $? -eq 3 ] && out=$(chio await "$out"); }
# with every exit code recorded. The output lands in $OUT/NAME.out.
agent_step() {
	local name=$1 out rc=0 approver_pid=
	shift
	out=$(chio call "$@" --output "$OUTPUT") || {
		rc=$?
		echo "result $name call $rc"
		if [ "$rc" -eq 3 ]; then
			id=$out
			[ "$OUTPUT" = table ] || id=$(sed -n 's/.*"approval_request_id": *"\([^"]*\)".*/\1/p' <<<"$out")
			if [ "$ON_PENDING" != none ]; then
				approver "$ON_PENDING" "$id" &
				approver_pid=$!
			fi
			out=$(chio await "$id" --timeout "$AWAIT_TIMEOUT" --output "$OUTPUT") && rc=0 || rc=$?
			echo "result $name await $rc"
		fi
	}
	[ "$rc" -ne 0 ] || echo "result $name done 0"
	if [ -n "$approver_pid" ]; then
		wait "$approver_pid"
		echo "result $name approver $?"
	fi
	printf '%s\n' "$out" >"$OUT/$name.out"
}

REFUND='{"customer_id":"cust-9012","amount":450,"currency":"USD"}'
INTENT='{"purpose":"Refund order #8834","max_amount":{"units":450,"currency":"USD"}}'

agent_step echo demo echo --args '{"hello":"bash"}'
ON_PENDING=approve agent_step refund demo issue_refund --args "$REFUND" --intent "$INTENT"
agent_step delete demo delete_file --args '{"path":"/etc/passwd"}'
ON_PENDING=deny agent_step refund_denied demo issue_refund --args "$REFUND" --intent "$INTENT"
AWAIT_TIMEOUT=2s agent_step refund_waiting demo issue_refund --args "$REFUND" --intent "$INTENT"
OUTPUT=json agent_step echo_json demo echo --args '{"hello":"json"}'
OUTPUT=json ON_PENDING=approve agent_step refund_json demo issue_refund --args "$REFUND" --intent "$INTENT"
