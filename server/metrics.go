package server

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/store"
)

// metrics are the gateway's Prometheus metrics, in a registry of its own so
// that two engines in one test process do not collide. The engine counts
// calls through them (engine.Options.Calls), built before it; the gauges
// of its sessions are added once it is built (watchEngine).
type metrics struct {
	registry  *prometheus.Registry
	calls     *prometheus.CounterVec
	roundTrip prometheus.Histogram
}

func newMetrics(st *store.Store) *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolgate_calls_total",
			Help: "Calls by the status they reached since the gateway started (pending counts every call created).",
		}, []string{"status"}),
		roundTrip: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "toolgate_call_roundtrip_seconds",
			Help:    "Time from a call's creation to its answer being stored, for answered calls.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
		}),
	}
	m.registry.MustRegister(
		m.calls, m.roundTrip,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "toolgate_db_transactions_total",
			Help: "Write transactions committed (or attempted) since start; one carries many operations under load.",
		}, func() float64 { return float64(st.Transactions()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "toolgate_db_write_operations_total",
			Help: "Write operations run since start.",
		}, func() float64 { return float64(st.Operations()) }),
	)
	for _, s := range []toolgate.CallStatus{toolgate.StatusPending, toolgate.StatusCompleted, toolgate.StatusFailed,
		toolgate.StatusTimedOut, toolgate.StatusCancelled, toolgate.StatusDenied} {
		m.calls.WithLabelValues(string(s))
	}
	return m
}

// watchEngine adds the gauges of the engine's sessions.
func (m *metrics) watchEngine(e *engine.Engine) {
	m.registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "toolgate_sessions_online",
			Help: "Open sessions that hold a stream or polled recently.",
		}, func() float64 {
			_, online := e.SessionCounts()
			return float64(online)
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "toolgate_sessions_open",
			Help: "Sessions neither closed nor expired.",
		}, func() float64 {
			open, _ := e.SessionCounts()
			return float64(open)
		}),
	)
}

// CallCreated implements engine.CallCounter.
func (m *metrics) CallCreated() { m.calls.WithLabelValues(string(toolgate.StatusPending)).Inc() }

// CallEnded implements engine.CallCounter.
func (m *metrics) CallEnded(status toolgate.CallStatus, created, now time.Time) {
	m.calls.WithLabelValues(string(status)).Inc()
	if !created.IsZero() && (status == toolgate.StatusCompleted || status == toolgate.StatusFailed) {
		m.roundTrip.Observe(now.Sub(created).Seconds())
	}
}

// handler serves /metrics in the Prometheus text format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}
