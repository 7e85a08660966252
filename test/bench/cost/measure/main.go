// Command measure counts what one message costs in calls, by running the real Lambda binaries
// (functions/dispatcher and functions/consumer, built as bundling builds them but for this
// machine, internal/lambdart) against real local servers:
//
//   - the dispatcher sends to ElasticMQ queues (internal/sqslocal), a standard and a FIFO
//     one, through a counting proxy (internal/ddbproxy): SendMessageBatch per message;
//   - the consumer is fed from the standard queue by the event source mapping's stand-in
//     (test/e2e Poller, batch size 10, ReportBatchItemFailures), whose ReceiveMessage and
//     DeleteMessageBatch calls go through a second counting proxy: per message;
//   - the consumer's DynamoDB calls go to DynamoDB Local (internal/dynamolocal) through a
//     third proxy, which counts them by operation and idempotency step and adds
//     ReturnConsumedCapacity=TOTAL to every write, so the write units DynamoDB Local reports
//     are summed too.
//
// Two passes: the dispatcher sends -batches x -batch-size messages with new keys and the
// consumer drains them; then the dispatcher runs again for the same period (a retried
// schedule: the same keys) and the consumer drains the duplicates. The queue is filled before
// it is drained, so batches are full: the floor. Invocation durations are lambdart's (event
// handed out to response received): local wall time on this machine, not Lambda's.
//
// It prints a JSON document with the figures on stdout (the input of `go run ./test/bench/cost
// -in FILE`) and a human summary on stderr. DYNAMODB_LOCAL_DIR and ELASTICMQ_DIR default to
// .cache in the module root.
//
//	go run ./test/bench/cost/measure > cost.json && go run ./test/bench/cost -in cost.json
//	go run ./test/bench/cost/measure -batches 2 | go run ./test/bench/cost -in /dev/stdin # smoke
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idempotent-sqs/pipeline/test/internal/stats"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-sqs/pipeline/internal/ddbproxy"
	"github.com/idempotent-sqs/pipeline/internal/dynamolocal"
	"github.com/idempotent-sqs/pipeline/internal/lambdart"
	"github.com/idempotent-sqs/pipeline/internal/sqslocal"
	"github.com/idempotent-sqs/pipeline/internal/standin"
	"github.com/idempotent-sqs/pipeline/internal/standin/poller"
)

func main() {
	batches := flag.Int("batches", 20, "consumer batches per pass (new keys, then the same keys as duplicates)")
	batchSize := flag.Int("batch-size", 10, "the event source mapping's batch size (at most 10: one ReceiveMessage)")
	items := flag.Int("dispatch-items", 100, "most work items per dispatcher invocation")
	memory := flag.Int("memory", 256, "memory of both functions, MB (the constructs' default); reported to the function only")
	flag.Parse()
	if *batches < 1 || *batchSize < 1 || *batchSize > 10 || *items < 1 {
		fmt.Fprintln(os.Stderr, "measure: want -batches >= 1, 1 <= -batch-size <= 10, -dispatch-items >= 1")
		os.Exit(2)
	}
	if err := run(context.Background(), *batches, *batchSize, *items, *memory); err != nil {
		fmt.Fprintln(os.Stderr, "measure:", err)
		os.Exit(1)
	}
}

// Result is the measured input of the cost table (see test/bench/cost).
type Result struct {
	Machine  string       `json:"machine"`
	Measured string       `json:"measured"`
	Consumer ConsumerRun  `json:"consumer"`
	Dispatch []DispatchRn `json:"dispatcher"`
	// RecordBytes is the size of the completed records in the table, by DynamoDB's item
	// size rules (itemBytes): what storage and write units are charged by.
	RecordBytes Spread `json:"recordBytes"`
	Binaries    string `json:"binaries"`
	Labelling   string `json:"labelling"`
}

