package telemetry_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/functions/telemetry"
)

// emfLine is an EMF log line as CloudWatch reads it.
type emfLine struct {
	AWS struct {
		Timestamp         int64 `json:"Timestamp"`
		CloudWatchMetrics []struct {
			Namespace  string     `json:"Namespace"`
			Dimensions [][]string `json:"Dimensions"`
			Metrics    []struct {
				Name string `json:"Name"`
				Unit string `json:"Unit"`
			} `json:"Metrics"`
		} `json:"CloudWatchMetrics"`
	} `json:"_aws"`
	root map[string]json.RawMessage
}

// parseEMF decodes output that must be exactly one EMF line and checks the parts every line
// must get right: namespace, the Service dimension and its value, units, the per-directive
// limit, and that each declared metric has a numeric root value. It returns name -> value.
func parseEMF(t *testing.T, out, namespace, service string) (emfLine, map[string]int64) {
	t.Helper()
	if !strings.HasSuffix(out, "\n") || strings.Count(out, "\n") != 1 {
		t.Fatalf("want exactly one newline-terminated line, got %q", out)
	}
	var line emfLine
	if err := json.Unmarshal([]byte(out), &line); err != nil {
		t.Fatalf("not JSON: %v: %s", err, out)
	}
	if err := json.Unmarshal([]byte(out), &line.root); err != nil {
		t.Fatal(err)
	}
	var svc string
	if err := json.Unmarshal(line.root["Service"], &svc); err != nil || svc != service {
		t.Errorf("Service = %s, want %q", line.root["Service"], service)
	}
	if len(line.AWS.CloudWatchMetrics) == 0 {
		t.Fatalf("no CloudWatchMetrics directive: %s", out)
	}
	values := map[string]int64{}
	for i, d := range line.AWS.CloudWatchMetrics {
		if d.Namespace != namespace {
			t.Errorf("directive %d namespace = %q, want %q", i, d.Namespace, namespace)
		}
		if len(d.Dimensions) != 1 || !slices.Equal(d.Dimensions[0], []string{"Service"}) {
			t.Errorf("directive %d dimensions = %v, want [[Service]]", i, d.Dimensions)
		}
		if n := len(d.Metrics); n == 0 || n > telemetry.MaxMetricsPerDirective {
			t.Errorf("directive %d has %d metrics, want 1..100", i, n)
		}
		for _, m := range d.Metrics {
			if m.Unit != "Count" {
				t.Errorf("metric %s unit = %q", m.Name, m.Unit)
			}
			if _, dup := values[m.Name]; dup {
				t.Errorf("metric %s declared twice", m.Name)
			}
			var v int64
			if err := json.Unmarshal(line.root[m.Name], &v); err != nil {
				t.Errorf("metric %s root value %s: %v", m.Name, line.root[m.Name], err)
			}
			values[m.Name] = v
		}
	}
	return line, values
}

func TestFlushWritesOneEMFLine(t *testing.T) {
	tests := []struct {
		name     string
		register []string
		adds     map[string][]int
		want     map[string]int64
	}{
		{
			name:     "registered counters, zeros included",
			register: telemetry.ConsumerMetrics(),
			adds:     map[string][]int{telemetry.MetricProcessed: {1, 1, 1}, telemetry.MetricFailed: {2}},
			want: map[string]int64{"Processed": 3, "Duplicate": 0, "InFlightElsewhere": 0,
				"Failed": 2, "LockTakenOver": 0, "InvalidInput": 0, "DeadLettered": 0},
		},
		{
			name:     "consumer storing results",
			register: append(telemetry.ConsumerMetrics(), telemetry.StoreResultMetrics()...),
			adds:     map[string][]int{telemetry.MetricResultDropped: {1}},
			want: map[string]int64{"Processed": 0, "Duplicate": 0, "InFlightElsewhere": 0,
				"Failed": 0, "LockTakenOver": 0, "InvalidInput": 0, "DeadLettered": 0, "ResultDropped": 1},
		},
		{
			name: "unregistered counter added",
			adds: map[string][]int{telemetry.MetricDispatched: {10, 5}},
			want: map[string]int64{"Dispatched": 15},
		},
		{
			name:     "registered and ad hoc together",
			register: telemetry.DispatcherMetrics(),
			adds:     map[string][]int{"Custom": {0}, telemetry.MetricSendFailed: {1}},
			want:     map[string]int64{"Dispatched": 0, "SendFailed": 1, "Custom": 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := telemetry.NewMetrics("IdempotentSQS", "consumer")
			m.Register(tt.register...)
			for name, ns := range tt.adds {
				for _, n := range ns {
					m.Add(name, n)
				}
			}
			var buf bytes.Buffer
			before := time.Now().UnixMilli()
			if err := m.Flush(&buf); err != nil {
				t.Fatal(err)
			}
			after := time.Now().UnixMilli()
			line, got := parseEMF(t, buf.String(), "IdempotentSQS", "consumer")
			if !maps.Equal(got, tt.want) {
				t.Errorf("values = %v, want %v", got, tt.want)
			}
			if ts := line.AWS.Timestamp; ts < before || ts > after {
				t.Errorf("Timestamp %d not within [%d, %d] (epoch milliseconds)", ts, before, after)
			}
		})
	}
}

