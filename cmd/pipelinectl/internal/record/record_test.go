package record

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/cli"
	"github.com/idempotent-sqs/pipeline/functions/idempotency"
	"github.com/idempotent-sqs/pipeline/internal/dynamolocal"
	"github.com/idempotent-sqs/pipeline/internal/testmain"
)

var ddb *dynamolocal.Server

// TestMain starts DynamoDB Local and points the commands at it, with test credentials and
// none of the user's AWS configuration.
func TestMain(m *testing.M) {
	os.Exit(testmain.With(m, func() (*dynamolocal.Server, error) {
		s, err := dynamolocal.Start()
		if err != nil {
			return nil, err
		}
		for k, v := range map[string]string{"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
			"AWS_ENDPOINT_URL_DYNAMODB": s.Endpoint(), "AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
			"AWS_EC2_METADATA_DISABLED": "true", "AWS_PROFILE": "", "AWS_ENDPOINT_URL": ""} {
			os.Setenv(k, v)
		}
		return s, nil
	}, &ddb))
}

// table is a pipeline's idempotency table and the outputs file that names it.
type table struct{ name, table, outputs string }

var tables atomic.Int64

// newTable creates an idempotency table for the pipeline Standard, and its outputs.
func newTable(t *testing.T) *table {
	t.Helper()
	p := &table{name: "Standard", table: fmt.Sprintf("idem-%d", tables.Add(1))}
	if err := ddb.CreateTable(t.Context(), p.table, "id", ""); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]map[string]string{"Stack": {
		"StandardQueueUrl": "http://sqs.invalid/1/work", "StandardDeadLetterQueueUrl": "http://sqs.invalid/1/dlq", "IdempotencyTableName": p.table}})
	p.outputs = filepath.Join(t.TempDir(), "outputs.json")
	if err := os.WriteFile(p.outputs, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *table) args(cmd ...string) []string {
	return append(cmd, "--outputs", p.outputs, "--pipeline", p.name)
}

// runRecord runs `pipelinectl record get|release ARGS` as main does: the exit status and
// the line main would print come from cli.Outcome.
func runRecord(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	run := map[string]func(context.Context, []string, cli.Streams, cli.Connector) error{"get": Get, "release": Release}[args[1]]
	if args[0] != "record" || run == nil {
		t.Fatalf("%q: not a record command", args)
	}
	var out, errOut bytes.Buffer
	code, line := cli.Outcome(t.Context(), run(t.Context(), args[2:], cli.Streams{Out: &out, Err: &errOut, Argv: args}, cli.NewAWS))
	if line != "" {
		fmt.Fprintf(&errOut, "pipelinectl: %s\n", line)
	}
	t.Logf("$ pipelinectl %s   (exit %d)\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
	return code, out.String(), errOut.String()
}

func mustRecord(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := runRecord(t, args...)
	if code != cli.ExitOK {
		t.Fatalf("pipelinectl %q: exit %d, %s", args, code, errOut)
	}
	return out
}

func wantContains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

// putLapsed writes the record of key as a crashed attempt 2 left it: INPROGRESS, owner
// "gone", its lock run out a minute ago.
func putLapsed(t *testing.T, p *table, key string) {
	t.Helper()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v int64) types.AttributeValue { return &types.AttributeValueMemberN{Value: fmt.Sprint(v)} }
	if _, err := ddb.Client().PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(p.table), Item: map[string]types.AttributeValue{
		"id": s(p.name + "#" + key), idempotency.AttrStatus: s(idempotency.StatusInProgress), idempotency.AttrOwner: s("gone"),
		idempotency.AttrAttempt: n(2), idempotency.AttrExpiration: n(time.Now().Add(time.Hour).Unix()),
		idempotency.AttrLockExpiration: n(time.Now().Add(-time.Minute).UnixMilli()),
	}}); err != nil {
		t.Fatal(err)
	}
}