// ConsumerRun holds the per-record figures of the consumer's two passes.
type ConsumerRun struct {
	BatchSize int       `json:"batchSize"`
	New       PassStats `json:"new"`
	Duplicate PassStats `json:"duplicate"`
}

// PassStats is one pass: DynamoDB calls at the consumer, SQS calls of the poller.
type PassStats struct {
	Records          int            `json:"records"`
	Calls            map[string]int `json:"calls"` // DynamoDB, "Op" or "Op/step"
	WritesPerRecord  float64        `json:"writesPerRecord"`
	ReadsPerRecord   float64        `json:"readsPerRecord"`
	ReportedWCU      float64        `json:"reportedWriteUnits"`    // sum of ConsumedCapacity on successful writes
	WritesWithoutCCU int            `json:"writesWithoutCapacity"` // writes whose reply carried none (failed conditions)
	WCUPerRecord     float64        `json:"reportedWriteUnitsPerRecord"`
	Invocations      int            `json:"invocations"`
	ColdStarts       int            `json:"coldStarts"`   // not in invocationMs
	DurationMs       Spread         `json:"invocationMs"` // per warm batch, local
	Failures         int            `json:"batchItemFailures"`
	SQS              PollStats      `json:"sqs"`
}

// PollStats are the event source stand-in's SQS calls in one pass.
type PollStats struct {
	Calls             map[string]int `json:"calls"`
	ReceivesWithMsgs  int            `json:"receivesWithMessages"`
	EmptyReceives     int            `json:"emptyReceives"` // the idle long polls at the end of the pass, not per message
	ReceivePerMessage float64        `json:"receiveRequestsPerMessage"`
	DeletePerMessage  float64        `json:"deleteRequestsPerMessage"`
}

// DispatchRn is the dispatcher's figures on one queue type.
type DispatchRn struct {
	Queue          string         `json:"queue"`
	Items          int            `json:"itemsPerInvocation"`
	Invocations    int            `json:"invocations"`
	Messages       int            `json:"messages"`
	Calls          map[string]int `json:"calls"`
	RequestsPerMsg float64        `json:"sendRequestsPerMessage"`
	DurationMs     Spread         `json:"invocationMs"` // local
}

// Spread is a median with its min and max.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

func spread(ds []time.Duration) Spread {
	if len(ds) == 0 {
		return Spread{}
	}
	m, lo, hi := stats.Median(ds)
	ms := func(d time.Duration) float64 { return round(float64(d.Microseconds()) / 1000) }
	return Spread{Median: ms(m), Min: ms(lo), Max: ms(hi)}
}

func round(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

var (
	writeOps = map[string]bool{"PutItem": true, "UpdateItem": true, "DeleteItem": true, "BatchWriteItem": true, "TransactWriteItems": true}
	readOps  = map[string]bool{"GetItem": true, "Query": true, "Scan": true, "BatchGetItem": true, "TransactGetItems": true}
)

// bench is everything one run needs: the servers, the proxies, the functions.
type bench struct {
	batchSize, items int
	ddb              *ddbproxy.Proxy // consumer -> DynamoDB Local
	sendPx, pollPx   *ddbproxy.Proxy // dispatcher -> ElasticMQ, poller -> ElasticMQ
	dispatchers      map[string]*fn  // by queue type
	consumer         *fn
	poller           *poller.Poller
	queueURL         map[string]string

	mu    sync.Mutex
	wcu   float64
	noCCU int
	full  int    // receives that returned messages
	idle  func() // called on each empty receive reply
}

// fn is one execution environment with the durations and outcomes of its invocations.
type fn struct {
	env   *lambdart.Env
	mu    sync.Mutex
	durs  []time.Duration
	cold  int
	errs  []string
	lines []string // the last lines it wrote, for errors
}

func newFn(bin string, env map[string]string, memory int, name string) (*fn, error) {
	f := &fn{}
	e, err := lambdart.New(lambdart.Config{
		Binary: bin, Env: env, FunctionName: name, Timeout: 60 * time.Second, MemoryMB: memory,
		Region: sqslocal.Region, Output: f.output,
	})
	f.env = e
	return f, err
}

func (f *fn) output(line []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lines = append(f.lines, string(line))
	if len(f.lines) > 20 {
		f.lines = f.lines[1:]
	}
	if os.Getenv("MEASURE_VERBOSE") != "" {
		fmt.Fprintf(os.Stderr, "%s\n", line)
	}
}

// Invoke runs one invocation and records its duration; a function error is an error, as on
// the event source mapping.
func (f *fn) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	res, err := f.env.Invoke(ctx, payload)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil && res.FunctionError != nil {
		err = res.FunctionError
	}
	if err != nil {
		f.errs = append(f.errs, fmt.Sprintf("%v (last output: %s)", err, strings.Join(f.lines, " | ")))
		return nil, err
	}
	if res.ColdStart {
		f.cold++
	} else {
		f.durs = append(f.durs, res.Duration) // a cold start's duration is init + JIT, not the floor
	}
	return res.Payload, nil
}

