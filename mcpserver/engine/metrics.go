package engine

import (
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/codecell/codecell/executor"
)

// Metrics are the server's Prometheus collectors, registered on a
// registry of their own so that several servers can live in one process.
// The surface serves them, counts its own refusals (Refused) and adds
// its collectors (Register).
type Metrics struct {
	reg *prometheus.Registry

	executions     *prometheus.CounterVec
	duration       prometheus.Histogram
	queueWait      prometheus.Histogram
	toolCalls      *prometheus.CounterVec
	findings       *prometheus.CounterVec
	storeLatency   *prometheus.HistogramVec
	refusals       *prometheus.CounterVec
	bytesToModel   prometheus.Counter
	bytesFromTools prometheus.Counter

	sessions        prometheus.Gauge
	vaultBytes      prometheus.Gauge
	sessionsEvicted *prometheus.CounterVec
}

// toolCallsMetric counts tool calls by tool and status.
const toolCallsMetric = "codecell_tool_calls_total"

func newMetrics(exec *executor.Executor) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		executions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "codecell_executions_total",
			Help: "Programs run, by status and error kind.",
		}, []string{"status", "kind"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "codecell_execution_duration_seconds",
			Help:    "Wall-clock time of a run, from its start to its record.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "codecell_queue_wait_seconds",
			Help:    "Time a run waited for a free VM.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: toolCallsMetric,
			Help: "Tool calls, from programs and direct mode, by tool and status (ok or an error code).",
		}, []string{"tool", "status"}),
		findings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "codecell_filter_findings_total",
			Help: "Sensitive values the output filter found, by class.",
		}, []string{"class"}),
		storeLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "codecell_store_operation_seconds",
			Help:    "Latency of the server's store operations, by operation.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 4, 10),
		}, []string{"op"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "codecell_refusals_total",
			Help: "Requests refused by a limit, by limit.",
		}, []string{"limit"}),
		bytesToModel: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "codecell_bytes_to_model_total",
			Help: "Bytes of results and logs returned to the model.",
		}),
		bytesFromTools: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "codecell_bytes_from_tools_total",
			Help: "Bytes programs received from tools.",
		}),
	}
	m.sessions = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "codecell_sessions",
		Help: "Sessions whose state (token vault, ledger) is held, at the last sweep.",
	})
	m.vaultBytes = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "codecell_vault_bytes",
		Help: "Bytes held by all sessions' token vaults, at the last sweep.",
	})
	m.sessionsEvicted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "codecell_sessions_evicted_total",
		Help: "Session states dropped before their session ended, by reason (idle, per_principal, principal_vault_bytes, total_vault_bytes).",
	}, []string{"reason"})
	pool := func(name, help string, f func(executor.Stats) int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
			return float64(f(exec.Stats()))
		})
	}
	m.reg.MustRegister(
		m.executions, m.duration, m.queueWait, m.toolCalls, m.findings,
		m.storeLatency, m.refusals, m.bytesToModel, m.bytesFromTools,
		m.sessions, m.vaultBytes, m.sessionsEvicted,
		pool("codecell_pool_size", "Programs that may run at once.", func(s executor.Stats) int { return s.Size }),
		pool("codecell_pool_in_use", "Programs running now.", func(s executor.Stats) int { return s.Running }),
		pool("codecell_pool_ready", "VMs prepared for the next runs.", func(s executor.Stats) int { return s.Ready }),
		pool("codecell_pool_long_in_use", "Programs running now past the default deadline; they never take the reserved slots.", func(s executor.Stats) int { return s.Long }),
		pool("codecell_pool_queued", "Programs waiting for a slot of the pool.", func(s executor.Stats) int { return s.Queued }),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// observeRun records a finished run.
func (m *Metrics) observeRun(res *executor.Result) {
	kind := ""
	if res.Error != nil {
		kind = string(res.Error.Kind)
	}
	m.executions.WithLabelValues(string(res.Status), kind).Inc()
	m.duration.Observe(res.Telemetry.DurationMS / 1000)
	m.queueWait.Observe(res.Telemetry.QueueWaitMS / 1000)
	m.bytesFromTools.Add(float64(res.Telemetry.BytesFromTools))
}

// observeSessions records what the last sweep of session state kept.
func (m *Metrics) observeSessions(count, vaultBytes int) {
	m.sessions.Set(float64(count))
	m.vaultBytes.Set(float64(vaultBytes))
}

// ObserveStore records the latency of one store operation.
func (m *Metrics) ObserveStore(op string, d time.Duration) {
	m.storeLatency.WithLabelValues(op).Observe(d.Seconds())
}

// Handler serves the collectors in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// HandlerFor serves the metrics with the series of
// codecell_tool_calls_total of only the tools for which visible is true:
// a principal whose toolset hides a tool does not learn its name, nor how
// often the others call it, from /metrics (issue 19, attack9's D8; the
// third round's L7 did the same for /readyz).
func (m *Metrics) HandlerFor(visible func(tool string) bool) http.Handler {
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := m.reg.Gather()
		for _, mf := range mfs {
			if mf.GetName() != toolCallsMetric {
				continue
			}
			mf.Metric = slices.DeleteFunc(mf.Metric, func(s *dto.Metric) bool {
				for _, l := range s.GetLabel() {
					if l.GetName() == "tool" {
						return !visible(l.GetValue())
					}
				}
				return false
			})
		}
		return mfs, err
	})
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{Registry: m.reg})
}

// Refused counts a request refused by limit.
func (m *Metrics) Refused(limit string) { m.refusals.WithLabelValues(limit).Inc() }

// SessionEvicted counts a session ended before its client ended it, by
// reason, as the engine counts the session states it drops.
func (m *Metrics) SessionEvicted(reason string) { m.sessionsEvicted.WithLabelValues(reason).Inc() }

// Register adds collectors of the surface's own.
func (m *Metrics) Register(cs ...prometheus.Collector) { m.reg.MustRegister(cs...) }
