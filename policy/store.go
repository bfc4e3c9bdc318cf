package policy

// The [store] table: where chiod keeps its durable state.
//
//	[store]
//	driver  = "postgres"      # "bbolt" (default): one file in data_dir
//	dsn_env = "CHIO_PG_DSN"   # postgres: the environment variable holding the DSN
//
// The DSN carries a password, so the file names the variable, never the
// value. Several chiod replicas on one PostgreSQL database form one service
// and one receipt log (docs/replicas.md). The table is deployment, not
// policy: receipts' policy_hash does not cover it, so replicas that differ
// only in how they reach the database still sign one policy hash.

// Store drivers.
const (
	StoreBbolt    = "bbolt"
	StorePostgres = "postgres"
)

// Store limits.
const (
	MaxStoreCommitters = 64
	MinLeaseSeconds    = 2
	MaxLeaseSeconds    = 3600
)

// StoreConfig is the [store] table.
type StoreConfig struct {
	// Driver is "bbolt" (default) or "postgres".
	Driver string `toml:"driver" json:"driver"`
	// DSNEnv names the environment variable that holds the PostgreSQL
	// connection string (driver = "postgres" only; required there).
	DSNEnv string `toml:"dsn_env" json:"dsn_env,omitempty"`
	// Committers is how many transactions one replica runs at once
	// (postgres); 0 means the store's default.
	Committers int `toml:"committers" json:"committers,omitempty"`
	// LeaseSeconds is how long a replica that stopped heartbeating still
	// counts as alive before its calls in flight are taken over
	// (postgres); 0 means 10.
	LeaseSeconds int `toml:"lease_seconds" json:"lease_seconds,omitempty"`
}

func (s *StoreConfig) setDefaults() { s.Driver = StoreBbolt }

func (v *validator) store() {
	s, base := v.p.Store, k("store")
	switch s.Driver {
	case StoreBbolt:
		if s.DSNEnv != "" || s.Committers != 0 || s.LeaseSeconds != 0 {
			v.at(base, nil, `dsn_env, committers and lease_seconds are settings of driver = "postgres"; driver is "bbolt"`)
		}
		return
	case StorePostgres:
	default:
		v.at(base, k("driver"), `driver = %q: must be "bbolt" (one embedded file, the default) or "postgres" (replicas on one database)`, s.Driver)
		return
	}
	if s.DSNEnv == "" {
		v.at(base, k("dsn_env"), `driver = "postgres" needs dsn_env: the name of the environment variable that holds the connection string (like CHIO_PG_DSN)`)
	} else {
		v.envName(base, "dsn_env", s.DSNEnv, true)
	}
	v.intRange(base, "committers", s.Committers, 0, MaxStoreCommitters)
	if s.LeaseSeconds != 0 {
		v.intRange(base, "lease_seconds", s.LeaseSeconds, MinLeaseSeconds, MaxLeaseSeconds)
	}
}
