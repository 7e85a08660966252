//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-sqs/pipeline/functions/telemetry"
	"github.com/idempotent-sqs/pipeline/internal/cfn"
	"github.com/idempotent-sqs/pipeline/internal/ddbproxy"
	"github.com/idempotent-sqs/pipeline/internal/lambdart"

	"github.com/idempotent-sqs/pipeline/internal/standin"
	"github.com/idempotent-sqs/pipeline/internal/standin/alarm"
	"github.com/idempotent-sqs/pipeline/internal/standin/schedule"
)

// watchAlarms starts recording the world's metrics (standin.Observer); call it right after
// newWorld, before any poller or function starts. The alarm clock starts now.
func (w *world) watchAlarms() *standin.Observer {
	o := standin.NewObserver(w.d, w.sq, w.functionName, alarm.TimeScale, w.t.Errorf)
	w.obs = o
	w.pollSQ = sqsd.Client(func(opt *sqs.Options) { opt.APIOptions = append(opt.APIOptions, w.recv.middleware, o.Middleware) })
	w.dynamo.Observe = o.Dynamo
	w.t.Cleanup(o.Stop)
	return o
}

// evaluate is o.Evaluate, failing the test on an error.
func (w *world) evaluate(end time.Time) map[string]alarm.Evaluation {
	w.t.Helper()
	evs, err := w.obs.Evaluate(end)
	if err != nil {
		w.t.Fatal(err)
	}
	return evs
}

// alarmRef names the alarms a failure mode must raise by what they watch, so the check
// survives renamed alarms: a failure mode whose alarm is gone from the template fails.
type alarmRef struct {
	what  string
	match func(alarm.Alarm) bool
}

// watching matches an alarm that reads any of the metrics (namespace/name) with the
// dimension dim = resource.
func watching(what, dim, resource string, metrics ...string) alarmRef {
	return alarmRef{what: what, match: func(a alarm.Alarm) bool {
		for _, m := range metrics {
			ns, name, _ := strings.Cut(m, "/")
			ns = "AWS/" + ns
			if a.Reads(ns, name, dim, resource) {
				return true
			}
		}
		return false
	}}
}

// heartbeatAlarm matches the alarm on the heartbeats a consumer completes.
func heartbeatAlarm(p standin.Pipeline) alarmRef {
	return alarmRef{what: "heartbeats completed by " + p.Consumer, match: func(a alarm.Alarm) bool {
		for _, m := range a.Metrics() {
			if m.Name == "ProbeCompleted" && m.Dim("Service") == p.Consumer {
				return true
			}
		}
		return false
	}}
}

func dlqAlarm(queue string) alarmRef {
	return watching("messages in "+queue, "QueueName", queue, "SQS/ApproximateNumberOfMessagesVisible")
}

func functionErrors(fn string) alarmRef {
	return watching("errors of "+fn, "FunctionName", fn, "Lambda/Errors")
}

// alarmRow is one line of the alarm table: an alarm that a scenario had to raise, or raised.
type alarmRow struct {
	Mode, Scenario, Alarm string
	Must, Fired           bool
	After                 time.Duration // from the failure to ALARM, wall clock
	AlarmAfter            time.Duration // the same on the alarm clock
}

var alarmTable struct {
	sync.Mutex
	rows    []alarmRow
	healthy []string // alarms in ALARM during a healthy phase
	quiet   int      // healthy phases checked
}