// take returns and clears the recorded durations, cold starts and errors.
func (f *fn) take() (durs []time.Duration, cold int, errs []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	durs, cold, errs = f.durs, f.cold, f.errs
	f.durs, f.cold, f.errs = nil, 0, nil
	return
}

func run(ctx context.Context, batches, batchSize, items, memory int) error {
	tmp, err := os.MkdirTemp("", "cost-measure-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bins := map[string]string{}
	for _, name := range []string{"consumer", "dispatcher"} {
		bins[name] = filepath.Join(tmp, name, "bootstrap")
		if err := os.Mkdir(filepath.Dir(bins[name]), 0o755); err != nil {
			return err
		}
		if err := lambdart.Build(ctx, "github.com/idempotent-sqs/pipeline/functions/"+name, bins[name]); err != nil {
			return err
		}
	}

	ddbSrv, err := dynamolocal.Start()
	if err != nil {
		return err
	}
	defer ddbSrv.Stop()
	sqsSrv, err := sqslocal.StartKind(ctx, sqslocal.ElasticMQ)
	if err != nil {
		return err
	}
	defer sqsSrv.Stop()
	if err := ddbSrv.CreateTable(ctx, "idem", "id", ""); err != nil {
		return err
	}

	b := &bench{batchSize: batchSize, items: items, queueURL: map[string]string{}, dispatchers: map[string]*fn{}}
	if b.ddb, err = ddbproxy.New(ddbSrv.Endpoint()); err != nil {
		return err
	}
	defer b.ddb.Close()
	b.ddb.Rewrite = addReturnConsumedCapacity
	b.ddb.Observe = b.observeDynamo
	if b.sendPx, err = ddbproxy.New(sqsSrv.Endpoint()); err != nil {
		return err
	}
	defer b.sendPx.Close()
	if b.pollPx, err = ddbproxy.New(sqsSrv.Endpoint()); err != nil {
		return err
	}
	defer b.pollPx.Close()
	b.pollPx.Observe = b.observeReceive

	arns := map[string]string{}
	for q, attrs := range map[string]map[string]string{
		"standard": nil,
		"fifo":     {"FifoQueue": "true"},
	} {
		name := "bench"
		if q == "fifo" {
			name += ".fifo"
		}
		if b.queueURL[q], arns[q], err = sqsSrv.CreateQueue(ctx, name, attrs); err != nil {
			return err
		}
		if b.dispatchers[q], err = newFn(bins["dispatcher"], map[string]string{
			"QUEUE_URL": b.queueURL[q], "JOB_NAME": "bench",
			"AWS_ENDPOINT_URL_SQS": b.sendPx.URL,
		}, memory, "dispatcher-"+q); err != nil {
			return err
		}
		defer b.dispatchers[q].env.Close()
	}
	if b.consumer, err = newFn(bins["consumer"], map[string]string{
		"IDEMPOTENCY_TABLE_NAME": "idem", "AWS_ENDPOINT_URL_DYNAMODB": b.ddb.URL,
	}, memory, "consumer"); err != nil {
		return err
	}
	defer b.consumer.env.Close()
	b.poller = &poller.Poller{
		SQS:      sqsSrv.Client(func(o *sqs.Options) { o.BaseEndpoint = aws.String(b.pollPx.URL) }),
		QueueURL: b.queueURL["standard"], QueueARN: arns["standard"], Region: sqslocal.Region,
		Mapping: standin.Mapping{BatchSize: batchSize, ReportFailures: true},
		Envs:    []poller.Invoker{b.consumer},
	}

	// Warm-up: one batch of another period through dispatcher and consumer, so no measured
	// invocation is a cold start or meets DynamoDB Local's and ElasticMQ's cold JIT.
	warm := time.Date(2025, 3, 3, 0, 0, 0, 0, time.UTC)
	if _, err := b.dispatch(ctx, "standard", warm, "warm", batchSize); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	if _, err := b.drain(ctx, batchSize); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	if _, err := b.dispatch(ctx, "fifo", warm, "warm", min(items, batchSize)); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}

	res := Result{
		Machine:  fmt.Sprintf("%s, %d cores (shared), %s %s/%s", hostname(), runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH),
		Measured: time.Now().UTC().Format(time.RFC3339),
		Binaries: "functions/dispatcher and functions/consumer built like bundling (lambdart.Build: CGO_ENABLED=0 " +
			strings.Join(lambdart.BuildFlags, " ") + "), host architecture, run under lambdart's Runtime API",
		Labelling: "DynamoDB: DynamoDB Local behind a counting proxy that adds ReturnConsumedCapacity=TOTAL to writes. " +
			"SQS: ElasticMQ; the dispatcher's sends and the poller's (test/e2e Poller, the event source mapping's stand-in) " +
			"receives and deletes counted at proxies; the queue is filled before it is drained, so batches are full. " +
			"Durations: lambdart's per invocation (event handed out to response), warm only, local wall time on a shared machine, NOT Lambda durations.",
		Consumer: ConsumerRun{BatchSize: batchSize},
	}
	n := batches * batchSize
	scheduled := time.Date(2025, 3, 4, 0, 0, 0, 0, time.UTC)
	std := DispatchRn{Queue: "standard", Items: min(items, n), Calls: map[string]int{}}
	var stdDurs []time.Duration
	for i, pass := range []*PassStats{&res.Consumer.New, &res.Consumer.Duplicate} {
		// The same scheduled time both times: the second run is a retry of the first (another
		// execution id), so every key repeats.
		d, err := b.dispatch(ctx, "standard", scheduled, "run-"+strconv.Itoa(i), n)
		if err != nil {
			return err
		}
		std.Invocations += d.Invocations
		std.Messages += d.Messages
		for op, c := range d.Calls {
			std.Calls[op] += c
		}
		stdDurs = append(stdDurs, d.durs...)
		if *pass, err = b.drain(ctx, n); err != nil {
			return fmt.Errorf("consumer, %s pass: %w", []string{"new", "duplicate"}[i], err)
		}
	}
	std.RequestsPerMsg, std.DurationMs = perMessage(std.Calls, std.Messages), spread(stdDurs)
	fifo, err := b.dispatch(ctx, "fifo", scheduled, "run-0", n)
	if err != nil {
		return err
	}
	fifo.RequestsPerMsg, fifo.DurationMs = perMessage(fifo.Calls, fifo.Messages), spread(fifo.durs)
	res.Dispatch = []DispatchRn{std, fifo.DispatchRn}
	if res.RecordBytes, err = recordBytes(ctx, ddbSrv.Client(), "idem"); err != nil {
		return err
	}

	out, _ := json.MarshalIndent(res, "", "  ")
	fmt.Println(string(out))
	summary(res)
	return nil
}

