package record

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/cli"
	"github.com/idempotent-sqs/pipeline/functions/idempotency"
)

// recordFlags are the flags of record get and record release.
type recordFlags struct {
	*cli.Common
	id, sortKey, tenant, keyPrefix string
	prefix                         string // the key prefix used: --key-prefix, the outputs' <Pipeline>KeyPrefix, or --pipeline
}

func newRecordFlags(name string, stdout io.Writer) (*flag.FlagSet, *recordFlags) {
	fs, c := cli.NewFlags(name, Usage, stdout)
	r := &recordFlags{Common: c}
	fs.StringVar(&r.id, "id", "", "the record's partition key value")
	fs.StringVar(&r.sortKey, "sort-key", "", "the record's sort key value (with --id)")
	fs.StringVar(&r.tenant, "tenant", "", "the key's tenant (composite layout)")
	fs.StringVar(&r.keyPrefix, "key-prefix", "", "the consumer's key prefix (default: the outputs' <Pipeline>KeyPrefix, else the pipeline)")
	return fs, r
}

// admin resolves the table and its key schema and returns the Admin and the record's id.
func (r *recordFlags) admin(ctx context.Context, cmd string, pos []string, connect cli.Connector) (*idempotency.Admin, idempotency.RecordID, error) {
	var id idempotency.RecordID
	switch {
	case r.id != "" && len(pos) > 0:
		return nil, id, cli.Usagef("%s: give KEY or --id, not both", cmd)
	case r.id == "" && len(pos) != 1:
		return nil, id, cli.Usagef("%s needs one KEY (or --id RAW_ID), got %d arguments", cmd, len(pos))
	case r.id != "" && (r.tenant != "" || r.keyPrefix != ""):
		return nil, id, cli.Usagef("%s: --id is the whole id: --tenant and --key-prefix go with KEY", cmd)
	case r.id == "" && r.sortKey != "":
		return nil, id, cli.Usagef("%s: --sort-key goes with --id; with KEY, give --tenant", cmd)
	}
	prefix := cmp.Or(r.keyPrefix, r.Pipeline)
	if r.id == "" && prefix == "" {
		return nil, id, cli.Usagef("%s: whose KEY? Give --pipeline (the key prefix is its output <Pipeline>KeyPrefix, else the pipeline's name) or --key-prefix, or --id", cmd)
	}
	cl, err := connect(ctx, r.Common)
	if err != nil {
		return nil, id, err
	}
	if r.keyPrefix == "" && r.Pipeline != "" {
		// The consumer's own prefix, when the outputs give it (pipeline.Outputs does): a
		// library stack's pipeline may be named otherwise than its consumer's prefix.
		if outputs, _, err := r.StackOutputs(ctx, cl); err == nil {
			prefix = cli.KeyPrefix(outputs, r.Pipeline)
		}
	}
	r.prefix = prefix
	table, err := r.TableName(ctx, cl)
	if err != nil {
		return nil, id, err
	}
	cfg, err := cli.TableConfig(ctx, cl, table, prefix)
	if err != nil {
		return nil, id, err
	}
	if r.id == "" && cfg.SortKeyAttr == "" && r.tenant != "" {
		return nil, id, cli.Usagef("%s: --tenant %q, but table %s has no sort key (no tenants)", cmd, r.tenant, table)
	}
	a, err := idempotency.NewAdmin(cl.DynamoDB, cfg)
	if err != nil {
		return nil, id, err
	}
	if r.id != "" {
		return a, idempotency.RecordID{ID: r.id, SortKey: r.sortKey}, nil
	}
	return a, idempotency.RecordID{Key: pos[0], Tenant: r.tenant}, nil
}

// Get is `pipelinectl record get ARGS`.
func Get(ctx context.Context, args []string, w cli.Streams, connect cli.Connector) error {
	fs, r := newRecordFlags("record get", w.Out)
	cli.OutputFlag(fs, r.Common)
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if err := r.CheckOutput(); err != nil {
		return err
	}
	a, id, err := r.admin(ctx, "record get", pos, connect)
	if err != nil {
		return err
	}
	ri, err := a.Get(ctx, id)
	if err != nil {
		return r.noRecordHint(err)
	}
	if r.Output == "json" {
		cli.WriteJSON(w.Out, recordJSON(ri, time.Now()))
		return nil
	}
	printRecord(w.Out, ri, time.Now())
	return nil
}

// noRecordHint adds to ErrNoRecord the reasons a record can be missing.
func (r *recordFlags) noRecordHint(err error) error {
	if !errors.Is(err, idempotency.ErrNoRecord) {
		return err
	}
	if r.id != "" {
		return fmt.Errorf("%w. Is the id whole (<key prefix>#<key>, as the table holds it)? Or the message never ran, or its record expired (TTL)", err)
	}
	return fmt.Errorf("%w. Either no message with this key ran in this pipeline, or its record expired (the consumer's IDEMPOTENCY_RECORD_TTL), "+
		"or the consumer's key prefix is not %q (give --key-prefix, its IDEMPOTENCY_KEY_PREFIX), or the key is another pipeline's (--pipeline)",
		err, r.prefix)
}

