// Command cost prints a markdown table of what a million messages cost through the pipeline
// (dispatcher -> SQS -> consumer -> DynamoDB), from measured calls and durations and AWS's
// published us-east-1 prices. Every input is a flag; -in reads the JSON that
// ./test/bench/cost/measure prints and takes the measured figures from it (flags given
// explicitly still win).
//
//	go run ./test/bench/cost/measure > cost.json && go run ./test/bench/cost -in cost.json
//
// Free tiers are not subtracted: the table is the marginal cost at volume.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"
)

// price is one published unit price with where it comes from.
type price struct {
	USD    float64
	Unit   string
	Source string // URL
	Note   string // region, date, how it was checked
}

// Prices, us-east-1. The AWS pricing pages themselves could not be opened from this machine;
// each figure is the one those pages state as quoted by the dated secondary sources named in
// Note (found with the search tool, 2026-11-23). Re-check before quoting money.
var (
	sqsStandard = price{0.40 / 1e6, "request (64 KB chunk)", "https://aws.amazon.com/sqs/pricing/",
		"us-east-1, first 100 B requests/month; $0.40 per 1M; as quoted 2026-03-14 by https://cloudburn.io/blog/amazon-sqs-pricing and 2026-06-13 by https://www.factualminds.com/blog/amazon-sqs-pricing-64kb-rule-fifo-vs-standard/"}
	sqsFIFO = price{0.50 / 1e6, "request (64 KB chunk)", "https://aws.amazon.com/sqs/pricing/",
		"us-east-1, first 100 B requests/month; $0.50 per 1M; same sources as standard"}
	lambdaRequest = price{0.20 / 1e6, "invocation", "https://aws.amazon.com/lambda/pricing/",
		"us-east-1; $0.20 per 1M requests, x86 and Arm; as quoted by https://cloudchipr.com/blog/aws-lambda-pricing (2024)"}
	lambdaArmGBs = price{0.0000133334, "GB-s (arm64)", "https://aws.amazon.com/lambda/pricing/",
		"us-east-1, Arm, first 7.5 B GB-s/month; as quoted by https://cloudchipr.com/blog/aws-lambda-pricing (2024)"}
	ddbWRU = price{0.625 / 1e6, "write request unit", "https://aws.amazon.com/dynamodb/pricing/on-demand/",
		"us-east-1, Standard table class, on-demand after the 2024-11-01 50% cut ($1.25 -> $0.625 per 1M); as quoted 2025-07-21 by https://airbyte.com/data-engineering-resources/dynamodb-pricing; AWS News Blog https://aws.amazon.com/blogs/aws/amazon-dynamodb-on-demand-no-capacity-planning-and-pay-per-request-pricing/ was \"updated 2025-01-31 to clarify the reduced on-demand pricing\""}
	ddbRRU = price{0.125 / 1e6, "read request unit", "https://aws.amazon.com/dynamodb/pricing/on-demand/",
		"us-east-1, Standard table class, on-demand after the 2024-11-01 cut ($0.25 -> $0.125 per 1M); same sources as WRU"}
)

// Inputs are the per-message quantities the table multiplies by the prices.
type Inputs struct {
	WritesNew, WritesDup float64 // DynamoDB write requests per record
	ReadsNew, ReadsDup   float64 // DynamoDB read requests per record
	WRUPerWrite          float64 // write request units per write (1 per started KB of item)
	RRUPerRead           float64

	BatchSize         float64 // records per consumer invocation
	ConsumerMsNew     float64 // consumer duration per batch of new records
	ConsumerMsDup     float64 // consumer duration per batch of duplicates
	ConsumerMemoryMB  float64
	DispatchItems     float64 // messages per dispatcher invocation
	DispatchMs        float64
	DispatchMemoryMB  float64
	SendPerMsg        float64 // SendMessageBatch requests per message
	ReceivePerMsg     float64 // ReceiveMessage requests per message (the event source's poller)
	DeletePerMsg      float64 // DeleteMessageBatch requests per message (the event source's poller)
	MessageBytes      float64 // body + attributes, for the 64 KB chunk rule
	DuplicateFraction float64 // share of duplicates in the blended total
	RecordBytes       float64 // a completed record's size (measured: the largest), 0 if not known
	Source            string
	SendHow, PollHow  string // where the SQS request figures come from
}