// expectAlarms checks a failure mode: every alarm of the template matching each ref must go
// to ALARM after since (when the failure began), within timeout. It evaluates the run so far
// every few seconds until they all have, then records every alarm that went to ALARM in this
// world for the alarm table and prints FIGURE lines.
func (w *world) expectAlarms(mode string, since time.Time, timeout time.Duration, must ...alarmRef) {
	w.t.Helper()
	o := w.obs
	if o == nil {
		w.t.Fatal("expectAlarms without watchAlarms")
	}
	want := map[string]string{} // logical id -> what
	for _, r := range must {
		n := 0
		for _, a := range w.d.Template.Alarms {
			if r.match(a) {
				want[a.LogicalID] = r.what
				n++
			}
		}
		if n == 0 {
			w.t.Errorf("%s: the template has no alarm on %s: this failure would go unheard", mode, r.what)
		}
	}
	from := o.Clock.Alarm(since)
	var evs map[string]alarm.Evaluation
	deadline := time.Now().Add(timeout)
	for {
		evs = w.evaluate(time.Now())
		missing := 0
		for id := range want {
			if _, ok := evs[id].FirstAlarm(from); !ok {
				missing++
			}
		}
		if missing == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(2 * time.Second)
	}
	ids := slices.Sorted(maps.Keys(evs))
	for _, id := range ids {
		ev := evs[id]
		at, fired := ev.FirstAlarm(from)
		_, must := want[id]
		if !fired && !must {
			continue
		}
		row := alarmRow{Mode: mode, Scenario: w.t.Name(), Alarm: id, Must: must, Fired: fired}
		if fired {
			row.AlarmAfter = at.Sub(from)
			row.After = o.Clock.Wall(at).Sub(since)
		}
		alarmTable.Lock()
		alarmTable.rows = append(alarmTable.rows, row)
		alarmTable.Unlock()
		role := "also fired"
		if must {
			role = "must fire"
		}
		if fired {
			report(w.t, "alarm %s (%s) for %q: ALARM %v after the failure (%v on the alarm clock)", id, role, mode, row.After.Round(100*time.Millisecond), row.AlarmAfter.Round(time.Second))
		} else {
			report(w.t, "alarm %s (%s) for %q: did NOT fire within %v; datapoints %v", id, role, mode, timeout, ev.Values)
			w.t.Errorf("%s: alarm %s (on %s) did not go to ALARM within %v of the failure; its datapoints (one per %v of the alarm clock): %v",
				mode, id, want[id], timeout, alarmPeriod(w.d.Template, id), ev.Values)
		}
	}
}

func alarmPeriod(t *standin.Template, id string) time.Duration {
	for _, a := range t.Alarms {
		if a.LogicalID == id {
			return a.Period
		}
	}
	return 0
}

// alarmWait bounds how long a failure mode's alarms may take: the slowest matching alarm's
// evaluation periods plus two more, on the wall clock, and a minute for a loaded machine.
func (w *world) alarmWait(must ...alarmRef) time.Duration {
	var longest time.Duration
	for _, r := range must {
		for _, a := range w.d.Template.Alarms {
			if r.match(a) {
				longest = max(longest, time.Duration(a.EvaluationPeriods+2)*a.Period)
			}
		}
	}
	return longest/alarm.TimeScale + time.Minute
}

// expectQuiet checks a healthy phase [from, to]: no alarm, composite ones included, may be
// in ALARM at any evaluation of it. Only periods complete by to count, so end the phase a
// period after the last message is done.
func (w *world) expectQuiet(from, to time.Time) {
	w.t.Helper()
	o := w.obs
	evs := w.evaluate(to)
	var fired []string
	for _, id := range slices.Sorted(maps.Keys(evs)) {
		if evs[id].AlarmedWithin(o.Clock.Alarm(from), o.Clock.Alarm(to)) {
			fired = append(fired, id)
			w.t.Errorf("healthy phase: alarm %s went to ALARM (a false page); its datapoints: %v", id, evs[id].Values)
		}
	}
	alarmTable.Lock()
	alarmTable.healthy = append(alarmTable.healthy, fired...)
	alarmTable.quiet++
	alarmTable.Unlock()
	report(w.t, "healthy phase of %v (%v on the alarm clock): %d of %d alarms went to ALARM (goal 0) %v",
		to.Sub(from).Round(100*time.Millisecond), o.Clock.Alarm(to).Sub(o.Clock.Alarm(from)).Round(time.Minute), len(fired), len(evs), fired)
}

