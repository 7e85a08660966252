package telemetry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
)

// Metric names the pipeline publishes. Alarms and the dashboard refer to these names, so they
// are part of the contract between the functions and constructs/monitoring.
//
// LockTakenOver is counted by the run that takes over a lapsed lock (its owner crashed or
// timed out, and reports nothing), not by the owner that lost it, and only when that run then
// processes the record: a takeover whose own effect fails shows in its log line (tookOver)
// but not in the metric.
const (
	MetricProcessed         = "Processed"         // consumer: handler ran and completed
	MetricDuplicate         = "Duplicate"         // consumer: already completed, side effect skipped
	MetricInFlightElsewhere = "InFlightElsewhere" // consumer: another live owner holds the lock
	MetricFailed            = "Failed"            // consumer: record reported as a batch item failure
	MetricLockTakenOver     = "LockTakenOver"     // consumer: this run took over a lapsed lock and processed the record (see above)
	MetricInvalidInput      = "InvalidInput"      // consumer: bad body, missing key, oversize, key reused for other content
	MetricDeadLettered      = "DeadLettered"      // consumer: moved to the DLQ at once (can never succeed)
	MetricResultDropped     = "ResultDropped"     // consumer: effect's result too large to store; record completed without it
	MetricProbeCompleted    = "ProbeCompleted"    // consumer: a probe (verify, heartbeat) completed its record, duplicates included
	MetricDispatched        = "Dispatched"        // dispatcher: messages accepted by SQS
	MetricSendFailed        = "SendFailed"        // dispatcher: entries still unsent after retries
)

// DimensionService is the single dimension every metric carries; its value is the service
// name given to NewMetrics, which the functions take from ServiceFromEnv.
const DimensionService = "Service"

// EnvFunctionName is the variable Lambda sets to the function's name in every execution
// environment.
const EnvFunctionName = "AWS_LAMBDA_FUNCTION_NAME"

// ServiceFromEnv is the service name a function publishes under (DimensionService) and logs:
// its Lambda function name (EnvFunctionName), or fallback where that is unset or empty (a
// local run, a test). The function name is what constructs/monitoring's dashboard charts by,
// and it keeps deployments apart: under one constant name every consumer's counts would
// merge into one series.
func ServiceFromEnv(lookup func(string) (string, bool), fallback string) string {
	if name, ok := lookup(EnvFunctionName); ok && name != "" {
		return name
	}
	return fallback
}

// UnitCount is the CloudWatch unit of every counter.
const UnitCount = "Count"

// EMF and CloudWatch limits the encoder enforces.
const (
	MaxMetricsPerDirective = 100  // EMF: at most 100 metrics in one MetricDirective
	maxNameLen             = 255  // EMF metric name and CloudWatch namespace length
	maxDimensionValueLen   = 1024 // CloudWatch dimension value length
)

// ConsumerMetrics lists the counters the consumer registers so that each is published, as 0
// when idle, in every flush. MetricResultDropped is not among them: it can only count when the
// Guard stores results, and the consumer registers it then (see StoreResultMetrics).
// MetricProbeCompleted is not among them either, on purpose: it is published only by a flush
// that counted a probe, so "no probe completed" is missing data, which the heartbeat alarm
// treats as breaching, and a consumer that never sees a probe adds no metric to the bill.
func ConsumerMetrics() []string {
	return []string{MetricProcessed, MetricDuplicate, MetricInFlightElsewhere, MetricFailed,
		MetricLockTakenOver, MetricInvalidInput, MetricDeadLettered}
}

// StoreResultMetrics lists the counters the consumer registers in addition when its Guard
// stores the effect's result (idempotency.Config.StoreResult).
func StoreResultMetrics() []string {
	return []string{MetricResultDropped}
}

// DispatcherMetrics lists the counters the dispatcher registers.
func DispatcherMetrics() []string {
	return []string{MetricDispatched, MetricSendFailed}
}

// Errors returned (wrapped) by Flush.
var (
	ErrInvalidMetricName = errors.New("invalid metric name")
	ErrInvalidNamespace  = errors.New("invalid metrics namespace")
	ErrInvalidService    = errors.New("invalid metrics service")
)

// Metrics accumulates counters between flushes and writes them as one CloudWatch Embedded
// Metric Format line. It is safe for concurrent use: records processed in parallel Add to it
// and the invocation Flushes once at the end.
type Metrics struct {
	namespace string
	service   string
	now       func() time.Time // tests pin the clock through this

	mu         sync.Mutex
	order      []string         // first-seen order, so the output lists names stably
	counts     map[string]int64 // current values of every name in order
	registered map[string]bool  // names kept (as 0) across flushes
	invalid    []string         // names rejected since the last flush, reported by Flush
}

// NewMetrics returns counters published under namespace with the dimension Service=service.
// Both are checked by Flush (which has an error to return): namespace 1-255 characters of
// [0-9A-Za-z._/#: -], not starting with "AWS/"; service 1-1024 characters.
func NewMetrics(namespace, service string) *Metrics {
	return &Metrics{
		namespace:  namespace,
		service:    service,
		now:        time.Now,
		counts:     map[string]int64{},
		registered: map[string]bool{},
	}
}

// Register declares counters that every Flush publishes, as 0 when nothing was added, so an
// alarm can tell "nothing happened" from "the function stopped reporting". Invalid names are
// rejected and reported by the next Flush.
func (m *Metrics) Register(names ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, name := range names {
		if !m.accept(name) {
			continue
		}
		m.registered[name] = true
	}
}

