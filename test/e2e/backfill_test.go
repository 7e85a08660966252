//go:build e2e

package e2e

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/functions/telemetry"
	"github.com/idempotent-sqs/pipeline/internal/lambdart"
	"github.com/idempotent-sqs/pipeline/internal/standin"
	"github.com/idempotent-sqs/pipeline/internal/standin/alarm"
)

// TestBackfillTwiceRunsEachOccurrenceOnce: the schedule was off for three hours. The
// operator's `pipelinectl backfill` reads the schedule (cron, zone, input) and invokes the
// deployed dispatcher once per missed occurrence, and is then run again over the same
// three hours: each occurrence's effects run once, the second run's messages are
// duplicates the consumer acknowledges. Scheduler's GetSchedule and Lambda's Invoke are
// stand-ins over the deployed template and function, reached by the CLI the way it reaches
// AWS (AWS_ENDPOINT_URL_SCHEDULER, AWS_ENDPOINT_URL_LAMBDA, signed requests).
func TestBackfillTwiceRunsEachOccurrenceOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "backfill")
	p := w.pipeline(false)
	sch, err := w.d.Template.ScheduleFor(p.Dispatcher)
	if err != nil {
		t.Fatal(err)
	}
	if sch.Expression != "cron(0 * * * ? *)" {
		t.Fatalf("the reference schedule is %q; this test backfills an hourly one", sch.Expression)
	}
	dispatcher := w.env(p.Dispatcher, nil)
	fnName := w.functionName(p.Dispatcher)
	var invocations, getSchedules atomic.Int32
	mux := http.NewServeMux()
	handleGetSchedule(mux, w, sch, "schedule-"+w.d.Suffix, "group-"+w.d.Suffix, fnName, &getSchedules)
	handleInvoke(mux, w, fnName, dispatcher, &invocations)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	outputs := filepath.Join(t.TempDir(), "outputs.json")
	b, _ := json.Marshal(map[string]map[string]string{"Pipeline-e2e": {
		"StandardQueueUrl": w.d.QueueURL[p.Queue], "StandardDeadLetterQueueUrl": w.d.QueueURL[p.DLQ],
		"StandardDispatcherFunctionName": fnName, "StandardScheduleName": "schedule-" + w.d.Suffix, "StandardScheduleGroupName": "group-" + w.d.Suffix,
	}})
	if err := os.WriteFile(outputs, b, 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"AWS_ENDPOINT_URL_SCHEDULER=" + srv.URL, "AWS_ENDPOINT_URL_LAMBDA=" + srv.URL}
	to := time.Now().UTC().Truncate(time.Hour)
	from := to.Add(-3 * time.Hour)
	args := []string{"backfill", "--outputs", outputs, "--pipeline", "Standard", "--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339)}

	code, out := runCtlEnv(t, env, args...)
	for _, want := range []string{"schedule     schedule-" + w.d.Suffix + ": cron(0 * * * ? *) in UTC (ENABLED)", "occurrences  3 in [",
		"  " + from.Format(time.RFC3339), "Dry run: nothing dispatched."} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("dry run: exit %d, output lacks %q", code, want)
		}
	}
	if invocations.Load() != 0 {
		t.Fatalf("the dry run invoked the dispatcher %d times", invocations.Load())
	}
	for run := range 2 {
		code, out = runCtlEnv(t, env, append(args, "--yes")...)
		if code != 0 || !strings.Contains(out, "dispatched   3 of 3 occurrences") || !strings.Contains(out, "done         every occurrence was dispatched (exit 0)") {
			t.Errorf("backfill %d: exit %d\n%s", run+1, code, out)
		}
	}
	if invocations.Load() != 6 || getSchedules.Load() != 3 {
		t.Errorf("the dispatcher was invoked %d times, want 6 (3 occurrences, twice); GetSchedule %d times, want 3", invocations.Load(), getSchedules.Load())
	}

	pl, stop := w.poll(p, 2)
	took := w.waitFor("an empty queue", w.patience(p.Queue), func() bool { return w.depth(p.Queue) == 0 })
	stop()
	w.quiesce()
	var ev struct{ Items []map[string]any }
	if err := json.Unmarshal([]byte(sch.Input), &ev); err != nil || len(ev.Items) == 0 {
		t.Fatalf("the schedule's input has no items: %v", err)
	}
	items := ev.Items
	var want []string
	for h := range 3 {
		want = append(want, dispatchKeys(t, w, p, from.Add(time.Duration(h)*time.Hour), items)...)
	}
	checkOnce(t, w.ledger, want)
	if dup := w.ledger.Outcomes()[telemetry.OutcomeDuplicate]; dup != len(want) {
		t.Errorf("%d duplicates reached the consumer, want %d (the second backfill's messages)", dup, len(want))
	}
	report(t, "a 3-hour gap of an hourly schedule backfilled twice: %d dispatcher invocations, %d effects for %d keys, %d duplicates absorbed, %d records delivered, drained in %v",
		invocations.Load(), len(w.ledger.Effects()), len(want), w.ledger.Outcomes()[telemetry.OutcomeDuplicate], pl.Stats.Received.Load(), took.Round(10*time.Millisecond))
}