// longestPeriod is the longest alarm period of the template, on the wall clock.
func (w *world) longestPeriod() time.Duration {
	var p time.Duration
	for _, a := range w.d.Template.Alarms {
		p = max(p, a.Period)
	}
	return p / alarm.TimeScale
}

// consumerTable is the logical id of the idempotency table a consumer writes.
func (w *world) consumerTable(p standin.Pipeline) string {
	return cfn.RefTarget(w.d.Template.Functions[p.Consumer].Env["IDEMPOTENCY_TABLE_NAME"])
}

// invokeAsync is standin.InvokeAsync of one environment of function: Lambda's asynchronous
// invocation, its retries and its on-failure destination.
func (w *world) invokeAsync(e *lambdart.Env, function string, payload []byte) (int, error) {
	w.t.Helper()
	n, err := standin.InvokeAsync(w.t.Context(), w.d, w.sq, function, payload, alarm.Clock{Scale: alarm.TimeScale},
		func(ctx context.Context, payload []byte) (lambdart.Result, error) { return w.invoke(ctx, e, payload) }, e.FunctionARN())
	if _, ok := w.d.Template.InvokeConfigs[function]; !ok || strings.HasPrefix(fmt.Sprint(err), "on-failure destination") {
		w.t.Fatal(err)
	}
	return n, err
}

// TestAlarmsStalledConsumer: the consumer stops acknowledging (its event source mapping is
// off: nobody receives) while more messages wait than the backlog alarm's threshold. The
// stalled-consumer, backlog and oldest-message alarms of that queue must fire.
func TestAlarmsStalledConsumer(t *testing.T) {
	checkOnly(t)
	t.Parallel()
	for _, fifo := range []bool{false, true} {
		t.Run(kind(fifo), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, "stall")
			w.watchAlarms()
			p := w.pipeline(fifo)
			stalled := watching("deletes from "+p.Queue+" (stalled consumer)", "QueueName", p.Queue, "SQS/NumberOfMessagesDeleted")
			oldest := watching("the oldest message on "+p.Queue, "QueueName", p.Queue, "SQS/ApproximateAgeOfOldestMessage")
			backlog := alarmRef{what: "visible messages on " + p.Queue + " (backlog)", match: func(a alarm.Alarm) bool {
				return dlqAlarm(p.Queue).match(a) && !stalled.match(a)
			}}
			// Enough messages for the backlog alarm's threshold, read from the template.
			n := 0
			for _, a := range w.d.Template.Alarms {
				if backlog.match(a) {
					n = max(n, int(a.Threshold))
				}
			}
			n = min(n+100, 5000)
			var msgs []message
			for i := range n {
				msgs = append(msgs, message{Body: body(fmt.Sprintf("stall-%05d", i)), Group: fmt.Sprintf("g%d", i%10)})
			}
			since := time.Now()
			w.send(p.Queue, msgs)
			w.expectAlarms("consumer stops acknowledging", since, w.alarmWait(stalled, backlog, oldest), stalled, backlog, oldest)
			report(t, "%d messages left unreceived on %s", n, p.Queue)
		})
	}
}

