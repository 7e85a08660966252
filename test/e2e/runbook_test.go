//go:build e2e

package e2e

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-sqs/pipeline/functions/idempotency"
)

// runbookCommand is one pipelinectl line of a shell block of docs/runbooks.md.
type runbookCommand struct {
	section, line string
}

// runbookCommands reads every `pipelinectl ...` line of the runbooks' sh blocks, with its
// section.
func runbookCommands(t *testing.T) []runbookCommand {
	t.Helper()
	f, err := os.Open("../../docs/runbooks.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []runbookCommand
	section, inSh := "", false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			section = strings.TrimPrefix(line, "## ")
		case line == "```sh":
			inSh = true
		case line == "```":
			inSh = false
		case inSh && strings.HasPrefix(line, "pipelinectl "):
			out = append(out, runbookCommand{section, line})
		}
	}
	return out
}

// TestRunbookCommands runs every pipelinectl command of docs/runbooks.md, as written, against
// a deployment on the local backends, so a runbook cannot drift from the CLI: each
// placeholder is replaced by what it names there (<stack> by the stack's name, whose
// outputs a CloudFormation stand-in answers DescribeStacks with), and each command must
// succeed, or refuse as the runbook says (a release of a record that needs none).
// Scheduler, Lambda, CloudWatch and CloudFormation, which have no local backend, are
// stand-ins over the deployed template and dispatcher.
func TestRunbookCommands(t *testing.T) {
	checkOnly(t)
	t.Parallel()
	w := newWorld(t, "runbook")
	w.watchAlarms()
	p := w.pipeline(false)
	vars, err := w.d.Env(p.Consumer)
	if err != nil {
		t.Fatal(err)
	}
	sch, err := w.d.Template.ScheduleFor(p.Dispatcher)
	if err != nil {
		t.Fatal(err)
	}
	fnName := w.functionName(p.Dispatcher)
	var invocations, getSchedules atomic.Int32
	mux := http.NewServeMux()
	handleGetSchedule(mux, w, sch, "schedule-"+w.d.Suffix, "group-"+w.d.Suffix, fnName, &getSchedules)
	handleInvoke(mux, w, fnName, w.env(p.Dispatcher, nil), &invocations)
	handleListMappings(mux, w, p, w.functionName(p.Consumer))
	var alarmCalls atomic.Int32
	handleDescribeAlarms(mux, w, &alarmCalls)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	env := []string{"AWS_ENDPOINT_URL_SCHEDULER=" + srv.URL, "AWS_ENDPOINT_URL_LAMBDA=" + srv.URL, "AWS_ENDPOINT_URL_CLOUDWATCH=" + srv.URL}
	const stack = "Pipeline-e2e"
	var describeCalls atomic.Int32
	cfn := httptest.NewServer(describeStacks(stack, map[string]string{
		"StandardQueueUrl": w.d.QueueURL[p.Queue], "StandardDeadLetterQueueUrl": w.d.QueueURL[p.DLQ], "StandardRecordTTL": vars["IDEMPOTENCY_RECORD_TTL"],
		"StandardConsumerFunctionName": w.functionName(p.Consumer), "IdempotencyTableName": vars["IDEMPOTENCY_TABLE_NAME"],
		"StandardDispatcherFunctionName": fnName, "StandardScheduleName": "schedule-" + w.d.Suffix, "StandardScheduleGroupName": "group-" + w.d.Suffix,
		"UnhealthyAlarmName": w.d.Template.Composites[0].LogicalID,
	}, &describeCalls))
	defer cfn.Close()
	env = append(env, "AWS_ENDPOINT_URL_CLOUDFORMATION="+cfn.URL)

	// What the runbooks look at: a message in the DLQ whose key a sample shows, and the record
	// of a key an attempt crashed holding (its lock run out).
	const key = "runbook-key"
	if _, err := w.sq.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(w.d.QueueURL[p.DLQ]), MessageBody: aws.String(body(key))}); err != nil {
		t.Fatal(err)
	}
	s := func(v string) dbtypes.AttributeValue { return &dbtypes.AttributeValueMemberS{Value: v} }
	n := func(v int64) dbtypes.AttributeValue { return &dbtypes.AttributeValueMemberN{Value: fmt.Sprint(v)} }
	stuck := func() {
		if _, err := w.db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(vars["IDEMPOTENCY_TABLE_NAME"]), Item: map[string]dbtypes.AttributeValue{
			"id": s(vars["IDEMPOTENCY_KEY_PREFIX"] + "#" + key), idempotency.AttrStatus: s(idempotency.StatusInProgress), idempotency.AttrOwner: s("crashed"),
			idempotency.AttrAttempt: n(1), idempotency.AttrExpiration: n(time.Now().Add(time.Hour).Unix()),
			idempotency.AttrLockExpiration: n(time.Now().Add(-time.Minute).UnixMilli()),
		}}); err != nil {
			t.Fatal(err)
		}
	}
	stuck()

	schedDLQ := w.d.Template.Schedules[0].DeadLetter
	for _, sc := range w.d.Template.Schedules {
		if sc.Function == p.Dispatcher {
			schedDLQ = sc.DeadLetter
		}
	}
	placeholders := map[string]string{
		"<stack>":                    stack,
		"<pipeline>":                 "Standard",
		"<key from a sample's body>": key,
		"<key>":                      key,
		"<failure queue url>":        w.d.QueueURL[w.d.Template.InvokeConfigs[p.Dispatcher].OnFailureQueue],
		"<schedule DLQ url>":         w.d.QueueURL[schedDLQ],
	}
	// No local stand-in: the undelivered-notifications queue exists only with alarm emails,
	// which the e2e stack has none of.
	skip := map[string]string{"<undelivered queue url>": "the e2e stack has no alarm emails, so no undelivered-notifications queue"}
	leftover := regexp.MustCompile(`<[^>]+>`)
	ran := map[string][]string{}
	var skipped []string
	for _, c := range runbookCommands(t) {
		line := c.line
		if i := strings.Index(line, "  #"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		for k, v := range placeholders {
			line = strings.ReplaceAll(line, k, v)
		}
		if ph := leftover.FindString(line); ph != "" {
			if why, ok := skip[ph]; ok {
				skipped = append(skipped, fmt.Sprintf("%s: %s (%s)", c.section, c.line, why))
				continue
			}
			t.Errorf("%s: %q: placeholder %s has no value in this test: add it, or fix the runbook", c.section, c.line, ph)
			continue
		}
		var stopConsumer func()
		if strings.HasPrefix(line, "pipelinectl verify ") {
			// verify's probes need a running consumer; the other commands run with none, so
			// the records and messages they look at stay as the test made them. The consumer
			// also takes the key the DLQ section redrove, and completes its record: the
			// stuck record is put back for the sections after.
			_, stopConsumer = w.poll(p, 1)
		}
		code, out := runCtlEnv(t, env, strings.Fields(line)[1:]...)
		if stopConsumer != nil {
			stopConsumer()
			stuck()
		}
		ok := code == 0
		switch {
		case strings.Contains(line, "record release"):
			// The record's lock ran out: released at the first, refused as already released
			// after.
			ok = code == 0 || code == 1 && strings.Contains(out, "already released")
		case strings.HasPrefix(line, "pipelinectl status "):
			// Paged, status finds what is wrong (the message the test put in the DLQ): exit 1
			// naming it is status doing its job; a failure to read is not.
			ok = code == 0 || code == 1 && strings.Contains(out, "need a look") && strings.Contains(out, "  PROBLEM   ")
		}
		if !ok {
			t.Errorf("%s: %s: exit %d\n%s", c.section, c.line, code, out)
		}
		ran[c.section] = append(ran[c.section], c.line)
	}
	withStack := 0
	for _, lines := range ran {
		for _, l := range lines {
			if strings.Contains(l, "--stack <stack>") {
				withStack++
			}
		}
	}
	if int(describeCalls.Load()) < withStack {
		t.Errorf("%d runbook lines name --stack, but CloudFormation's DescribeStacks was called %d times", withStack, describeCalls.Load())
	}
	var sections []string
	total := 0
	for sec, lines := range ran {
		sections = append(sections, fmt.Sprintf("%s (%d)", sec, len(lines)))
		total += len(lines)
	}
	if total < 10 {
		t.Errorf("ran %d runbook commands, want every one (>= 10): does runbookCommands still parse the runbooks?", total)
	}
	if invocations.Load() != 4 {
		t.Errorf("the runbooks invoked the dispatcher %d times, want 4: backfill --yes for 3 hourly occurrences, and verify's probe", invocations.Load())
	}
	report(t, "%d runbook commands ran as written, by section: %s; not run: %s", total, strings.Join(slices.Sorted(slices.Values(sections)), ", "), strings.Join(skipped, "; "))
}

