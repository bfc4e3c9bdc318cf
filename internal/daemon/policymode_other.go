//go:build !unix

package daemon

import "github.com/chiokernel/chio/policy"

// loadPolicy: outside Unix, modes do not say who may write a file (access
// is by ACL), so the policy file's ACL is the operator's to set.
func loadPolicy(path string) (*policy.Policy, error) { return policy.Load(path) }
