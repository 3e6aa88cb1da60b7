package service

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// serviceMetrics are the service's Prometheus metrics, served at /metrics.
type serviceMetrics struct {
	reg               *prometheus.Registry
	started           prometheus.Counter
	monitorFailures   *prometheus.CounterVec
	monitorFailedJobs prometheus.Counter
	skippedRuns       prometheus.Counter
}

// jobsCollector reports gocrawl_serve_jobs{state} from the database at
// each scrape.
type jobsCollector struct {
	s    *Service
	desc *prometheus.Desc
}

func (c jobsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c jobsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := c.s.db.countByState(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	for _, st := range States {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[st]), string(st))
	}
}

func newServiceMetrics(s *Service) *serviceMetrics {
	m := &serviceMetrics{
		reg: prometheus.NewRegistry(),
		started: prometheus.NewCounter(prometheus.CounterOpts{Name: "gocrawl_serve_jobs_started_total",
			Help: "Job processes started by the service (a resumed job counts again)."}),
		monitorFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gocrawl_serve_monitor_failures_total",
			Help: "Failed monitor checks of finished jobs, by monitor."}, []string{"monitor"}),
		monitorFailedJobs: prometheus.NewCounter(prometheus.CounterOpts{Name: "gocrawl_serve_monitor_failed_jobs_total",
			Help: "Jobs marked failed because their monitors failed (exit status 3)."}),
		skippedRuns: prometheus.NewCounter(prometheus.CounterOpts{Name: "gocrawl_serve_schedule_skipped_runs_total",
			Help: "Schedule runs skipped because the schedule's previous job was still queued or running."}),
	}
	m.reg.MustRegister(m.started, m.monitorFailures, m.monitorFailedJobs, m.skippedRuns,
		jobsCollector{s: s, desc: prometheus.NewDesc("gocrawl_serve_jobs", "Jobs known to the service, by state.", []string{"state"}, nil)})
	return m
}