// Add adds n to the counter name. A name that was not registered is published by the next
// Flush only (it is forgotten by the reset). Invalid names are rejected and reported by the
// next Flush: Add has no error to return, and a metric must not vanish without a trace.
func (m *Metrics) Add(name string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.accept(name) {
		return
	}
	m.counts[name] += int64(n)
}

// accept checks name and makes sure it has a slot; m.mu must be held.
func (m *Metrics) accept(name string) bool {
	if err := validMetricName(name); err != nil {
		if !slices.Contains(m.invalid, name) {
			m.invalid = append(m.invalid, name)
		}
		return false
	}
	if _, ok := m.counts[name]; !ok {
		m.counts[name] = 0
		m.order = append(m.order, name)
	}
	return true
}

func validMetricName(name string) error {
	switch {
	case name == "":
		return errors.New("empty")
	case len(name) > maxNameLen:
		return fmt.Errorf("longer than %d characters", maxNameLen)
	case name == "_aws" || name == DimensionService:
		// Metric values share the root object with the metadata and the dimension.
		return fmt.Errorf("reserved key")
	}
	return nil
}

// Flush writes every counter (registered ones even when 0) as ONE EMF JSON line to w, in a
// single Write, and resets the counters. With more than 100 counters the line carries several
// metric directives (the EMF limit per directive) sharing the same root values. It writes
// nothing when there is no counter at all.
//
// Errors: ErrInvalidNamespace / ErrInvalidService (nothing written, nothing reset);
// ErrInvalidMetricName for names rejected by Add or Register since the last flush (the valid
// counters are still written); a write error (the counters are kept for the next Flush).
func (m *Metrics) Flush(w io.Writer) error {
	if err := ValidateNamespace(m.namespace); err != nil {
		return fmt.Errorf("flush metrics: %w %q: %w", ErrInvalidNamespace, m.namespace, err)
	}
	if m.service == "" || len(m.service) > maxDimensionValueLen {
		return fmt.Errorf("flush metrics: %w %q: want 1 to %d characters",
			ErrInvalidService, m.service, maxDimensionValueLen)
	}

	names, values, invalid := m.snapshot()
	var errs []error
	if len(invalid) > 0 {
		for _, name := range invalid {
			errs = append(errs, fmt.Errorf("%w %q: %w", ErrInvalidMetricName, name, validMetricName(name)))
		}
	}
	if len(names) > 0 {
		line, err := m.encode(names, values)
		if err == nil {
			_, err = w.Write(line)
		}
		if err != nil {
			m.restore(names, values)
			errs = append(errs, fmt.Errorf("write EMF line: %w", err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("flush metrics: %w", errors.Join(errs...))
	}
	return nil
}

// snapshot takes the current values and resets them, keeping registered names as 0.
func (m *Metrics) snapshot() (names []string, values []int64, invalid []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	names = make([]string, len(m.order))
	values = make([]int64, len(m.order))
	copy(names, m.order)
	for i, name := range names {
		values[i] = m.counts[name]
	}
	invalid, m.invalid = m.invalid, nil
	m.order = m.order[:0]
	clear(m.counts)
	for _, name := range names {
		if m.registered[name] {
			m.counts[name] = 0
			m.order = append(m.order, name)
		}
	}
	return names, values, invalid
}

// restore adds a snapshot back after a failed write so the counts reach the next Flush.
func (m *Metrics) restore(names []string, values []int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, name := range names {
		if _, ok := m.counts[name]; !ok {
			m.order = append(m.order, name)
		}
		m.counts[name] += values[i]
	}
}

type emfMetric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type emfDirective struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []emfMetric `json:"Metrics"`
}

type emfMetadata struct {
	Timestamp         int64          `json:"Timestamp"`
	CloudWatchMetrics []emfDirective `json:"CloudWatchMetrics"`
}

func (m *Metrics) encode(names []string, values []int64) ([]byte, error) {
	root := make(map[string]any, len(names)+2)
	var directives []emfDirective
	for chunk := range slices.Chunk(names, MaxMetricsPerDirective) {
		d := emfDirective{
			Namespace:  m.namespace,
			Dimensions: [][]string{{DimensionService}},
			Metrics:    make([]emfMetric, len(chunk)),
		}
		for i, name := range chunk {
			d.Metrics[i] = emfMetric{Name: name, Unit: UnitCount}
		}
		directives = append(directives, d)
	}
	for i, name := range names {
		root[name] = values[i]
	}
	root[DimensionService] = m.service
	root["_aws"] = emfMetadata{Timestamp: m.now().UnixMilli(), CloudWatchMetrics: directives}
	line, err := json.Marshal(root)
	if err != nil {
		return nil, fmt.Errorf("encode EMF: %w", err)
	}
	return append(line, '\n'), nil
}

// ValidateNamespace reports why ns is not a CloudWatch namespace Flush would publish under,
// or nil. Configuration loaders call it at start, so a bad namespace fails the configuration
// instead of silently losing every metric at Flush.
func ValidateNamespace(ns string) error {
	switch {
	case ns == "":
		return errors.New("empty")
	case len(ns) > maxNameLen:
		return fmt.Errorf("longer than %d characters", maxNameLen)
	case strings.HasPrefix(ns, "AWS/"):
		return errors.New(`the "AWS/" prefix is reserved for AWS services`)
	}
	for _, r := range ns {
		ok := r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' ||
			strings.ContainsRune("._-/#: ", r)
		if !ok {
			return fmt.Errorf("character %q not allowed (want 0-9A-Za-z . - _ / # : space)", r)
		}
	}
	return nil
}