func defaults() Inputs {
	return Inputs{
		WritesNew: 2, WritesDup: 1, WRUPerWrite: 1, RRUPerRead: 1,
		BatchSize: 10, ConsumerMsNew: 60, ConsumerMsDup: 15, ConsumerMemoryMB: 256,
		DispatchItems: 100, DispatchMs: 10, DispatchMemoryMB: 256,
		SendPerMsg: 0.1, ReceivePerMsg: 0.1, DeletePerMsg: 0.1,
		MessageBytes: 400, DuplicateFraction: 0.1, Source: "defaults (design figures)",
		SendHow: "assumed: one request per 10 messages",
		PollHow: "assumed: one per full batch of 10",
	}
}

// measured is the part of ./test/bench/cost/measure's JSON used here.
type measured struct {
	Machine     string `json:"machine"`
	Measured    string `json:"measured"`
	RecordBytes struct {
		Median float64 `json:"median"`
		Max    float64 `json:"max"`
	} `json:"recordBytes"`
	Consumer struct {
		BatchSize int `json:"batchSize"`
		New, Dup  struct {
			WritesPerRecord float64 `json:"writesPerRecord"`
			ReadsPerRecord  float64 `json:"readsPerRecord"`
			InvocationMs    struct {
				Median float64 `json:"median"`
			} `json:"invocationMs"`
			SQS struct {
				ReceivePerMsg float64 `json:"receiveRequestsPerMessage"`
				DeletePerMsg  float64 `json:"deleteRequestsPerMessage"`
			} `json:"sqs"`
		}
	} `json:"consumer"`
	Dispatcher []struct {
		Queue          string  `json:"queue"`
		Items          int     `json:"itemsPerInvocation"`
		RequestsPerMsg float64 `json:"sendRequestsPerMessage"`
		InvocationMs   struct {
			Median float64 `json:"median"`
		} `json:"invocationMs"`
	} `json:"dispatcher"`
}