// A live lock is refused naming its owner, --force releases it; a lapsed one is released
// without --force.
func TestRecordRelease(t *testing.T) {
	t.Parallel()
	p := newTable(t)
	g, err := idempotency.New(ddb.Client(), idempotency.Config{TableName: p.table, KeyPrefix: p.name, LockCap: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Run(t.Context(), idempotency.Request{Key: "live"}, func(ctx context.Context) ([]byte, error) {
		out := mustRecord(t, p.args("record", "get", "live")...)
		wantContains(t, "record get", out, "status   INPROGRESS", "attempt  1", ", live: owner ")
		owner := strings.Fields(out[strings.Index(out, "owner"):])[1]
		code, _, errOut := runRecord(t, p.args("record", "release", "live")...)
		if code != cli.ExitError {
			t.Errorf("release of a live lock: exit %d, want %d", code, cli.ExitError)
		}
		wantContains(t, "release refused", errOut, `owner "`+owner+`" holds a live lock until `, "(--force releases it)")
		code, out, errOut = runRecord(t, p.args("record", "release", "live", "--force")...)
		if code != cli.ExitOK {
			t.Errorf("forced release: exit %d", code)
		}
		wantContains(t, "forced release warning", errOut, "WARNING: released a LIVE lock: owner "+owner+` held "Standard#live" until `,
			"may still be running the effect; the next delivery of the key runs it again, possibly at the same time")
		wantContains(t, "forced release", out, `released "Standard#live": owner `+owner+", attempt 1; the next delivery of the key runs it as attempt 2")
		out = mustRecord(t, p.args("record", "get", "live")...)
		wantContains(t, "record get", out, "lock     released")
		return nil, nil
	})
	if err != nil {
		t.Fatalf("the owner's complete after a forced release (same owner, nothing took over) = %v", err)
	}

	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v int64) types.AttributeValue { return &types.AttributeValueMemberN{Value: fmt.Sprint(v)} }
	putLapsed(t, p, "crashed")
	out := mustRecord(t, "record", "get", "--id", "Standard#crashed", "--table", p.table)
	wantContains(t, "record get --id", out, "lapsed: the next delivery takes the record over")
	out = mustRecord(t, p.args("record", "release", "crashed")...)
	wantContains(t, "release", out, `released "Standard#crashed": owner gone, attempt 2; the next delivery of the key runs it as attempt 3`)
	if code, _, errOut := runRecord(t, p.args("record", "release", "crashed")...); code != cli.ExitError ||
		!strings.Contains(errOut, `release refused: record "Standard#crashed": the record is already released`) {
		t.Errorf("second release: exit %d, %q; want refused as already released", code, errOut)
	}

	// A record another runtime wrote, without an owner, under a live lock: --force is not
	// offered, and refused the same way, saying when the lock runs out.
	if _, err := ddb.Client().PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(p.table), Item: map[string]types.AttributeValue{
		"id": s("Standard#foreign"), idempotency.AttrStatus: s(idempotency.StatusInProgress),
		idempotency.AttrExpiration: n(time.Now().Add(time.Hour).Unix()), idempotency.AttrLockExpiration: n(time.Now().Add(time.Hour).UnixMilli()),
	}}); err != nil {
		t.Fatal(err)
	}
	out = mustRecord(t, p.args("record", "get", "foreign")...)
	wantContains(t, "record get of an ownerless record", out, "owner    (none)", "live: a consumer the record does not name (it has no owner) may be running the effect")
	for _, force := range []bool{false, true} {
		args := p.args("record", "release", "foreign")
		if force {
			args = append(args, "--force")
		}
		code, _, errOut := runRecord(t, args...)
		if code != cli.ExitError || strings.Contains(errOut, "(--force releases it)") ||
			!strings.Contains(errOut, "so a release cannot be fenced; --force cannot release it either (without an owner the release cannot be fenced): wait for its lock to run out at ") {
			t.Errorf("release of an ownerless record (force %v): exit %d, %q", force, code, errOut)
		}
	}

	// No record: the reasons it can be missing.
	code, _, errOut := runRecord(t, p.args("record", "get", "never")...)
	wantContains(t, "no record", errOut, `idempotency: no record: record "Standard#never". Either no message with this key ran in this pipeline, or its record expired`,
		`or the consumer's key prefix is not "Standard" (give --key-prefix, its IDEMPOTENCY_KEY_PREFIX)`)
	if code != cli.ExitError {
		t.Errorf("record get of no record: exit %d", code)
	}
	out = mustRecord(t, p.args("record", "get", "crashed", "--output", "json")...)
	var rec map[string]any
	if err := json.Unmarshal([]byte(out), &rec); err != nil || rec["id"] != "Standard#crashed" || rec["status"] != "INPROGRESS" || rec["lock"] != "released" || rec["attempt"] != 2.0 {
		t.Errorf("record get --output json = %v (%v)", rec, err)
	}
}