// TestAlarmsPersistentFailure: one record fails on every receive (its key's DynamoDB calls
// all fail: a handler dependency that stays down), so the redrive policy moves it to the DLQ
// after maxReceiveCount receives. On FIFO this is the README's "FIFO record fails" row, on
// standard its "handler error" row. The DLQ alarm must fire.
func TestAlarmsPersistentFailure(t *testing.T) {
	checkOnly(t)
	t.Parallel()
	for _, fifo := range []bool{false, true} {
		t.Run(kind(fifo), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, "persist")
			w.watchAlarms()
			p := w.pipeline(fifo)
			const stuck = "fails-forever"
			w.dynamo.Policy = func(c ddbproxy.Call) ddbproxy.Fault {
				if strings.HasSuffix(c.Key, "#"+stuck) {
					return ddbproxy.Fault{Status: 500, Type: "InternalServerError"}
				}
				return ddbproxy.Fault{}
			}
			_, stop := w.poll(p, 1)
			since := time.Now()
			w.send(p.Queue, []message{{Body: body(stuck), Group: "g"}})
			took := w.waitFor("the failing message in the DLQ", w.patience(p.Queue), func() bool { return w.depth(p.DLQ) == 1 })
			mode := "handler error: retried up to maxReceiveCount, then DLQ"
			if fifo {
				mode = "FIFO record keeps failing: DLQ"
			}
			w.expectAlarms(mode, since, w.alarmWait(dlqAlarm(p.DLQ)), dlqAlarm(p.DLQ))
			stop()
			w.quiesce()
			report(t, "redriven to the DLQ after %d receives, %v after the send", len(w.recv.of(body(stuck))), took.Round(100*time.Millisecond))
		})
	}
}

// TestAlarmsDispatcherFailure: the dispatcher cannot send (SQS denies every SendMessageBatch,
// as with a missing sqs:SendMessage grant), so each asynchronous invocation fails, Lambda
// retries it, and the event lands in the on-failure queue. The dispatcher's errors alarm and
// its on-failure queue alarm must fire.
func TestAlarmsDispatcherFailure(t *testing.T) {
	checkOnly(t)
	t.Parallel()
	for _, fifo := range []bool{false, true} {
		t.Run(kind(fifo), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, "dispfail")
			w.watchAlarms()
			p := w.pipeline(fifo)
			w.sqsPx.Policy = func(c ddbproxy.Call) ddbproxy.Fault {
				if strings.HasPrefix(c.Op, "SendMessage") {
					return ddbproxy.Fault{Status: 400, Type: "AccessDenied"}
				}
				return ddbproxy.Fault{}
			}
			s, err := w.d.Template.ScheduleFor(p.Dispatcher)
			if err != nil {
				t.Fatal(err)
			}
			in, err := schedule.Input(s, time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC), "exec-denied", nil)
			if err != nil {
				t.Fatal(err)
			}
			failureQueue := w.d.Template.InvokeConfigs[p.Dispatcher].OnFailureQueue
			if failureQueue == "" {
				t.Fatalf("dispatcher %s has no on-failure destination", p.Dispatcher)
			}
			e := w.env(p.Dispatcher, nil)
			since := time.Now()
			attempts, err := w.invokeAsync(e, p.Dispatcher, in)
			if err == nil {
				t.Fatal("the dispatcher succeeded although SQS denied every send: the scenario did not run")
			}
			if got := w.depth(failureQueue); got != 1 {
				t.Errorf("on-failure queue holds %d messages, want 1", got)
			}
			must := []alarmRef{functionErrors(p.Dispatcher), dlqAlarm(failureQueue)}
			w.expectAlarms("dispatcher fails after async retries", since, w.alarmWait(must...), must...)
			report(t, "%d attempts failed (%v), then the on-failure queue", attempts, err)
		})
	}
}

