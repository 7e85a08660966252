package health

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/cli"
	"github.com/idempotent-sqs/pipeline/functions/contract"
	"github.com/idempotent-sqs/pipeline/functions/idempotency"
)

// VerifyUsage is `pipelinectl help verify`.
const VerifyUsage = `pipelinectl verify: prove after a deploy that each pipeline works end to end.

  For each pipeline of the stack (or --pipeline), it sends two probe messages with the same
  PipelineProbe attribute to the pipeline's queue and waits for the consumer to complete the
  idempotency record of the probe's key (pipelinectl-probe-<id>). The consumer takes a probe
  through everything but the business effect: the queue and its key, the event source
  mapping, the function, its access to the table. The second probe is a duplicate. Then it
  checks that the DLQ did not grow. A pipeline with a dispatcher (its output
  <Pipeline>DispatcherFunctionName) is then asked, by a synchronous invocation with
  {"probe": ID}, to send one probe itself: that proves the dispatcher can send to the queue.

  When a probe does not complete in --timeout, it says what failed, from what it saw: the
  dispatcher could not send (its error), nothing received the probes (the event source
  mapping is disabled or missing), the consumer received them but wrote no record (it
  cannot write the table), the record was acquired but not completed, or the probes went to
  the DLQ.

  Then it reads the stack's paging alarms (the children of the composite alarms its outputs
  UnhealthyAlarmName and <Pipeline>UnhealthyAlarmName name) and fails on any in ALARM, with its reason and runbook. A
  heartbeat alarm in ALARM of a pipeline whose probes just completed is a note: right after
  the first deploy no heartbeat has completed yet. Exit 0 when every pipeline passed and no
  paging alarm is in ALARM, 1 otherwise, 3 when interrupted: for a CI/CD step after cdk
  deploy.

  What it leaves: the probe records, which expire with the consumer's record TTL; after a
  failure, the probes themselves, on the queue or in its DLQ (attribute PipelineProbe).

  --timeout D          how long to wait for each pipeline's probe (default 2m)
  --output json        each pipeline's result (probe, time taken, alarms, failure) as one
                       JSON document on stdout (the text goes to stderr)
  --key-prefix PREFIX  the consumer's IDEMPOTENCY_KEY_PREFIX (default: output <Pipeline>KeyPrefix, else the pipeline name)
`

type verifyResult struct {
	Pipeline string        `json:"pipeline"`
	OK       bool          `json:"ok"`
	Took     time.Duration `json:"tookNanoseconds"`
	Probe    string        `json:"probe"`
	// Dispatcher reports that the dispatcher's probe completed too.
	Dispatcher bool   `json:"dispatcher"`
	Failure    string `json:"failure,omitempty"`
	// Alarms are the pipeline's paging alarms in ALARM (each fails it); Notes its heartbeat
	// alarm in ALARM although its probes completed (no failure).
	Alarms []Alarm `json:"alarmsInAlarm,omitempty"`
	Notes  []Alarm `json:"notes,omitempty"`
}

// Verify is `pipelinectl verify ARGS`.
func Verify(ctx context.Context, args []string, w cli.Streams, connect cli.Connector) error {
	fs, c := cli.NewFlags("verify", VerifyUsage, w.Out)
	timeout := fs.Duration("timeout", 2*time.Minute, "how long to wait for each probe")
	keyPrefix := fs.String("key-prefix", "", "the consumer's key prefix (default: output <Pipeline>KeyPrefix, else the pipeline name)")
	cli.OutputFlag(fs, c)
	if err := cli.ParseNoArgs(fs, args); err != nil {
		return err
	}
	if err := c.CheckOutput(); err != nil {
		return err
	}
	if *timeout < 5*time.Second || *timeout > 30*time.Minute {
		return cli.Usagef("--timeout %s: use 5s to 30m", *timeout)
	}
	out := w.Text(c)
	cl, outputs, names, err := c.StackPipelines(ctx, connect, "verify")
	if err != nil {
		return err
	}
	var results []verifyResult
	failed := 0
	for _, p := range names {
		if ctx.Err() != nil {
			break
		}
		r := verifyPipeline(ctx, cl, outputs, p, cmp.Or(*keyPrefix, cli.KeyPrefix(outputs, p)), *timeout, out)
		results = append(results, r)
		if r.OK {
			via := ""
			if r.Dispatcher {
				via = ", and the dispatcher's"
			}
			fmt.Fprintf(out, "%-12s OK: probe %s completed%s, in %s; the DLQ did not grow\n", p, r.Probe, via, r.Took.Round(10*time.Millisecond))
		} else {
			failed++
			fmt.Fprintf(out, "%-12s FAILED: %s\n", p, r.Failure)
		}
	}
	alarmsFailed := 0
	var alarmsErr error
	if ctx.Err() == nil {
		alarmsFailed, alarmsErr = verifyAlarms(ctx, cl, outputs, c.Pipeline, results, out)
		failed += alarmsFailed
	}
	if c.Output == "json" {
		cli.WriteJSON(w.Out, results)
	}
	switch {
	case ctx.Err() != nil:
		return &cli.NotDone{Why: fmt.Sprintf("interrupted after %d of %d pipelines", len(results), len(names))}
	case failed > alarmsFailed:
		return fmt.Errorf("verify: %d of %d pipelines failed", failed-alarmsFailed, len(names))
	case alarmsErr != nil:
		return fmt.Errorf("verify: the probes passed, but the alarms could not be read: %w", alarmsErr)
	case failed > 0:
		return fmt.Errorf("verify: %d paging alarms in ALARM", alarmsFailed)
	}
	return nil
}