// handleInvoke serves Lambda's Invoke (RequestResponse) for the function fnName on mux, with
// the deployed function in env; invocations counts the calls.
func handleInvoke(mux *http.ServeMux, w *world, fnName string, env *lambdart.Env, invocations *atomic.Int32) {
	mux.HandleFunc("POST /2015-03-31/functions/{name}/invocations", func(rw http.ResponseWriter, r *http.Request) {
		invocations.Add(1)
		if r.PathValue("name") != fnName || r.Header.Get("X-Amz-Invocation-Type") != "RequestResponse" ||
			!strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
			http.Error(rw, `{"Message":"no such function"}`, http.StatusNotFound)
			return
		}
		payload, _ := io.ReadAll(r.Body)
		res, err := w.invoke(r.Context(), env, payload)
		switch {
		case err != nil:
			http.Error(rw, fmt.Sprintf(`{"Message":%q}`, err), http.StatusInternalServerError)
		case res.FunctionError != nil:
			rw.Header().Set("X-Amz-Function-Error", "Unhandled")
			fmt.Fprintf(rw, `{"errorMessage":%q}`, res.FunctionError.Error())
		default:
			rw.Write(res.Payload)
		}
	})
}

// handleGetSchedule serves Scheduler's GetSchedule for the schedule name in group on mux, from
// the deployed template's schedule sch targeting fnName; calls counts the calls.
func handleGetSchedule(mux *http.ServeMux, w *world, sch standin.Schedule, name, group, fnName string, calls *atomic.Int32) {
	mux.HandleFunc("GET /schedules/{name}", func(rw http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.PathValue("name") != name || r.URL.Query().Get("groupName") != group ||
			!strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
			http.Error(rw, `{"Message":"no such schedule"}`, http.StatusNotFound)
			return
		}
		json.NewEncoder(rw).Encode(map[string]any{"Name": name, "GroupName": group, "State": "ENABLED",
			"ScheduleExpression": sch.Expression, "ScheduleExpressionTimezone": sch.Timezone,
			"Target": map[string]any{"Arn": "arn:aws:lambda:us-east-1:123456789012:function:" + fnName, "Input": sch.Input}})
	})
}