// TestAlarmsHeartbeat: with zero traffic, a pipeline breaks silently: its consumer stops
// receiving (the event source mapping is disabled), or its role can no longer write the table
// (a lost grant). No queue grows and no function errs; only the heartbeat can tell, and its
// alarm must fire. Before the breakage the pipeline runs on heartbeats alone, and the alarm
// must stay OK over four complete periods then (it is quiet when healthy).
func TestAlarmsHeartbeat(t *testing.T) {
	checkOnly(t)
	t.Parallel()
	for _, c := range []struct {
		mode        string
		fifo, table bool
	}{
		{"consumer stopped with no traffic (mapping disabled)", false, false},
		{"consumer stopped with no traffic (mapping disabled)", true, false},
		{"consumer cannot write the table with no traffic (lost grant)", false, true},
	} {
		name := kind(c.fifo) + map[bool]string{false: "/stopped", true: "/table-denied"}[c.table]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, "beat")
			o := w.watchAlarms()
			p := w.pipeline(c.fifo)
			hb := heartbeatAlarm(p)
			var id string
			var period time.Duration
			for _, a := range w.d.Template.Alarms {
				if hb.match(a) {
					id, period = a.LogicalID, a.Period
				}
			}
			if id == "" {
				t.Fatalf("the template has no alarm on %s", hb.what)
			}
			_, stop := w.poll(p, 1)
			// Healthy on heartbeats alone: four complete periods (twice what the alarm
			// evaluates), and the alarm never in ALARM.
			const quiet = 4
			healthy := w.waitFor("four complete heartbeat periods", 2*time.Minute+2*quiet*period/alarm.TimeScale, func() bool {
				return len(w.evaluate(time.Now())[id].Values) >= quiet
			})
			ev := w.evaluate(time.Now())[id]
			if state := ev.StateAt(o.Clock.Alarm(time.Now())); state != alarm.StateOK || ev.AlarmedWithin(o.Clock.Start, o.Clock.Alarm(time.Now())) {
				t.Fatalf("healthy, with heartbeats completing: alarm %s is %s (datapoints %v, transitions %v)", id, state, ev.Values, ev.Transitions)
			}
			outcomes := w.ledger.Outcomes()
			report(t, "healthy for %v (%d periods of %v on the alarm clock): %d heartbeats sent, %d completed (%d as duplicates), alarm %s OK",
				healthy.Round(100*time.Millisecond), len(ev.Values), period, o.Heartbeats.Load(), outcomes[telemetry.OutcomeProbe]+outcomes[telemetry.OutcomeProbeDuplicate], outcomes[telemetry.OutcomeProbeDuplicate], id)

			since := time.Now()
			if c.table {
				w.dynamo.Policy = func(ddbproxy.Call) ddbproxy.Fault { return ddbproxy.Fault{Status: 400, Type: "AccessDeniedException"} }
			} else {
				stop()
			}
			w.expectAlarms(c.mode, since, w.alarmWait(hb), hb)
			stop()
			w.quiesce()
		})
	}
}

// printAlarmTable prints the alarm table after every scenario ran: each failure mode's
// alarms, and every alarm of the template no scenario raised, with the reason.
func printAlarmTable(t *standin.Template) {
	alarmTable.Lock()
	defer alarmTable.Unlock()
	if len(alarmTable.rows) == 0 && alarmTable.quiet == 0 {
		return
	}
	rows := slices.Clone(alarmTable.rows)
	slices.SortFunc(rows, func(a, b alarmRow) int {
		return strings.Compare(a.Mode+a.Scenario+a.Alarm, b.Mode+b.Scenario+b.Alarm)
	})
	fmt.Println("ALARMTABLE | failure (README) | scenario | alarm | must fire | fired | time to fire (run) | (alarm clock) |")
	fired := map[string]bool{}
	for _, r := range rows {
		yes := map[bool]string{true: "yes", false: "no"}
		after, clock := "-", "-"
		if r.Fired {
			fired[r.Alarm] = true
			after, clock = r.After.Round(100*time.Millisecond).String(), r.AlarmAfter.Round(time.Second).String()
		}
		fmt.Printf("ALARMTABLE | %s | %s | %s | %s | %s | %s | %s |\n", r.Mode, r.Scenario, r.Alarm, yes[r.Must], yes[r.Fired], after, clock)
	}
	for _, a := range t.Alarms {
		if !fired[a.LogicalID] {
			fmt.Printf("ALARMTABLE not driven | %s | %s |\n", a.LogicalID, notDriven(t, a))
		}
	}
	for _, c := range t.Composites {
		if !fired[c.LogicalID] {
			fmt.Printf("ALARMTABLE not driven | %s | composite: %s |\n", c.LogicalID, c.Rule)
		}
	}
	fmt.Printf("FIGURE alarms: %d alarms and %d composite alarms in the template; %d went to ALARM in the failure scenarios; %d in ALARM during %d healthy phases (goal 0) %v\n",
		len(t.Alarms), len(t.Composites), len(fired), len(alarmTable.healthy), alarmTable.quiet, alarmTable.healthy)
}