// verifyAlarms checks that no paging alarm of the stack is in ALARM (the children of its
// composite alarm, output UnhealthyAlarmName), prints what it found, records the alarms in
// the results, and returns how many are in ALARM, or why it could not read them. A heartbeat
// alarm of a pipeline whose probes just completed is a note, not a failure.
func verifyAlarms(ctx context.Context, cl *cli.Clients, outputs map[string]string, only string, results []verifyResult, out io.Writer) (int, error) {
	var ps []string
	for _, r := range results {
		ps = append(ps, r.Pipeline)
	}
	composites := cli.Composites(outputs, ps)
	if len(composites) == 0 {
		fmt.Fprintf(out, "%-12s not checked: the outputs name no composite alarm (%s or <Pipeline>%s: monitoring.Outputs and pipeline.Outputs add them); check the pipeline's alarms in CloudWatch\n",
			"alarms", cli.OutUnhealthy, cli.OutUnhealthy)
		return 0, nil
	}
	composite := strings.Join(composites, ", ")
	passed := map[string]bool{}
	for _, r := range results {
		passed[r.Pipeline] = r.OK
	}
	checked, failures, notes, err := checkAlarms(ctx, cl.REST, composites, only, passed)
	if err != nil {
		err = fmt.Errorf("cannot read the alarms of %s: %v (pipelinectl's cloudwatch:DescribeAlarms on *)", composite, cli.Explain(err))
		fmt.Fprintf(out, "%-12s FAILED: %v\n", "alarms", err)
		return 0, err
	}
	for _, a := range notes {
		fmt.Fprintf(out, "%-12s note: alarm %s is in ALARM for want of heartbeats (%s). The probes above completed, so it clears once a heartbeat completes, within one interval; if it stays, the heartbeat's own send fails: %s\n",
			a.label(), a.Name, a.Reason, a.runbook())
	}
	for _, a := range failures {
		fmt.Fprintf(out, "%-12s FAILED: alarm %s is in ALARM: %s. Runbook: %s\n", cmp.Or(a.label(), "alarms"), a.Name, a.Reason, a.runbook())
	}
	for i := range results {
		for _, a := range failures {
			if a.label() == results[i].Pipeline {
				results[i].OK = false
				results[i].Alarms = append(results[i].Alarms, a)
			}
		}
		for _, a := range notes {
			if a.label() == results[i].Pipeline {
				results[i].Notes = append(results[i].Notes, a)
			}
		}
	}
	switch {
	case len(failures) == 0 && len(notes) == 0:
		fmt.Fprintf(out, "%-12s OK: none of the %d paging alarms of %s is in ALARM\n", "alarms", checked, composite)
	case len(failures) == 0:
		fmt.Fprintf(out, "%-12s OK: none of the %d paging alarms of %s is in ALARM but the heartbeat noted above\n", "alarms", checked, composite)
	}
	return len(failures), nil
}