func TestFlushResets(t *testing.T) {
	m := telemetry.NewMetrics("NS", "svc")
	m.Register(telemetry.MetricProcessed)
	m.Add(telemetry.MetricProcessed, 4)
	m.Add("AdHoc", 1)
	var first, second bytes.Buffer
	if err := m.Flush(&first); err != nil {
		t.Fatal(err)
	}
	if err := m.Flush(&second); err != nil {
		t.Fatal(err)
	}
	_, v1 := parseEMF(t, first.String(), "NS", "svc")
	_, v2 := parseEMF(t, second.String(), "NS", "svc")
	if want := map[string]int64{"Processed": 4, "AdHoc": 1}; !maps.Equal(v1, want) {
		t.Errorf("first flush %v, want %v", v1, want)
	}
	// The registered counter stays, at zero; the ad hoc one is forgotten.
	if want := map[string]int64{"Processed": 0}; !maps.Equal(v2, want) {
		t.Errorf("second flush %v, want %v", v2, want)
	}
}

func TestFlushWithoutCountersWritesNothing(t *testing.T) {
	var buf bytes.Buffer
	if err := telemetry.NewMetrics("NS", "svc").Flush(&buf); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Errorf("wrote %q, want nothing", buf.String())
	}
}

func TestFlushSplitsDirectivesAt100Metrics(t *testing.T) {
	m := telemetry.NewMetrics("NS", "svc")
	want := map[string]int64{}
	for i := range 250 {
		name := fmt.Sprintf("M%03d", i)
		m.Register(name)
		m.Add(name, i)
		want[name] = int64(i)
	}
	var buf bytes.Buffer
	if err := m.Flush(&buf); err != nil {
		t.Fatal(err)
	}
	line, got := parseEMF(t, buf.String(), "NS", "svc")
	if n := len(line.AWS.CloudWatchMetrics); n != 3 {
		t.Errorf("got %d directives, want 3 (100+100+50)", n)
	}
	if !maps.Equal(got, want) {
		t.Errorf("values differ: got %d metrics, want %d", len(got), len(want))
	}
}

func TestFlushErrors(t *testing.T) {
	long := strings.Repeat("x", 256)
	tests := []struct {
		name       string
		namespace  string
		service    string
		names      []string // Added with 1
		wantIs     error
		wantMsg    []string
		wantValues map[string]int64 // nil: nothing written
	}{
		{name: "empty namespace", namespace: "", service: "svc", names: []string{"A"},
			wantIs: telemetry.ErrInvalidNamespace, wantMsg: []string{`invalid metrics namespace "": empty`}},
		{name: "reserved namespace", namespace: "AWS/Lambda", service: "svc", names: []string{"A"},
			wantIs: telemetry.ErrInvalidNamespace, wantMsg: []string{`"AWS/" prefix is reserved`}},
		{name: "namespace too long", namespace: long, service: "svc", names: []string{"A"},
			wantIs: telemetry.ErrInvalidNamespace, wantMsg: []string{"longer than 255 characters"}},
		{name: "namespace bad character", namespace: "Idem{SQS}", service: "svc", names: []string{"A"},
			wantIs: telemetry.ErrInvalidNamespace, wantMsg: []string{`character '{' not allowed`}},
		{name: "empty service", namespace: "NS", service: "", names: []string{"A"},
			wantIs: telemetry.ErrInvalidService, wantMsg: []string{`invalid metrics service "": want 1 to 1024 characters`}},
		{name: "service too long", namespace: "NS", service: strings.Repeat("s", 1025), names: []string{"A"},
			wantIs: telemetry.ErrInvalidService, wantMsg: []string{"want 1 to 1024 characters"}},
		{name: "invalid metric names, valid ones still written", namespace: "NS", service: "svc",
			names:  []string{"A", "", "Service", "_aws", long},
			wantIs: telemetry.ErrInvalidMetricName,
			wantMsg: []string{`invalid metric name "": empty`, `invalid metric name "Service": reserved key`,
				`invalid metric name "_aws": reserved key`, "longer than 255 characters"},
			wantValues: map[string]int64{"A": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := telemetry.NewMetrics(tt.namespace, tt.service)
			for _, n := range tt.names {
				m.Add(n, 1)
			}
			var buf bytes.Buffer
			err := m.Flush(&buf)
			if !errors.Is(err, tt.wantIs) {
				t.Fatalf("Flush error = %v, want %v", err, tt.wantIs)
			}
			for _, msg := range tt.wantMsg {
				if !strings.Contains(err.Error(), msg) {
					t.Errorf("error %q does not contain %q", err, msg)
				}
			}
			if tt.wantValues == nil {
				if buf.Len() != 0 {
					t.Errorf("wrote %q despite the error", buf.String())
				}
				return
			}
			if _, got := parseEMF(t, buf.String(), tt.namespace, tt.service); !maps.Equal(got, tt.wantValues) {
				t.Errorf("values %v, want %v", got, tt.wantValues)
			}
			// Reported once: the next flush is clean.
			if err := m.Flush(&bytes.Buffer{}); err != nil {
				t.Errorf("second Flush: %v", err)
			}
		})
	}
}