// describeStacks serves CloudFormation's DescribeStacks (the query protocol) for one stack,
// with its outputs, as CloudFormation answers it; another stack's name is refused as
// CloudFormation refuses it. calls counts the calls it answered with the stack.
func describeStacks(stack string, outputs map[string]string, calls *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if r.Form.Get("Action") != "DescribeStacks" || !strings.Contains(r.Header.Get("Authorization"), "/cloudformation/aws4_request") {
			http.Error(rw, `<ErrorResponse><Error><Code>AccessDenied</Code></Error></ErrorResponse>`, http.StatusForbidden)
			return
		}
		if name := r.Form.Get("StackName"); name != stack {
			rw.Header().Set("Content-Type", "text/xml")
			rw.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(rw, `<ErrorResponse><Error><Type>Sender</Type><Code>ValidationError</Code><Message>Stack with id %s does not exist</Message></Error></ErrorResponse>`, name)
			return
		}
		calls.Add(1)
		var b strings.Builder
		fmt.Fprintf(&b, `<DescribeStacksResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><DescribeStacksResult><Stacks><member>`+
			`<StackName>%s</StackName><StackStatus>UPDATE_COMPLETE</StackStatus><CreationTime>2026-11-01T00:00:00Z</CreationTime><Outputs>`, stack)
		for _, k := range slices.Sorted(maps.Keys(outputs)) {
			b.WriteString("<member><OutputKey>" + k + "</OutputKey><OutputValue>")
			xml.EscapeText(&b, []byte(outputs[k]))
			b.WriteString("</OutputValue></member>")
		}
		b.WriteString(`</Outputs></member></Stacks></DescribeStacksResult></DescribeStacksResponse>`)
		rw.Header().Set("Content-Type", "text/xml")
		io.WriteString(rw, b.String())
	})
}
