package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"

	"github.com/chiokernel/chio/internal/canon"
)

// Load reads and parses a policy file. A file that cannot be read is a
// wrapped I/O error (errors.Is(err, fs.ErrNotExist) works); a file that is
// wrong in any way is a *Errors listing every problem.
func Load(path string) (*Policy, error) { return LoadChecked(path, nil) }

// LoadChecked is Load with check run on the opened file's FileInfo before
// anything is read (chiod refuses a policy file other users may write); a
// check's error is returned as is.
func LoadChecked(path string, check func(fs.FileInfo) error) (*Policy, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	defer f.Close()
	if check != nil {
		fi, err := f.Stat()
		if err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
		if err := check(fi); err != nil {
			return nil, err
		}
	}
	// Read one byte past the limit, so an oversized file is refused without
	// being read whole.
	data, err := io.ReadAll(io.LimitReader(f, MaxInputBytes+1))
	if err != nil {
		return nil, fmt.Errorf("policy: read %s: %w", path, err)
	}
	return Parse(data, path)
}

// Parse checks a policy held in memory; source names it in errors (usually
// the file path). The returned Policy is complete: validated, defaulted,
// hashed and indexed.
func Parse(data []byte, source string) (*Policy, error) {
	probs := newProblems(source, nil)
	if len(data) > MaxInputBytes {
		probs.line(0, "the file is larger than the %d MiB limit for a policy", MaxInputBytes>>20)
		return nil, probs.err()
	}
	pos, deep := scanPositions(data)
	probs.pos = pos
	if deep > 0 {
		probs.line(deep, "keys, tables or lists are nested more than %d levels deep", MaxDepth)
		return nil, probs.err()
	}
	tree, line, msg := parseTOML(data)
	if msg != "" {
		probs.line(line, "%s", msg)
		return nil, probs.err()
	}

	p := &Policy{Source: source}
	p.setDefaults()
	d := &decoder{probs: probs}
	d.table(nil, tree, reflect.ValueOf(p).Elem())
	p.deriveDefaults()
	validate(p, probs)
	if err := probs.err(); err != nil {
		return nil, err
	}

	h, err := hash(p)
	if err != nil {
		return nil, fmt.Errorf("policy: %s: hash: %w", source, err)
	}
	p.Hash = h
	p.index = buildIndex(p)
	return p, nil
}

// hash is the hex SHA-256 of the policy's canonical JSON (RFC 8785), taken
// after defaults, so that formatting, comments, key order and spelling a
// default out do not change it, and any change of meaning does.
func hash(p *Policy) (string, error) {
	b, err := canon.Marshal(p)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