func perMessage(calls map[string]int, msgs int) float64 {
	total := 0
	for _, c := range calls {
		total += c
	}
	return round(float64(total) / float64(msgs))
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}

// dispatched is one dispatch phase's figures with its raw durations.
type dispatched struct {
	DispatchRn
	durs []time.Duration
}

// dispatch runs the dispatcher of queue type q for one scheduled time until n items are sent,
// b.items per invocation, and returns its SQS calls.
func (b *bench) dispatch(ctx context.Context, q string, scheduled time.Time, execID string, n int) (dispatched, error) {
	f := b.dispatchers[q]
	f.take()
	b.sendPx.ResetCounts()
	d := dispatched{DispatchRn: DispatchRn{Queue: q, Items: min(b.items, n)}}
	for start, inv := 0, 0; start < n; start, inv = start+b.items, inv+1 {
		type item struct {
			ID      string          `json:"id"`
			Group   string          `json:"group,omitempty"`
			Payload json.RawMessage `json:"payload"`
		}
		ev := struct {
			ScheduledTime string `json:"scheduledTime"`
			ExecutionID   string `json:"executionId"`
			Job           string `json:"job"`
			Items         []item `json:"items"`
		}{ScheduledTime: scheduled.Format(time.RFC3339), ExecutionID: execID + "-" + strconv.Itoa(inv), Job: "bench"}
		for i := start; i < min(start+b.items, n); i++ {
			ev.Items = append(ev.Items, item{ID: fmt.Sprintf("item-%d", i), Group: fmt.Sprintf("tenant-%d", i%7),
				Payload: json.RawMessage(`{"order":{"id":` + strconv.Itoa(i) + `,"amount":"12.50"}}`)})
		}
		payload, _ := json.Marshal(ev)
		out, err := f.Invoke(ctx, payload)
		if err != nil {
			return d, fmt.Errorf("dispatcher %s: %w", q, err)
		}
		var s struct{ Items, Sent int }
		if err := json.Unmarshal(out, &s); err != nil || s.Sent != len(ev.Items) {
			return d, fmt.Errorf("dispatcher %s: summary %s, want %d sent", q, out, len(ev.Items))
		}
		d.Invocations++
		d.Messages += s.Sent
	}
	d.Calls = b.sendPx.Counts()
	d.durs, _, _ = f.take()
	return d, nil
}