// notDriven says why no scenario raises an alarm.
func notDriven(t *standin.Template, a alarm.Alarm) string {
	for _, m := range a.Metrics() {
		switch {
		case m.Namespace == "AWS/Scheduler":
			return "reads EventBridge Scheduler's own " + m.Name + ": no Scheduler runs locally (the suite invokes the dispatcher as a schedule would)"
		case m.Namespace == "AWS/Lambda" && m.Name == "Throttles":
			return "Lambda throttling: the local runtime has no concurrency limit to hit"
		case m.Namespace == "AWS/DynamoDB" && m.Name == "ReadThrottleEvents":
			return "the idempotency store only writes (UpdateItem): there is no read to throttle"
		}
		for _, s := range t.Schedules {
			if s.DeadLetter != "" && m.Dim("QueueName") == s.DeadLetter {
				return "the schedule's DLQ: only EventBridge Scheduler writes to it, when it cannot invoke the dispatcher"
			}
		}
	}
	return "no scenario drives it"
}

// healthyPhase runs both pipelines of the world with no fault injected: n good messages sent
// straight to each queue and one scheduled run of each dispatcher, consumed through the
// template's event source mappings. Once every effect ran and both queues are empty it waits
// the longest alarm period, so the periods of the phase complete, and checks that no alarm
// went to ALARM (no false pages). It returns the keys whose effects ran, each once.
func (w *world) healthyPhase(n int) []string {
	w.t.Helper()
	from := time.Now()
	var keys []string
	var stops []func()
	var queues []string
	for _, fifo := range []bool{false, true} {
		p := w.pipeline(fifo)
		queues = append(queues, p.Queue)
		_, stop := w.poll(p, 2)
		stops = append(stops, stop)
		var msgs []message
		for i := range n {
			key := fmt.Sprintf("healthy-%s-%04d", kind(fifo), i)
			keys = append(keys, key)
			msgs = append(msgs, message{Body: body(key), Group: fmt.Sprintf("g%d", i%8)})
		}
		w.send(p.Queue, msgs)
		var items []map[string]any
		for i := range 20 {
			items = append(items, map[string]any{"id": fmt.Sprintf("healthy-item-%02d", i), "group": fmt.Sprintf("tenant-%d", i%4)})
		}
		scheduled := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
		if err := w.dispatch(w.env(p.Dispatcher, nil), p, scheduled, "exec-healthy-"+kind(fifo), items); err != nil {
			w.t.Fatalf("healthy phase: dispatch %s: %v", kind(fifo), err)
		}
		keys = append(keys, dispatchKeys(w.t, w, p, scheduled, items)...)
	}
	done := w.waitFor("the healthy phase's effects and empty queues", w.patience(queues[0]), func() bool {
		effects := w.ledger.Effects()
		for _, k := range keys {
			if effects[k] == 0 {
				return false
			}
		}
		return w.depth(queues[0]) == 0 && w.depth(queues[1]) == 0
	})
	time.Sleep(w.longestPeriod())
	to := time.Now()
	for _, stop := range stops {
		stop()
	}
	w.expectQuiet(from, to)
	// A record a loaded machine did not start before its invocation's deadline comes back a
	// visibility timeout later, which the alarm clock sees 30 times longer: say how many.
	again := 0
	for i, k := range keys {
		if i < 2*n && len(w.recv.of(body(k))) > 1 {
			again++
		}
	}
	report(w.t, "healthy phase: %d messages and %d dispatched items over both pipelines done in %v (%d sent messages received more than once), then %v quiet",
		2*n, len(keys)-2*n, done.Round(100*time.Millisecond), again, w.longestPeriod())
	return keys
}
