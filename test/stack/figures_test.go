package stack

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/constructs/consumer"
	"github.com/idempotent-sqs/pipeline/constructs/dispatcher"
	"github.com/idempotent-sqs/pipeline/constructs/heartbeat"
	"github.com/idempotent-sqs/pipeline/constructs/queue"
	"github.com/idempotent-sqs/pipeline/functions/batch"
	"github.com/idempotent-sqs/pipeline/functions/contract"
	"github.com/idempotent-sqs/pipeline/functions/dispatch"
	"github.com/idempotent-sqs/pipeline/functions/idempotency"
	"github.com/idempotent-sqs/pipeline/functions/msgkey"
	"github.com/idempotent-sqs/pipeline/functions/runtimefit"
	"github.com/idempotent-sqs/pipeline/internal/standin/poller"
	"github.com/idempotent-sqs/pipeline/local"
)

// docText is a file's text as a reader sees it: line breaks and runs of spaces folded to one.
func docText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile("../../" + path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(string(b)), " ")
}

// spoken writes a duration as the docs do: "25 ms", "2 s", "15 min", "6 h", "7 days".
func spoken(d time.Duration) string {
	switch {
	case d >= 48*time.Hour && d%(24*time.Hour) == 0:
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%d h", d/time.Hour)
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%d min", d/time.Minute)
	case d >= time.Second && d%time.Second == 0:
		return fmt.Sprintf("%d s", d/time.Second)
	default:
		return fmt.Sprintf("%d ms", d/time.Millisecond)
	}
}

// short writes a duration as the functions' environment takes it: "100ms", "15m", "2h",
// "1h10m" (Go writes 15m0s and 2h0m0s).
func short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// withCommas writes n as the docs do: 6291456 as "6,291,456".
func withCommas(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// The defaults and bounds design.md quotes are the code's: each sentence is written here from
// the constant it names, or from the synthesized reference stack, so a changed default fails
// this test until the prose follows it.
func TestDesignDefaultsAsCoded(t *testing.T) {
	ttl := consumerRecordTTL(t)
	vcpuShare := 256.0 / runtimefit.MBPerVCPU
	wants := []string{
		fmt.Sprintf("`LockCap` is %s to %s", spoken(idempotency.MinDuration), spoken(idempotency.MaxLockCap)),
		fmt.Sprintf("The queue's visibility timeout must be at least %d x the consumer's timeout", contract.VisibilityFactor),
		fmt.Sprintf("Defaults: %d attempts, base %s, cap %s; at most %d attempts",
			idempotency.DefaultRetryMaxAttempts, spoken(idempotency.DefaultRetryBaseDelay), spoken(idempotency.DefaultRetryMaxDelay), idempotency.MaxRetryAttempts),
		fmt.Sprintf("is retried with capped backoff, %d attempts by default", idempotency.DefaultRetryMaxAttempts),
		fmt.Sprintf("`DefaultRedriveWindow` (%s): %d days (%d h) for the reference stack",
			spoken(consumer.DefaultRedriveWindow), ttl/(24*time.Hour), ttl/time.Hour),
		fmt.Sprintf("`BATCH_DEADLINE_MARGIN` (default %s)", spoken(batch.DefaultDeadlineMargin)),
		fmt.Sprintf("`BATCH_DEADLINE_MARGIN` must be from `%s` (`batch.MinDeadlineMargin`) to `%s`",
			short(batch.MinDeadlineMargin), short(batch.MaxDeadlineMargin)),
		fmt.Sprintf("(unset it for the default %s)", spoken(batch.DefaultDeadlineMargin)),
		fmt.Sprintf("`Options.DeadlineMargin` 0 means the default %s", spoken(batch.DefaultDeadlineMargin)),
		fmt.Sprintf("the reason cut at %d bytes", contract.MaxReasonBytes),
		fmt.Sprintf("`maxReceiveCount` times (%d in the reference stack)", maxReceiveCount(t)),
		fmt.Sprintf("key over %d bytes", msgkey.MaxKeyBytes),
		fmt.Sprintf("up to `SEND_MAX_ATTEMPTS` (default %d) per entry, with full-jitter backoff (base %s, cap %s)",
			contract.DefaultSendMaxAttempts, spoken(dispatch.SendBackoffBase), spoken(dispatch.SendBackoffCap)),
		fmt.Sprintf("retry policy (default %d attempts, %s maximum event age)",
			dispatcher.DefaultScheduleRetryAttempts, spoken(dispatcher.DefaultScheduleMaxEventAge)),
		fmt.Sprintf("(default %d, %s maximum event age)", dispatcher.DefaultAsyncRetryAttempts, spoken(dispatcher.DefaultAsyncMaxEventAge)),
		fmt.Sprintf("rate of `Every`, default %s", spoken(heartbeat.DefaultEvery)),
		fmt.Sprintf("at %d minutes, %d small records a day per pipeline", heartbeat.DefaultEvery/time.Minute, 24*time.Hour/heartbeat.DefaultEvery),
		fmt.Sprintf("(`BatchSize`, default %d)", consumer.DefaultBatchSize),
		fmt.Sprintf("(%s bytes of event JSON, `poller.MaxPayload`)", withCommas(poller.MaxPayload)),
		fmt.Sprintf("(`Options.Environments`, default %d)", local.DefaultEnvironments),
		fmt.Sprintf("(%s MB is one vCPU; 256 MB about %.3f of one)", withCommas(runtimefit.MBPerVCPU), vcpuShare),
		fmt.Sprintf("at most %s of rendered input", kib(dispatcher.MaxInputBytes)),
	}
	text := docText(t, "docs/design.md")
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("docs/design.md does not say %q", want)
		}
	}
	t.Logf("%d sentences of design.md checked against the code; record TTL %v", len(wants), ttl)
}