// drain runs the poller until n more records have been deleted from the standard queue, and
// returns the pass's figures.
func (b *bench) drain(ctx context.Context, n int) (PassStats, error) {
	b.consumer.take()
	b.ddb.ResetCounts()
	b.pollPx.ResetCounts()
	b.mu.Lock()
	b.wcu, b.noCCU, b.full = 0, 0, 0
	b.mu.Unlock()
	st := &b.poller.Stats
	inv0, del0, failed0, errs0, calls0 := st.Invocations.Load(), st.Deleted.Load(), st.ReportedFailed.Load(), st.InvokeErrors.Load(), st.SQSCalls.Load()

	// The poller stops on the first empty receive after the last delete, from the proxy's
	// Observe, before that reply reaches it. Cancelling a receive that is still waiting would
	// not stop ElasticMQ's long poll: it would take a message of the next pass and hide it
	// for the visibility timeout.
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b.mu.Lock()
	b.idle = func() {
		if st.Deleted.Load()-del0 >= int64(n) {
			cancel()
		}
	}
	b.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- b.poller.Run(pctx) }()
	deadline := time.After(time.Duration(n)*time.Second + time.Minute)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var err error
	for stopped := false; !stopped; {
		select {
		case err = <-done:
			stopped = true
		case <-deadline:
			err = fmt.Errorf("%d of %d records deleted in time", st.Deleted.Load()-del0, n)
		case <-tick.C:
			if st.ReportedFailed.Load() > failed0 || st.InvokeErrors.Load() > errs0 {
				err = fmt.Errorf("%d batch item failures, %d failed invocations: the figures would not be the floor",
					st.ReportedFailed.Load()-failed0, st.InvokeErrors.Load()-errs0)
			}
		}
		if err != nil && !stopped {
			cancel()
			err = errors.Join(err, <-done)
			stopped = true
		}
	}
	durs, cold, ferrs := b.consumer.take()
	if len(ferrs) > 0 {
		err = errors.Join(err, fmt.Errorf("consumer: %s", strings.Join(ferrs, "; ")))
	}
	if err != nil {
		return PassStats{}, err
	}

	p := PassStats{Records: n, Calls: b.ddb.Counts(), Invocations: int(st.Invocations.Load() - inv0), ColdStarts: cold, DurationMs: spread(durs)}
	writes, reads := 0, 0
	for name, c := range p.Calls {
		op, _, _ := strings.Cut(name, "/")
		if writeOps[op] {
			writes += c
		}
		if readOps[op] {
			reads += c
		}
	}
	b.mu.Lock()
	p.ReportedWCU, p.WritesWithoutCCU = round(b.wcu), b.noCCU
	p.SQS = PollStats{Calls: b.pollPx.Counts(), ReceivesWithMsgs: b.full}
	b.mu.Unlock()
	p.WritesPerRecord = round(float64(writes) / float64(n))
	p.ReadsPerRecord = round(float64(reads) / float64(n))
	p.WCUPerRecord = round(p.ReportedWCU / float64(n))
	// Every other receive was an idle poll at the end of the pass, answered empty or cut
	// short when the pass ended.
	p.SQS.EmptyReceives = p.SQS.Calls["ReceiveMessage"] - p.SQS.ReceivesWithMsgs
	p.SQS.ReceivePerMessage = round(float64(p.SQS.ReceivesWithMsgs) / float64(n))
	p.SQS.DeletePerMessage = round(float64(p.SQS.Calls["DeleteMessageBatch"]) / float64(n))
	if got, want := int64(p.SQS.Calls["ReceiveMessage"]+p.SQS.Calls["DeleteMessageBatch"]), st.SQSCalls.Load()-calls0; got != want {
		return p, fmt.Errorf("the proxy saw %d poller calls, the poller made %d", got, want)
	}
	return p, nil
}