// Release is `pipelinectl record release ARGS`.
func Release(ctx context.Context, args []string, w cli.Streams, connect cli.Connector) error {
	fs, r := newRecordFlags("record release", w.Out)
	force := fs.Bool("force", false, "release a live lock")
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	a, id, err := r.admin(ctx, "record release", pos, connect)
	if err != nil {
		return err
	}
	now := time.Now()
	ri, err := a.Release(ctx, id, idempotency.ReleaseOptions{Force: *force})
	switch {
	case errors.Is(err, idempotency.ErrReleaseRefused) && ri != nil && ri.Owner == "" && ri.LockLive(now):
		return fmt.Errorf("%w; --force cannot release it either (without an owner the release cannot be fenced): wait for its lock to run out at %s, "+
			"and the next delivery takes it over", err, ri.LockExpires.UTC().Format(time.RFC3339))
	case errors.Is(err, idempotency.ErrReleaseRefused) && ri != nil && ri.LockLive(now) && !*force:
		return fmt.Errorf("%w (--force releases it)", err)
	case err != nil:
		return r.noRecordHint(err)
	}
	if *force && ri.LockLive(now) {
		fmt.Fprintf(w.Err, "WARNING: released a LIVE lock: owner %s held %s until %s (%s from now) and may still be running the effect; "+
			"the next delivery of the key runs it again, possibly at the same time\n",
			ri.Owner, recordName(ri), ri.LockExpires.UTC().Format(time.RFC3339Nano), ri.LockExpires.Sub(now).Round(time.Second))
	}
	fmt.Fprintf(w.Out, "released %s: owner %s, attempt %d; the next delivery of the key runs it as attempt %d\n",
		recordName(ri), ri.Owner, ri.Attempt, ri.Attempt+1)
	return nil
}

// recordJSON is record get's --output json.
func recordJSON(ri *idempotency.RecordInfo, now time.Time) map[string]any {
	j := map[string]any{"id": ri.ID, "status": ri.Status, "owner": ri.Owner, "attempt": ri.Attempt,
		"expires": ri.Expires.UTC(), "expired": ri.Expired(now), "lockLive": ri.LockLive(now),
		"payloadSha256": ri.PayloadHash, "resultBytes": ri.ResultBytes, "resultDropped": ri.ResultDropped}
	if ri.SortKey != "" {
		j["sortKey"] = ri.SortKey
	}
	switch {
	case ri.LockExpires.IsZero():
		j["lock"] = "none"
	case ri.LockExpires.UnixMilli() == 0:
		j["lock"] = "released"
	default:
		j["lockExpires"] = ri.LockExpires.UTC()
	}
	return j
}

func recordName(ri *idempotency.RecordInfo) string {
	if ri.SortKey != "" {
		return fmt.Sprintf("%q / %q", ri.ID, ri.SortKey)
	}
	return fmt.Sprintf("%q", ri.ID)
}

// printRecord shows a record with its times as UTC and relative to now.
func printRecord(w io.Writer, ri *idempotency.RecordInfo, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	at := func(t time.Time) string {
		d := t.Sub(now).Round(time.Second)
		if d >= 0 {
			return fmt.Sprintf("%s (in %s)", t.UTC().Format(time.RFC3339Nano), d)
		}
		return fmt.Sprintf("%s (%s ago)", t.UTC().Format(time.RFC3339Nano), -d)
	}
	fmt.Fprintf(tw, "record\t%s\n", recordName(ri))
	fmt.Fprintf(tw, "status\t%s\n", ri.Status)
	fmt.Fprintf(tw, "owner\t%s\n", cmp.Or(ri.Owner, "(none)"))
	fmt.Fprintf(tw, "attempt\t%d\n", ri.Attempt)
	switch {
	case ri.LockExpires.IsZero():
		fmt.Fprintf(tw, "lock\tnone\n")
	case ri.LockExpires.UnixMilli() == 0:
		fmt.Fprintf(tw, "lock\treleased (the next delivery acquires at once)\n")
	case ri.LockLive(now) && ri.Owner == "": // written by another runtime, which names no owner
		fmt.Fprintf(tw, "lock\t%s, live: a consumer the record does not name (it has no owner) may be running the effect\n", at(ri.LockExpires))
	case ri.LockLive(now):
		fmt.Fprintf(tw, "lock\t%s, live: owner %s may be running the effect\n", at(ri.LockExpires), ri.Owner)
	default:
		fmt.Fprintf(tw, "lock\t%s, lapsed: the next delivery takes the record over\n", at(ri.LockExpires))
	}
	exp := at(ri.Expires)
	if ri.Expired(now) {
		exp += ", expired: counts as absent"
	}
	fmt.Fprintf(tw, "expires\t%s\n", exp)
	fmt.Fprintf(tw, "payload\t%s\n", cmp.Or(prefixed("sha256 ", ri.PayloadHash), "(not validated)"))
	switch {
	case ri.ResultDropped:
		fmt.Fprintf(tw, "result\tnot stored (too large for the record)\n")
	case ri.ResultBytes > 0:
		fmt.Fprintf(tw, "result\t%d bytes\n", ri.ResultBytes)
	default:
		fmt.Fprintf(tw, "result\tnone\n")
	}
	tw.Flush()
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}