// verifyPipeline sends pipeline p's probes and waits for their record.
func verifyPipeline(ctx context.Context, cl *cli.Clients, outputs map[string]string, p, prefix string, timeout time.Duration, out io.Writer) verifyResult {
	r := verifyResult{Pipeline: p}
	fail := func(format string, args ...any) verifyResult {
		r.Failure = fmt.Sprintf(format, args...)
		return r
	}
	src, dlqURL, table, fn := outputs[p+cli.OutQueueURL], outputs[p+cli.OutDLQURL], cli.PipelineOutput(outputs, p, cli.OutTableName), outputs[p+cli.OutConsumer]
	if src == "" || table == "" {
		return fail("the outputs lack %s%s, or both %s%s and %s", p, cli.OutQueueURL, p, cli.OutTableName, cli.OutTableName)
	}
	srcQ, err := cli.GetQueue(ctx, cl.SQS, src)
	if err != nil {
		return fail("%v", err)
	}
	dlqBefore, err := cli.GetQueue(ctx, cl.SQS, dlqURL)
	if err != nil {
		return fail("%v", err)
	}
	admin, composite, err := openAdmin(ctx, cl, table, prefix)
	if err != nil {
		return fail("%v", err)
	}
	id := newProbeID()
	r.Probe = contract.ProbeKeyPrefix + id
	if err := sendProbe(ctx, cl.SQS, srcQ, id); err != nil {
		return fail("cannot send a probe to %s: %v (pipelinectl's sqs:SendMessage on the queue, and kms:GenerateDataKey on its key if it has a customer managed one)", src, cli.Explain(err))
	}
	fmt.Fprintf(out, "%-12s probes %s sent to %s; waiting up to %s for its record\n", p, r.Probe, src, timeout)
	w := probeWait{cl: cl, admin: admin, composite: composite, src: src, dlqURL: dlqURL, table: table, consumerFn: fn, dlqBefore: dlqBefore.Visible, timeout: timeout}
	took, why := w.wait(ctx, id)
	if why != "" {
		return fail("%s", why)
	}
	r.Took = took

	// The dispatcher: one probe sent by it, through the same consumer.
	if dfn := outputs[p+cli.OutDispatcher]; dfn != "" {
		id := newProbeID()
		event := fmt.Sprintf(`{"probe":%q}`, id)
		hdr, resp, err := cl.REST.Call(ctx, "lambda", "Invoke", http.MethodPost, "/2015-03-31/functions/"+url.PathEscape(dfn)+"/invocations",
			http.Header{"X-Amz-Invocation-Type": {"RequestResponse"}, "Content-Type": {"application/json"}}, []byte(event))
		switch {
		case err != nil:
			return fail("cannot invoke the dispatcher %s: %v (pipelinectl's lambda:InvokeFunction on it)", dfn, cli.Explain(err))
		case hdr.Get("X-Amz-Function-Error") != "":
			return fail("the dispatcher %s could not send its probe to %s: %s: its role needs sqs:SendMessage on the queue (and kms:GenerateDataKey on the queue's key if it has a customer managed one)",
				dfn, src, cli.Truncate(strings.TrimSpace(string(resp)), 300))
		}
		fmt.Fprintf(out, "%-12s dispatcher %s sent probe %s%s; waiting for its record\n", p, dfn, contract.ProbeKeyPrefix, id)
		took, why := w.wait(ctx, id)
		if why != "" {
			return fail("the dispatcher sent its probe, but: %s", why)
		}
		r.Took += took
		r.Dispatcher = true
	}
	r.OK = true
	return r
}

// sendProbe sends the probe id to q twice: the consumer must complete it once and take the
// copy for a duplicate (on FIFO, two deduplication ids, so SQS delivers both).
func sendProbe(ctx context.Context, api *sqs.Client, q cli.QueueInfo, id string) error {
	for i := 1; i <= 2; i++ {
		in := &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String(contract.ProbeBody(id, "pipelinectl verify")),
			MessageAttributes: map[string]types.MessageAttributeValue{contract.AttrProbe: {DataType: aws.String("String"), StringValue: aws.String(id)}}}
		if q.FIFO {
			in.MessageGroupId, in.MessageDeduplicationId = aws.String(contract.ProbeGroup), aws.String(id+"-"+strconv.Itoa(i))
		}
		if _, err := api.SendMessage(ctx, in); err != nil {
			return err
		}
	}
	return nil
}

func newProbeID() string {
	b := make([]byte, 4)
	rand.Read(b)
	return strconv.FormatInt(time.Now().Unix(), 10) + "-" + hex.EncodeToString(b)
}