func TestRegisterRejectsInvalidName(t *testing.T) {
	m := telemetry.NewMetrics("NS", "svc")
	m.Register("Service", "Ok")
	err := m.Flush(&bytes.Buffer{})
	if !errors.Is(err, telemetry.ErrInvalidMetricName) || !strings.Contains(err.Error(), `"Service"`) {
		t.Fatalf("Flush error = %v, want invalid metric name \"Service\"", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("stdout closed") }

func TestFlushKeepsCountsWhenWriteFails(t *testing.T) {
	m := telemetry.NewMetrics("NS", "svc")
	m.Add("A", 2)
	err := m.Flush(failingWriter{})
	if err == nil || !strings.Contains(err.Error(), "write EMF line: stdout closed") {
		t.Fatalf("Flush error = %v, want the write error", err)
	}
	m.Add("A", 3)
	var buf bytes.Buffer
	if err := m.Flush(&buf); err != nil {
		t.Fatal(err)
	}
	if _, got := parseEMF(t, buf.String(), "NS", "svc"); got["A"] != 5 {
		t.Errorf("A = %d, want 5 (2 kept from the failed flush + 3)", got["A"])
	}
}

// syncBuffer serialises writes the way os.Stdout does for one Write call.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func TestConcurrentAddAndFlushLoseNothing(t *testing.T) {
	const workers, adds = 8, 500
	m := telemetry.NewMetrics("NS", "svc")
	m.Register(telemetry.MetricProcessed, telemetry.MetricFailed)
	out := &syncBuffer{}

	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range adds {
				m.Add(telemetry.MetricProcessed, 1)
				if i%5 == 0 {
					m.Add(telemetry.MetricFailed, 2)
				}
				if w == 0 && i%50 == 0 {
					if err := m.Flush(out); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	if err := m.Flush(out); err != nil {
		t.Fatal(err)
	}

	totals := map[string]int64{}
	lines := strings.SplitAfter(out.buf.String(), "\n")
	for _, l := range lines[:len(lines)-1] {
		_, v := parseEMF(t, l, "NS", "svc")
		for k, n := range v {
			totals[k] += n
		}
	}
	want := map[string]int64{"Processed": workers * adds, "Failed": workers * (adds / 5) * 2}
	if !maps.Equal(totals, want) {
		t.Errorf("sum over %d flushes = %v, want %v", len(lines)-1, totals, want)
	}
}

// Lambda always sets AWS_LAMBDA_FUNCTION_NAME; unset or empty means a local run or a test.
func TestServiceFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "orders-Consumer-1A2B"}, "orders-Consumer-1A2B"},
		{map[string]string{"AWS_LAMBDA_FUNCTION_NAME": ""}, "consumer"},
		{map[string]string{}, "consumer"},
	} {
		lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
		if got := telemetry.ServiceFromEnv(lookup, "consumer"); got != tc.want {
			t.Errorf("ServiceFromEnv(%v) = %q, want %q", tc.env, got, tc.want)
		}
	}
}