// capacity.md's defaults, as the constructs hold them.
func TestCapacityDefaultsAsCoded(t *testing.T) {
	wants := []string{
		fmt.Sprintf("(defaults %d, none, %d MB, %d) set the Lambda side",
			consumer.DefaultBatchSize, consumer.DefaultMemorySize, consumer.DefaultMaxConcurrency),
		fmt.Sprintf("`Minimum` event pollers stay ready (2 to 200, default %d)", consumer.DefaultMinimumPollers),
		fmt.Sprintf("The queue construct's `MaxMessageSize` defaults to %s", kib(queue.DefaultMaxMessageSize)),
		fmt.Sprintf("keeps records for the queue's retention + the DLQ's retention + %s to redrive (%d h in the reference stack)",
			spoken(consumer.DefaultRedriveWindow), consumerRecordTTL(t)/time.Hour),
	}
	text := docText(t, "docs/capacity.md")
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("docs/capacity.md does not say %q", want)
		}
	}
}

func kib(n int) string {
	if n%(1024*1024) == 0 {
		return fmt.Sprintf("%d MiB", n/(1024*1024))
	}
	return fmt.Sprintf("%d KiB", n/1024)
}

// consumerRecordTTL is the reference stack's consumers' IDEMPOTENCY_RECORD_TTL, which must be
// one value for both pipelines.
func consumerRecordTTL(t *testing.T) time.Duration {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range resources {
		if r.Type != "AWS::Lambda::Function" {
			continue
		}
		env, _ := r.Properties["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		if v, ok := vars[contract.EnvRecordTTL].(string); ok {
			seen[v] = true
		}
	}
	if len(seen) != 1 {
		t.Fatalf("the consumers' %s values: %v, want one", contract.EnvRecordTTL, seen)
	}
	for v := range seen {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	return 0
}

// maxReceiveCount is the reference stack's source queues' redrive maxReceiveCount, one value.
func maxReceiveCount(t *testing.T) int {
	t.Helper()
	seen := map[float64]bool{}
	for _, r := range resources {
		if p, ok := r.Properties["RedrivePolicy"].(map[string]any); ok && r.Type == "AWS::SQS::Queue" {
			n, _ := p["maxReceiveCount"].(float64)
			seen[n] = true
		}
	}
	if len(seen) != 1 {
		t.Fatalf("the source queues' maxReceiveCount values: %v, want one", seen)
	}
	for n := range seen {
		return int(n)
	}
	return 0
}

// design.md's alarm table is the synthesized stack's: every row's alarms exist for each
// pipeline (or the table) with the threshold and the periods the row gives, each period is the
// one the text names (AlarmPeriod, a minute for DLQ alarms, the interval for the heartbeat), and
// every alarm of the template is in a row.
func TestDesignAlarmTableAsSynthesized(t *testing.T) {
	b, err := os.ReadFile("../../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "| watch | alarm | condition |\n")
	table, _, _ = strings.Cut(table, "\n\n")
	rowRE := regexp.MustCompile("(?m)^\\| (queue|consumer|dispatcher|table|heartbeat) \\| ([^|]+) \\| ([^|]+) \\|$")
	rows := rowRE.FindAllStringSubmatch(table, -1)
	if !ok || len(rows) != strings.Count(strings.TrimSpace(table), "\n") {
		t.Fatalf("docs/design.md's alarm table (after \"| watch | alarm | condition |\"): %d rows read of %d lines", len(rows), strings.Count(strings.TrimSpace(table), "\n"))
	}
	if len(rows) < 10 {
		t.Fatalf("docs/design.md's alarm table has %d rows, want the table of section 5", len(rows))
	}
	text := strings.Join(strings.Fields(string(b)), " ")
	periodRE := regexp.MustCompile("Period: ([0-9]+) min \\(`AlarmPeriod`\\), except DLQ alarms, which use ([0-9]+) min")
	pm := periodRE.FindStringSubmatch(text)
	if pm == nil {
		t.Fatal("docs/design.md does not say the alarms' period (\"Period: N min (`AlarmPeriod`), except DLQ alarms, which use N min\")")
	}
	period, dlqPeriod := atof(pm[1])*60, atof(pm[2])*60
	owners := map[string]string{"queue": "Queue", "consumer": "Consumer", "dispatcher": "Dispatcher", "table": "Table", "heartbeat": "Heartbeat"}
	covered := map[string]bool{}
	for _, row := range rows {
		watch, names, cond := row[1], row[2], row[3]
		var threshold *float64
		if m := regexp.MustCompile(`(>=|<) ([0-9,]+)( min)?`).FindStringSubmatch(cond); m != nil {
			v := atof(strings.ReplaceAll(m[2], ",", ""))
			if m[3] != "" {
				v *= 60
			}
			threshold = &v
		}
		periods := 1.0
		if m := regexp.MustCompile(`(?:for|in) ([0-9]+) periods`).FindStringSubmatch(cond); m != nil {
			periods = atof(m[1])
		}
		for _, nm := range regexp.MustCompile("`([A-Za-z]+)`").FindAllStringSubmatch(names, -1) {
			idRE := regexp.MustCompile("^Monitoring" + owners[watch] + "(Standard|Fifo|IdempotencyTable)" + nm[1] + "[0-9A-F]{8}$")
			found := 0
			for id, r := range resources {
				if r.Type != "AWS::CloudWatch::Alarm" || !idRE.MatchString(id) {
					continue
				}
				found++
				covered[id] = true
				p := r.Properties
				if threshold != nil && p["Threshold"] != *threshold {
					t.Errorf("%s: threshold %v, design.md's row says %v (%q)", id, p["Threshold"], *threshold, cond)
				}
				if p["EvaluationPeriods"] != periods {
					t.Errorf("%s: %v evaluation periods, design.md's row says %v (%q)", id, p["EvaluationPeriods"], periods, cond)
				}
				want := period
				switch {
				case watch == "heartbeat":
					want = heartbeat.DefaultEvery.Seconds()
				case strings.Contains(cond, "DLQ") || strings.Contains(cond, "queue visible messages") && watch == "dispatcher":
					want = dlqPeriod
				}
				for _, got := range alarmPeriods(p) {
					if got != want {
						t.Errorf("%s: period %v s, design.md says %v s", id, got, want)
					}
				}
			}
			want := 2
			if watch == "table" {
				want = 1
			}
			if found != want {
				t.Errorf("design.md's %s row names `%s`: %d alarms of the template match, want %d", watch, nm[1], found, want)
			}
		}
	}
	var missing []string
	for id, r := range resources {
		if r.Type == "AWS::CloudWatch::Alarm" && !covered[id] {
			missing = append(missing, id)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("alarms of the template in no row of design.md's alarm table: %v", missing)
	}
	t.Logf("%d rows, %d alarms matched; period %v s, DLQ alarms %v s", len(rows), len(covered), period, dlqPeriod)
}

// alarmPeriods is an alarm's period, or its metrics' periods when it alarms on an expression.
func alarmPeriods(p map[string]any) []float64 {
	if v, ok := p["Period"].(float64); ok {
		return []float64{v}
	}
	var out []float64
	ms, _ := p["Metrics"].([]any)
	for _, m := range ms {
		stat, _ := m.(map[string]any)["MetricStat"].(map[string]any)
		if v, ok := stat["Period"].(float64); ok {
			out = append(out, v)
		}
	}
	return out
}

func atof(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

// README's figures that the code sets: the record TTL's parts and the reference stack's
// total, the heartbeat's default interval, and the CDK CLI the Makefile installs.
func TestREADMEDefaultsAsCoded(t *testing.T) {
	pkg, err := os.ReadFile("../../package.json")
	if err != nil {
		t.Fatal(err)
	}
	cli := regexp.MustCompile(`"aws-cdk": "([0-9.]+)"`).FindSubmatch(pkg)
	if cli == nil {
		t.Fatal(`package.json pins no "aws-cdk"`)
	}
	wants := []string{
		fmt.Sprintf("(the queue's retention + the DLQ's + %s: %d days in the reference stack",
			spoken(consumer.DefaultRedriveWindow), consumerRecordTTL(t)/(24*time.Hour)),
		fmt.Sprintf("through each pipeline every %d minutes", heartbeat.DefaultEvery/time.Minute),
		fmt.Sprintf("the CDK CLI %s", cli[1]),
	}
	text := docText(t, "README.md")
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("README.md does not say %q", want)
		}
	}
}

// The duration writers the figure tests build sentences with.
func TestDurationWriters(t *testing.T) {
	for d, want := range map[time.Duration]string{100 * time.Millisecond: "100ms", 2 * time.Second: "2s", 15 * time.Minute: "15m",
		10 * time.Minute: "10m", 90 * time.Second: "1m30s", 2 * time.Hour: "2h", 70 * time.Minute: "1h10m"} {
		if got := short(d); got != want {
			t.Errorf("short(%v) = %q, want %q", d, got, want)
		}
	}
	for d, want := range map[time.Duration]string{25 * time.Millisecond: "25 ms", time.Second: "1 s", 15 * time.Minute: "15 min",
		6 * time.Hour: "6 h", 7 * 24 * time.Hour: "7 days", 24 * time.Hour: "24 h"} {
		if got := spoken(d); got != want {
			t.Errorf("spoken(%v) = %q, want %q", d, got, want)
		}
	}
}