// probeWait waits for probes' records on one pipeline, and says what failed when one does
// not complete.
type probeWait struct {
	cl                             *cli.Clients
	admin                          *idempotency.Admin
	composite                      bool
	src, dlqURL, table, consumerFn string
	dlqBefore                      int64
	timeout                        time.Duration
}

// wait returns how long the record of probe id took to complete, or why it did not.
func (w probeWait) wait(ctx context.Context, id string) (time.Duration, string) {
	rid := idempotency.RecordID{Key: contract.ProbeKeyPrefix + id}
	if w.composite {
		rid.Tenant = contract.ProbeTenant
	}
	start := time.Now()
	var received bool
	var last *idempotency.RecordInfo
	for {
		ri, err := w.admin.Get(ctx, rid)
		switch {
		case err == nil && ri.Status == idempotency.StatusCompleted:
			took := time.Since(start)
			// The duplicate follows; a DLQ that grew meanwhile is reported (it may be other
			// traffic's, which is worth a look too).
			cli.Pause(ctx, 2*time.Second)
			if after, err := cli.GetQueue(ctx, w.cl.SQS, w.dlqURL); err == nil && after.Visible > w.dlqBefore {
				return took, fmt.Sprintf("the probe completed, but the DLQ grew from %d to %d messages meanwhile: pipelinectl dlq inspect", w.dlqBefore, after.Visible)
			}
			return took, ""
		case err == nil:
			last = ri
		case !errors.Is(err, idempotency.ErrNoRecord):
			return 0, fmt.Sprintf("reading the probe's record: %v", cli.Explain(err))
		}
		if q, err := cli.GetQueue(ctx, w.cl.SQS, w.src); err == nil && q.InFlight > 0 {
			received = true
		}
		if time.Since(start) > w.timeout {
			break
		}
		if !cli.Pause(ctx, time.Second) {
			return 0, "interrupted"
		}
	}
	q, _ := cli.GetQueue(ctx, w.cl.SQS, w.src)
	dlqAfter, _ := cli.GetQueue(ctx, w.cl.SQS, w.dlqURL)
	mapping := fmt.Sprintf("aws lambda list-event-source-mappings --function-name %s --query 'EventSourceMappings[].[State,StateTransitionReason,LastProcessingResult]'", cmp.Or(w.consumerFn, "<consumer>"))
	switch {
	case dlqAfter.Visible > w.dlqBefore:
		return 0, fmt.Sprintf("the probes went to the DLQ (%d -> %d messages) instead of completing: the consumer failed them until maxReceiveCount; its log says why (record outcome with probe=true)",
			w.dlqBefore, dlqAfter.Visible)
	case last != nil:
		return 0, fmt.Sprintf("the consumer acquired the probe's record (owner %s, attempt %d) but did not complete it in %s: it cannot finish writing the table %s, or its invocations time out; its log says which",
			last.Owner, last.Attempt, w.timeout, w.table)
	case received:
		return 0, fmt.Sprintf("the consumer received the probes but wrote no record in %s: it cannot write the table %s (dynamodb:UpdateItem; kms:Decrypt and kms:GenerateDataKey on the table's key if it has a customer managed one); its log: record outcome store_error with probe=true",
			w.timeout, w.table)
	case q.Visible > 2:
		return 0, fmt.Sprintf("the probes wait behind %d visible messages on %s after %s and were never received: either the consumer is far behind, or nothing receives from the queue (%s); rerun with a longer --timeout once the backlog is understood",
			q.Visible, w.src, w.timeout, mapping)
	}
	return 0, fmt.Sprintf("nothing received the probes from %s in %s: the consumer's event source mapping is disabled or missing, or the function cannot run (throttled to 0 reserved concurrency, deleted): %s",
		w.src, w.timeout, mapping)
}

// openAdmin reads the table's key schema and returns an Admin for records of prefix, and
// whether the table is composite (a sort key: records have tenants).
func openAdmin(ctx context.Context, cl *cli.Clients, table, prefix string) (*idempotency.Admin, bool, error) {
	cfg, err := cli.TableConfig(ctx, cl, table, prefix)
	if err != nil {
		return nil, false, err
	}
	a, err := idempotency.NewAdmin(cl.DynamoDB, cfg)
	return a, cfg.SortKeyAttr != "", err
}