// addReturnConsumedCapacity asks DynamoDB Local to report the write units of every write.
func addReturnConsumedCapacity(c ddbproxy.Call, body []byte) []byte {
	if !writeOps[c.Op] {
		return body
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return body
	}
	m["ReturnConsumedCapacity"] = json.RawMessage(`"TOTAL"`)
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}

func (b *bench) observeDynamo(c ddbproxy.Call, r ddbproxy.Reply) {
	if !writeOps[c.Op] {
		return
	}
	var cc struct {
		ConsumedCapacity *struct{ CapacityUnits, WriteCapacityUnits float64 }
	}
	_ = json.Unmarshal(r.Body, &cc)
	b.mu.Lock()
	defer b.mu.Unlock()
	if cc.ConsumedCapacity != nil {
		b.wcu += max(cc.ConsumedCapacity.CapacityUnits, cc.ConsumedCapacity.WriteCapacityUnits)
	} else {
		b.noCCU++
	}
}

func (b *bench) observeReceive(c ddbproxy.Call, r ddbproxy.Reply) {
	if c.Op != "ReceiveMessage" || r.Status/100 != 2 {
		return
	}
	var out struct{ Messages []json.RawMessage }
	_ = json.Unmarshal(r.Body, &out)
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(out.Messages) > 0 {
		b.full++
	} else if b.idle != nil {
		b.idle()
	}
}

