package receipt

// The final receipt of an approval chain must be for the call the approver
// saw (verify_log.go links it to its incomplete receipt by ids only). The
// approver's token is bound to the incomplete receipt's parameter_hash and
// subject; a final receipt for other arguments, another tool, agent or
// capability would otherwise borrow that approval.

// sameCall checks what the kernel never changes across a chain (it writes
// both receipts from one call record, kernel.newReceipt): subject, tool,
// capability; and that parameter_hash changes only by a signed amendment.
func (v *verifier) sameCall(line int, rc *Receipt, l *chainLink) {
	s := l.rc
	if rc.Subject != s.Subject {
		v.problem(line, rc, "subject %s differs from %s on incomplete receipt %s", rc.Subject, s.Subject, s.ID)
	}
	if rc.ToolServer != s.ToolServer || rc.ToolName != s.ToolName {
		v.problem(line, rc, "tool %s/%s differs from %s/%s on incomplete receipt %s", rc.ToolServer, rc.ToolName, s.ToolServer, s.ToolName, s.ID)
	}
	if rc.CapabilityID != s.CapabilityID {
		v.problem(line, rc, "capability_id %s differs from %s on incomplete receipt %s", rc.CapabilityID, s.CapabilityID, s.ID)
	}
	// An allow the approver amended says so (kernel/amend.go): amended,
	// and the hashes before and after. approval() then requires the
	// deciding token to carry amended_arguments.
	if metaStr(rc, "amended") == "true" {
		if metaStr(rc, "original_parameter_hash") != s.ParameterHash || metaStr(rc, "amended_parameter_hash") != rc.ParameterHash {
			v.problem(line, rc, "amended: original_parameter_hash %q and amended_parameter_hash %q are not incomplete receipt %s's %s and this receipt's %s",
				metaStr(rc, "original_parameter_hash"), metaStr(rc, "amended_parameter_hash"), s.ID, s.ParameterHash, rc.ParameterHash)
		}
		return
	}
	if rc.ParameterHash == s.ParameterHash {
		return
	}
	// A deny on resume after an accepted amendment (a guard refused the
	// amended call) carries the amended hash without the amended flags;
	// nothing ran. approval() requires its deciding token to amend.
	if rc.Decision.Verdict != Deny || metaStr(rc, "approval_token_id") == "" {
		v.problem(line, rc, "parameter_hash %s differs from %s on incomplete receipt %s, and the receipt is not marked amended", rc.ParameterHash, s.ParameterHash, s.ID)
	}
}

// amendment checks the deciding token against the final receipt: a changed
// parameter_hash needs a token that amends, and an allow under a token that
// amends must say it was amended.
func (v *verifier) amendment(f final, tok tokenView) {
	amends := len(tok.AmendedArguments) > 0
	if f.link != nil && f.rc.ParameterHash != f.link.params && !amends {
		v.problem(f.line, f.rc, "parameter_hash %s differs from %s on incomplete receipt %s, but the deciding token %s carries no amended_arguments",
			f.rc.ParameterHash, f.link.params, f.link.id, tok.ID)
	}
	if metaStr(f.rc, "amended") == "true" && !amends {
		v.problem(f.line, f.rc, "receipt is marked amended but the deciding token %s carries no amended_arguments", tok.ID)
	}
	if amends && f.rc.Decision.Verdict == Allow && metaStr(f.rc, "amended") != "true" {
		v.problem(f.line, f.rc, "the deciding token %s carries amended_arguments but the allow receipt is not marked amended", tok.ID)
	}
}