func (m *measured) UnmarshalJSON(b []byte) error {
	type plain measured
	var aux struct {
		plain
		Consumer struct {
			BatchSize int             `json:"batchSize"`
			New       json.RawMessage `json:"new"`
			Duplicate json.RawMessage `json:"duplicate"`
		} `json:"consumer"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*m = measured(aux.plain)
	m.Consumer.BatchSize = aux.Consumer.BatchSize
	if err := json.Unmarshal(aux.Consumer.New, &m.Consumer.New); err != nil {
		return fmt.Errorf("consumer.new: %w", err)
	}
	if err := json.Unmarshal(aux.Consumer.Duplicate, &m.Consumer.Dup); err != nil {
		return fmt.Errorf("consumer.duplicate: %w", err)
	}
	return nil
}

func (in *Inputs) apply(m measured) error {
	c := m.Consumer
	if c.BatchSize == 0 || len(m.Dispatcher) == 0 {
		return fmt.Errorf("not the output of ./test/bench/cost/measure (no consumer batch size or dispatcher runs)")
	}
	in.BatchSize = float64(c.BatchSize)
	in.WritesNew, in.ReadsNew, in.ConsumerMsNew = c.New.WritesPerRecord, c.New.ReadsPerRecord, c.New.InvocationMs.Median
	in.WritesDup, in.ReadsDup, in.ConsumerMsDup = c.Dup.WritesPerRecord, c.Dup.ReadsPerRecord, c.Dup.InvocationMs.Median
	d := m.Dispatcher[0]
	for _, x := range m.Dispatcher[1:] { // the dearer queue type's figures, to be safe
		if x.RequestsPerMsg > d.RequestsPerMsg || x.InvocationMs.Median > d.InvocationMs.Median {
			d = x
		}
	}
	in.DispatchItems, in.DispatchMs, in.SendPerMsg = float64(d.Items), d.InvocationMs.Median, d.RequestsPerMsg
	in.SendHow = "measured: the dispatcher binary sending to ElasticMQ, counted at a proxy"
	// The dearer pass's figures, to be safe (they are the same when every batch is full).
	in.ReceivePerMsg = math.Max(c.New.SQS.ReceivePerMsg, c.Dup.SQS.ReceivePerMsg)
	in.DeletePerMsg = math.Max(c.New.SQS.DeletePerMsg, c.Dup.SQS.DeletePerMsg)
	if in.ReceivePerMsg == 0 || in.DeletePerMsg == 0 {
		return fmt.Errorf("no SQS receive or delete figures (from an older ./test/bench/cost/measure? run it again)")
	}
	in.PollHow = fmt.Sprintf("measured: test/e2e Poller (the event source's stand-in, batch size %d) draining ElasticMQ, counted at a proxy; "+
		"the idle polls of an empty queue are not per message and not included", c.BatchSize)
	in.RecordBytes = m.RecordBytes.Max
	in.Source = fmt.Sprintf("measured %s on %s (./test/bench/cost/measure)", m.Measured, m.Machine)
	return nil
}

func main() {
	in := defaults()
	inFile := flag.String("in", "", "JSON from ./test/bench/cost/measure (sets the measured inputs)")
	fs := flag.CommandLine
	fs.Float64Var(&in.WritesNew, "writes-new", in.WritesNew, "DynamoDB writes per new record")
	fs.Float64Var(&in.WritesDup, "writes-dup", in.WritesDup, "DynamoDB writes per duplicate record")
	fs.Float64Var(&in.ReadsNew, "reads-new", in.ReadsNew, "DynamoDB reads per new record")
	fs.Float64Var(&in.ReadsDup, "reads-dup", in.ReadsDup, "DynamoDB reads per duplicate record")
	fs.Float64Var(&in.WRUPerWrite, "wru-per-write", in.WRUPerWrite, "write request units per write (1 per started KB of the larger of old and new item)")
	fs.Float64Var(&in.BatchSize, "batch-size", in.BatchSize, "records per consumer invocation")
	fs.Float64Var(&in.ConsumerMsNew, "consumer-ms-new", in.ConsumerMsNew, "consumer duration per batch of new records, ms")
	fs.Float64Var(&in.ConsumerMsDup, "consumer-ms-dup", in.ConsumerMsDup, "consumer duration per batch of duplicates, ms")
	fs.Float64Var(&in.ConsumerMemoryMB, "consumer-memory", in.ConsumerMemoryMB, "consumer memory, MB (construct default 256)")
	fs.Float64Var(&in.DispatchItems, "dispatch-items", in.DispatchItems, "messages per dispatcher invocation")
	fs.Float64Var(&in.DispatchMs, "dispatch-ms", in.DispatchMs, "dispatcher duration per invocation, ms")
	fs.Float64Var(&in.DispatchMemoryMB, "dispatch-memory", in.DispatchMemoryMB, "dispatcher memory, MB (construct default 256)")
	fs.Float64Var(&in.SendPerMsg, "send-per-msg", in.SendPerMsg, "SendMessageBatch requests per message")
	fs.Float64Var(&in.ReceivePerMsg, "receive-per-msg", in.ReceivePerMsg, "ReceiveMessage requests per message (the event source's poller; excludes empty receives)")
	fs.Float64Var(&in.DeletePerMsg, "delete-per-msg", in.DeletePerMsg, "DeleteMessageBatch requests per message (the event source's poller)")
	fs.Float64Var(&in.MessageBytes, "message-bytes", in.MessageBytes, "bytes per message (body + attributes) for the 64 KB chunk rule")
	fs.Float64Var(&in.DuplicateFraction, "dup-fraction", in.DuplicateFraction, "share of duplicates in the blended total")
	lambdaFile := flag.String("lambda", "", "JSON from test/bench/peers -json (Lambda-shaped runs): adds the load profiles' monthly bills under both table capacity modes")
	target := flag.Float64("target", 70, "load profiles: the provisioned table's target utilization, percent (20 to 90)")
	recordTTL := flag.Duration("record-ttl", 600*time.Hour, "load profiles: how long a record is kept (the reference stack's RecordTTL)")
	recordBytes := flag.Float64("record-bytes", 0, "load profiles: bytes a completed record takes in storage (default: the largest measured by -in, else 200)")
	flag.Parse()

	// Flags given on the command line win over the file: remember them before it loads.
	explicit := map[string]string{}
	flag.Visit(func(f *flag.Flag) { explicit[f.Name] = f.Value.String() })
	if *inFile != "" {
		b, err := os.ReadFile(*inFile)
		if err == nil {
			var m measured
			if err = json.Unmarshal(b, &m); err == nil {
				err = in.apply(m)
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "cost: -in %s: %v\n", *inFile, err)
			os.Exit(2)
		}
		for name, v := range explicit {
			_ = fs.Set(name, v)
		}
	}
	if _, ok := explicit["send-per-msg"]; ok {
		in.SendHow = "given with -send-per-msg"
	}
	_, r := explicit["receive-per-msg"]
	if _, d := explicit["delete-per-msg"]; r || d {
		in.PollHow = "given with -receive-per-msg / -delete-per-msg"
	}
	if err := in.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "cost:", err)
		os.Exit(2)
	}
	write(os.Stdout, in)
	if *lambdaFile != "" {
		if *recordBytes == 0 {
			*recordBytes = in.RecordBytes
		}
		if *recordBytes == 0 {
			*recordBytes = 200
		}
		if *target < 20 || *target > 90 || *recordTTL <= 0 || *recordBytes < 0 {
			fmt.Fprintln(os.Stderr, "cost: -target must be 20 to 90, -record-ttl > 0 and -record-bytes >= 0")
			os.Exit(2)
		}
		pi := planInputs{
			writesPerRecord: (1-in.DuplicateFraction)*in.WritesNew + in.DuplicateFraction*in.WritesDup,
			target:          *target, recordTTL: *recordTTL, recordBytes: *recordBytes,
			sqsPerMessage: in.SendPerMsg + in.ReceivePerMsg + in.DeletePerMsg, dupFraction: in.DuplicateFraction,
		}
		if err := readLambdaFigures(*lambdaFile, &pi); err != nil {
			fmt.Fprintf(os.Stderr, "cost: -lambda %s: %v\n", *lambdaFile, err)
			os.Exit(2)
		}
		writeProfiles(os.Stdout, pi)
		writeLoadPlans(os.Stdout, pi)
	}
}

func (in Inputs) validate() error {
	var bad []string
	for name, v := range map[string]float64{"batch-size": in.BatchSize, "dispatch-items": in.DispatchItems,
		"consumer-memory": in.ConsumerMemoryMB, "dispatch-memory": in.DispatchMemoryMB, "message-bytes": in.MessageBytes} {
		if v <= 0 {
			bad = append(bad, fmt.Sprintf("-%s=%g must be > 0", name, v))
		}
	}
	if in.DuplicateFraction < 0 || in.DuplicateFraction > 1 {
		bad = append(bad, fmt.Sprintf("-dup-fraction=%g must be in [0, 1]", in.DuplicateFraction))
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s", strings.Join(bad, "; "))
	}
	return nil
}

// line is one row: a quantity per message (new, duplicate) and its prices per queue type.
type line struct {
	name      string
	new, dup  float64
	std, fifo price
	how       string
}

func lines(in Inputs) []line {
	// A batch request is billed per started 64 KB of its payload.
	chunks := func(msgsPerRequest float64) float64 {
		return math.Max(1, math.Ceil(msgsPerRequest*in.MessageBytes/65536))
	}
	gbs := func(memMB, ms float64) float64 { return memMB / 1024 * math.Ceil(ms) / 1000 } // 1 ms billing granularity
	sqsLine := func(name string, perMsg float64, how string) line {
		q := perMsg * chunks(1/perMsg)
		return line{name, q, q, sqsStandard, sqsFIFO, how}
	}
	return []line{
		sqsLine("SQS SendMessageBatch (dispatcher)", in.SendPerMsg, in.SendHow),
		sqsLine("SQS ReceiveMessage (event source)", in.ReceivePerMsg, in.PollHow),
		sqsLine("SQS DeleteMessageBatch (event source)", in.DeletePerMsg, in.PollHow),
		{"Lambda requests, dispatcher", 1 / in.DispatchItems, 1 / in.DispatchItems, lambdaRequest, lambdaRequest, "1 per invocation"},
		{"Lambda GB-s, dispatcher", gbs(in.DispatchMemoryMB, in.DispatchMs) / in.DispatchItems,
			gbs(in.DispatchMemoryMB, in.DispatchMs) / in.DispatchItems, lambdaArmGBs, lambdaArmGBs,
			fmt.Sprintf("%g MB x %g ms per invocation", in.DispatchMemoryMB, math.Ceil(in.DispatchMs))},
		{"Lambda requests, consumer", 1 / in.BatchSize, 1 / in.BatchSize, lambdaRequest, lambdaRequest, "1 per batch"},
		{"Lambda GB-s, consumer", gbs(in.ConsumerMemoryMB, in.ConsumerMsNew) / in.BatchSize,
			gbs(in.ConsumerMemoryMB, in.ConsumerMsDup) / in.BatchSize, lambdaArmGBs, lambdaArmGBs,
			fmt.Sprintf("%g MB x %g / %g ms per batch", in.ConsumerMemoryMB, math.Ceil(in.ConsumerMsNew), math.Ceil(in.ConsumerMsDup))},
		{"DynamoDB write request units", in.WritesNew * in.WRUPerWrite, in.WritesDup * in.WRUPerWrite, ddbWRU, ddbWRU,
			"acquire + complete; duplicate = one failed conditional write (still billed)"},
		{"DynamoDB read request units", in.ReadsNew * in.RRUPerRead, in.ReadsDup * in.RRUPerRead, ddbRRU, ddbRRU, "no reads"},
	}
}

func usd(perMsg float64, p price) float64 { return perMsg * p.USD * 1e6 }

func money(v float64) string {
	if v == 0 {
		return "$0"
	}
	return fmt.Sprintf("$%.4f", v)
}

func write(w io.Writer, in Inputs) {
	ls := lines(in)
	fmt.Fprintf(w, "### Cost per million messages (us-east-1, on-demand, free tiers not subtracted)\n\n")
	fmt.Fprintf(w, "Inputs: %s. DynamoDB %g/%g writes and %g/%g reads per new/duplicate record, %g WRU per write; "+
		"consumer batches of %g, %g ms (new) / %g ms (duplicate) per batch at %g MB; dispatcher %g messages per "+
		"invocation, %g ms at %g MB; SQS per message: send %g, receive %g, delete %g; %g bytes per message; "+
		"blend %.0f%% duplicates.\n\n",
		in.Source, in.WritesNew, in.WritesDup, in.ReadsNew, in.ReadsDup, in.WRUPerWrite,
		in.BatchSize, in.ConsumerMsNew, in.ConsumerMsDup, in.ConsumerMemoryMB,
		in.DispatchItems, in.DispatchMs, in.DispatchMemoryMB, in.SendPerMsg, in.ReceivePerMsg, in.DeletePerMsg,
		in.MessageBytes, in.DuplicateFraction*100)
	fmt.Fprintln(w, "| Line | Per message (new / dup) | Unit price (std / FIFO) | Standard new | Standard dup | FIFO new | FIFO dup | Basis |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|---:|---:|---|")
	var tot [4]float64
	for _, l := range ls {
		v := [4]float64{usd(l.new, l.std), usd(l.dup, l.std), usd(l.new, l.fifo), usd(l.dup, l.fifo)}
		for i := range tot {
			tot[i] += v[i]
		}
		unit := fmt.Sprintf("$%.4g per 1M %s", l.std.USD*1e6, l.std.Unit)
		if l.fifo.USD != l.std.USD {
			unit = fmt.Sprintf("$%.4g / $%.4g per 1M %s", l.std.USD*1e6, l.fifo.USD*1e6, l.std.Unit)
		} else if l.std.Unit == "GB-s (arm64)" {
			unit = fmt.Sprintf("$%.10g per GB-s (arm64)", l.std.USD)
		}
		fmt.Fprintf(w, "| %s | %.4g / %.4g | %s | %s | %s | %s | %s | %s |\n",
			l.name, l.new, l.dup, unit, money(v[0]), money(v[1]), money(v[2]), money(v[3]), l.how)
	}
	fmt.Fprintf(w, "| **Total** | | | **%s** | **%s** | **%s** | **%s** | |\n", money(tot[0]), money(tot[1]), money(tot[2]), money(tot[3]))
	f := in.DuplicateFraction
	fmt.Fprintf(w, "\nBlended (%.0f%% duplicates): standard **%s**, FIFO **%s** per million messages.\n",
		f*100, money((1-f)*tot[0]+f*tot[1]), money((1-f)*tot[2]+f*tot[3]))
	fmt.Fprintln(w, "\nNotes:")
	fmt.Fprintln(w, "- Durations measured locally (the real binaries under a local Runtime API on a shared machine, full cores: NOT Lambda durations) understate Lambda's at 256 MB "+
		"(about 1/7 of a vCPU); pass -consumer-ms-new/-consumer-ms-dup/-dispatch-ms from CloudWatch REPORT lines for real figures.")
	fmt.Fprintln(w, "- A failed conditional write (the duplicate path) still consumes write units, by the larger of the "+
		"existing and the new item (DynamoDB Developer Guide, https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html, "+
		"as quoted by https://expert.ftl2.com/public/aws-expert/belief/dynamodb-failed-conditional-writes-consume-wcus). "+
		"DynamoDB Local reports no ConsumedCapacity on a failed condition, so 1 WRU per write is the assumption for records under 1 KB "+
		"(in the measure runs DynamoDB Local reported 1 WRU per successful write).")
	fmt.Fprintln(w, "- The event source's receives include empty long polls while the queue is idle; they are not per message and not counted here. "+
		"The measure fills the queue before draining it, so every batch is full: the floor. A queue fed more slowly than it is drained "+
		"yields smaller batches and more receives, deletes and invocations per message.")
	fmt.Fprintln(w, "\nPrices (us-east-1):")
	seen := map[string]bool{}
	for _, p := range []price{sqsStandard, sqsFIFO, lambdaRequest, lambdaArmGBs, ddbWRU, ddbRRU} {
		key := fmt.Sprint(p.Unit, p.Source, p.USD)
		if seen[key] {
			continue
		}
		seen[key] = true
		fmt.Fprintf(w, "<!-- $%.6g per 1M %s; source %s; %s -->\n", p.USD*1e6, p.Unit, p.Source, p.Note)
		fmt.Fprintf(w, "- $%.6g per 1M %s: %s (%s)\n", p.USD*1e6, p.Unit, p.Source, p.Note)
	}
}