func summary(res Result) {
	c := res.Consumer
	fmt.Fprintf(os.Stderr, "completed records: %.0f bytes median (%.0f-%.0f) by DynamoDB's item size rules\n", res.RecordBytes.Median, res.RecordBytes.Min, res.RecordBytes.Max)
	fmt.Fprintf(os.Stderr, "consumer, batch size %d, fed by the e2e Poller from ElasticMQ; DynamoDB Local counted at a proxy:\n", c.BatchSize)
	for _, p := range []struct {
		name string
		s    PassStats
	}{{"new", c.New}, {"duplicate", c.Duplicate}} {
		fmt.Fprintf(os.Stderr, "  %-9s %d records in %d invocations: %.2f writes/record, %.2f reads/record, calls %v, reported WCU %.2f/record (%d writes reported none); "+
			"SQS %v = %.3f receives/message (+%d empty), %.3f deletes/message; invocation %.1f ms median (%.1f-%.1f), local\n",
			p.name, p.s.Records, p.s.Invocations, p.s.WritesPerRecord, p.s.ReadsPerRecord, p.s.Calls, p.s.WCUPerRecord, p.s.WritesWithoutCCU,
			p.s.SQS.Calls, p.s.SQS.ReceivePerMessage, p.s.SQS.EmptyReceives, p.s.SQS.DeletePerMessage,
			p.s.DurationMs.Median, p.s.DurationMs.Min, p.s.DurationMs.Max)
	}
	for _, d := range res.Dispatch {
		fmt.Fprintf(os.Stderr, "dispatcher %-8s %d messages in %d invocations (up to %d items): calls %v = %.3f send requests/message, invocation %.1f ms median (%.1f-%.1f), local\n",
			d.Queue, d.Messages, d.Invocations, d.Items, d.Calls, d.RequestsPerMsg, d.DurationMs.Median, d.DurationMs.Min, d.DurationMs.Max)
	}
	fmt.Fprintln(os.Stderr, "durations are local wall times on this machine, not Lambda durations")
}

// recordBytes scans table and returns the spread of its items' sizes.
func recordBytes(ctx context.Context, db *dynamodb.Client, table string) (Spread, error) {
	var sizes []float64
	p := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{TableName: aws.String(table)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return Spread{}, fmt.Errorf("scan %s for record sizes: %w", table, err)
		}
		for _, item := range page.Items {
			sizes = append(sizes, float64(itemBytes(item)))
		}
	}
	if len(sizes) == 0 {
		return Spread{}, fmt.Errorf("scan %s: no records", table)
	}
	slices.Sort(sizes)
	return Spread{Median: sizes[len(sizes)/2], Min: sizes[0], Max: sizes[len(sizes)-1]}, nil
}

// itemBytes is an item's size as DynamoDB counts it: each attribute's name in UTF-8 bytes
// plus its value (a string's UTF-8 bytes, a number's significant digits / 2 + 1, a binary's
// bytes, 1 for a boolean or null, 3 per list or map plus 1 per element plus the elements)
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html).
func itemBytes(item map[string]dbtypes.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueBytes(v)
	}
	return n
}

func valueBytes(v dbtypes.AttributeValue) int {
	switch v := v.(type) {
	case *dbtypes.AttributeValueMemberS:
		return len(v.Value)
	case *dbtypes.AttributeValueMemberN:
		digits := strings.TrimLeft(strings.NewReplacer("-", "", ".", "").Replace(v.Value), "0")
		return (len(strings.TrimRight(digits, "0"))+1)/2 + 1
	case *dbtypes.AttributeValueMemberB:
		return len(v.Value)
	case *dbtypes.AttributeValueMemberBOOL, *dbtypes.AttributeValueMemberNULL:
		return 1
	case *dbtypes.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueBytes(e)
		}
		return n
	case *dbtypes.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueBytes(e)
		}
		return n
	case *dbtypes.AttributeValueMemberSS:
		n := 0
		for _, e := range v.Value {
			n += len(e)
		}
		return n
	}
	return 0
}