// handleDescribeAlarms serves CloudWatch's DescribeAlarms on mux as CloudWatch answers it:
// with ChildrenOfAlarmName, the children of the template's composite alarm (by logical id,
// the name alarms have locally), name and state only; with AlarmNames.member.N, every field
// of those alarms. States are what the world's alarm evaluation gives them now. calls counts
// the calls.
func handleDescribeAlarms(mux *http.ServeMux, w *world, calls *atomic.Int32) {
	mux.HandleFunc("POST /", func(rw http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		r.ParseForm()
		if r.Form.Get("Action") != "DescribeAlarms" || !strings.Contains(r.Header.Get("Authorization"), "/monitoring/aws4_request") {
			http.Error(rw, `<ErrorResponse><Error><Code>AccessDenied</Code></Error></ErrorResponse>`, http.StatusForbidden)
			return
		}
		var ids []string
		full := true
		if name := r.Form.Get("ChildrenOfAlarmName"); name != "" {
			full = false
			var comp *alarm.Composite
			for i, c := range w.d.Template.Composites {
				if c.LogicalID == name {
					comp = &w.d.Template.Composites[i]
				}
			}
			if comp == nil || len(r.Form) > 4 {
				http.Error(rw, `<ErrorResponse><Error><Code>ResourceNotFound</Code></Error></ErrorResponse>`, http.StatusBadRequest)
				return
			}
			ids = comp.Children()
		} else {
			for i := 1; r.Form.Get(fmt.Sprintf("AlarmNames.member.%d", i)) != ""; i++ {
				ids = append(ids, r.Form.Get(fmt.Sprintf("AlarmNames.member.%d", i)))
			}
		}
		now := time.Now()
		evs := w.evaluate(now)
		var b strings.Builder
		b.WriteString(`<DescribeAlarmsResponse xmlns="http://monitoring.amazonaws.com/doc/2010-08-01/"><DescribeAlarmsResult><MetricAlarms>`)
		for _, id := range ids {
			for _, a := range w.d.Template.Alarms {
				if a.LogicalID != id {
					continue
				}
				ev := evs[id]
				fields := [][2]string{{"AlarmName", id}, {"StateValue", ev.StateAt(w.obs.Clock.Alarm(now))}}
				if full {
					metric := ""
					if ms := a.Metrics(); len(ms) == 1 {
						metric = ms[0].Name
					}
					fields = append(fields, [2]string{"StateReason", fmt.Sprintf("evaluated by the e2e harness; datapoints %v", ev.Values)},
						[2]string{"AlarmDescription", a.Description}, [2]string{"MetricName", metric})
				}
				b.WriteString("<member>")
				for _, f := range fields {
					b.WriteString("<" + f[0] + ">")
					xml.EscapeText(&b, []byte(f[1]))
					b.WriteString("</" + f[0] + ">")
				}
				b.WriteString("</member>")
			}
		}
		b.WriteString(`</MetricAlarms></DescribeAlarmsResult></DescribeAlarmsResponse>`)
		rw.Header().Set("Content-Type", "text/xml")
		io.WriteString(rw, b.String())
	})
}

// handleListMappings serves Lambda's ListEventSourceMappings on mux for the consumer fnName
// of pipeline p, from the template's mapping: Enabled, with its batch size and maximum
// concurrency (the harness's poller is the mapping; a scenario that runs none is a mapping
// that receives nothing, which Lambda still reports as Enabled).
func handleListMappings(mux *http.ServeMux, w *world, p standin.Pipeline, fnName string) {
	mux.HandleFunc("GET /2015-03-31/event-source-mappings/", func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("FunctionName") != fnName || !strings.Contains(r.Header.Get("Authorization"), "/lambda/aws4_request") {
			http.Error(rw, `{"Message":"Function not found"}`, http.StatusNotFound)
			return
		}
		json.NewEncoder(rw).Encode(map[string]any{"EventSourceMappings": []map[string]any{{
			"UUID": p.Mapping.LogicalID, "EventSourceArn": w.d.QueueARN[p.Queue], "State": "Enabled", "LastProcessingResult": "OK",
			"BatchSize": p.Mapping.BatchSize, "ScalingConfig": map[string]any{"MaximumConcurrency": p.Mapping.MaxConcurrency},
		}}})
	})
}
