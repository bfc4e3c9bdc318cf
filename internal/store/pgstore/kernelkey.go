package pgstore

import (
	"context"
	"errors"
	"fmt"
)

// The kernel key. A database records the public key of the first replica
// that opens it (chio_meta 'kernel_key') and refuses every other: two keys
// would sign two logs nobody can verify as one.
//
// A chiod that made a new kernel.pem and was then refused must know
// whether the database may hold that key: if it may, removing the file
// would leave the database bound to a key nobody has. Open marks the
// failures that came before the key's INSERT was sent (ErrKeyNotRecorded);
// every failure from the INSERT on is left unmarked, because an INSERT
// that committed may still fail on its way back (its answer lost with the
// connection), and then only keeping the key is safe.

// ErrKeyMismatch: the database's log is signed by another kernel key.
var ErrKeyMismatch = errors.New("pgstore: this database's receipts are signed by another kernel key")

// ErrKeyNotRecorded matches (errors.Is) an Open error that came before the
// database could have recorded this replica's kernel key: the DSN, the
// connection, the migrations, or a database that holds another key
// (ErrKeyMismatch). An Open error that does not match it may have come
// after the key was recorded.
var ErrKeyNotRecorded = errors.New("pgstore: the database has not recorded this kernel key")

// keyNotRecorded marks err as ErrKeyNotRecorded, its message unchanged.
type keyNotRecorded struct{ err error }

func (e keyNotRecorded) Error() string      { return e.err.Error() }
func (e keyNotRecorded) Unwrap() error      { return e.err }
func (keyNotRecorded) Is(target error) bool { return target == ErrKeyNotRecorded }

// checkKey records the kernel key in a new database and refuses a replica
// whose key is another.
func (s *Store) checkKey(ctx context.Context) error {
	// A connection first: failing to get one, nothing was sent.
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return keyNotRecorded{fmt.Errorf("pgstore: kernel key: %w", err)}
	}
	defer conn.Release()
	pub := s.key.Public().String()
	var stored string
	err = conn.QueryRow(ctx, `INSERT INTO chio_meta (key, value) VALUES ('kernel_key', $1)
		ON CONFLICT (key) DO UPDATE SET value = chio_meta.value RETURNING value`, pub).Scan(&stored)
	if err != nil {
		// Sent: it may have committed.
		return fmt.Errorf("pgstore: kernel key: %w", err)
	}
	if stored != pub {
		return keyNotRecorded{fmt.Errorf("%w: the database holds %s, this replica's kernel.pem is %s; copy kernel.pem from a replica of this database",
			ErrKeyMismatch, stored, pub)}
	}
	return nil
}
