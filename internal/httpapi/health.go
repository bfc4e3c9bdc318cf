package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chiokernel/chio/kernel"
)

// Health: GET /healthz says the process is alive (it answers, so it is);
// GET /readyz says whether chiod can take decisions now: the store can
// commit (a failed store answers 503 until it heals), with recovery's
// progress alongside. Load balancers route on /readyz; supervisors restart
// on /healthz. Neither needs a credential, so /readyz says only that the
// store is unavailable; why (a PostgreSQL error may name the host, user and
// database) goes to the server's log.

// Readiness is GET /readyz's answer.
type Readiness struct {
	Status   string                `json:"status"` // ready | unavailable
	Store    string                `json:"store"`  // ok | store unavailable
	Recovery kernel.RecoveryStatus `json:"recovery"`
}

func (s *Server) healthRoutes() {
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "kernel_key": s.cfg.Kernel.PublicKey().String()})
	})
	s.mux.HandleFunc("GET /readyz", s.readyz)
	s.cfg.Metrics.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "chio_store_ready", Help: "1 when the store can commit, 0 while it is failed (and healing).",
		}, func() float64 {
			if s.ready() != nil {
				return 0
			}
			return 1
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "chio_recovery_in_flight", Help: "Calls left in flight by a crash or a store failure that recovery is finishing.",
		}, func() float64 { return float64(s.cfg.Kernel.Recovery().InFlight) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "chio_recovery_failures", Help: "Recovery attempts that failed (retried when the store heals or at restart).",
		}, func() float64 { return float64(s.cfg.Kernel.Recovery().Failed) }),
	)
}

func (s *Server) ready() error {
	if s.cfg.Ready == nil {
		return nil
	}
	return s.cfg.Ready()
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	rd := Readiness{Status: "ready", Store: "ok", Recovery: s.cfg.Kernel.Recovery()}
	status := http.StatusOK
	if err := s.ready(); err != nil {
		rd.Status, rd.Store, status = "unavailable", "store unavailable", http.StatusServiceUnavailable
		s.logNotReady(err)
	} else {
		s.readyLogged.Store(nil)
	}
	writeJSON(w, status, rd)
}

// logNotReady logs why the store cannot commit, once per distinct reason:
// a load balancer probing every few seconds does not flood the log.
func (s *Server) logNotReady(err error) {
	msg := err.Error()
	if last := s.readyLogged.Swap(&msg); last == nil || *last != msg {
		slog.Warn("GET /readyz: store unavailable", "err", msg)
	}
}
