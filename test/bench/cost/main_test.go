package main

import (
	"math"
	"os"
	"strings"
	"testing"
)

func total(ls []line, pick func(line) float64) float64 {
	s := 0.0
	for _, l := range ls {
		s += pick(l)
	}
	return s
}

func TestLinesArithmetic(t *testing.T) {
	in := defaults()
	in.ConsumerMsNew, in.ConsumerMsDup, in.DispatchMs = 99.2, 19.5, 9.1 // billed as 100, 20, 10 ms
	ls := lines(in)
	byName := map[string]line{}
	for _, l := range ls {
		byName[l.name] = l
	}
	for _, tc := range []struct {
		name           string
		stdNew, stdDup float64 // $ per million messages
		fifoNew        float64
	}{
		{"DynamoDB write request units", 1.25, 0.625, 1.25},     // 2 and 1 WRU at $0.625/M
		{"SQS SendMessageBatch (dispatcher)", 0.04, 0.04, 0.05}, // 0.1 request at $0.40/M, $0.50/M
		{"Lambda requests, consumer", 0.02, 0.02, 0.02},         // 1/10 invocation at $0.20/M
		{"Lambda GB-s, consumer", 0.25 * 0.1 / 10 * 13.3334, 0.25 * 0.02 / 10 * 13.3334, 0.25 * 0.1 / 10 * 13.3334},
		{"Lambda GB-s, dispatcher", 0.25 * 0.01 / 100 * 13.3334, 0.25 * 0.01 / 100 * 13.3334, 0.25 * 0.01 / 100 * 13.3334},
		{"DynamoDB read request units", 0, 0, 0},
	} {
		l, ok := byName[tc.name]
		if !ok {
			t.Fatalf("no line %q", tc.name)
		}
		for _, c := range []struct {
			what      string
			got, want float64
		}{{"standard new", usd(l.new, l.std), tc.stdNew}, {"standard dup", usd(l.dup, l.std), tc.stdDup}, {"FIFO new", usd(l.new, l.fifo), tc.fifoNew}} {
			if math.Abs(c.got-c.want) > 1e-9 {
				t.Errorf("%s %s = %.10f, want %.10f", tc.name, c.what, c.got, c.want)
			}
		}
	}
	if got := total(ls, func(l line) float64 { return usd(l.new, l.std) }); got < 1.25 || got > 1.5 {
		t.Errorf("standard new total $%.4f, want DynamoDB's $1.25 plus a little", got)
	}
}

func TestSQSChunksOf64KB(t *testing.T) {
	in := defaults()
	in.MessageBytes = 20 * 1024 // 10 per batch = 200 KiB = 4 chunks per request
	for _, l := range lines(in) {
		if strings.HasPrefix(l.name, "SQS SendMessageBatch") && math.Abs(l.new-0.4) > 1e-9 {
			t.Errorf("send requests per message = %g, want 0.4 (0.1 request x 4 chunks)", l.new)
		}
	}
}

func TestApplyMeasuredJSON(t *testing.T) {
	b, err := os.ReadFile("testdata/measured.json")
	if err != nil {
		t.Fatal(err)
	}
	in := defaults()
	var m measured
	if err := m.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	if err := in.apply(m); err != nil {
		t.Fatal(err)
	}
	// The standard queue's dispatcher run is the slower one in the file: its figures are taken.
	if in.WritesNew != 2 || in.WritesDup != 1 || in.ReadsNew != 0 || in.BatchSize != 10 ||
		in.ConsumerMsNew != 48.331 || in.ConsumerMsDup != 12.447 || in.DispatchMs != 111.066 || in.SendPerMsg != 0.1 || in.DispatchItems != 100 ||
		in.ReceivePerMsg != 0.1 || in.DeletePerMsg != 0.1 {
		t.Errorf("inputs from the file = %+v", in)
	}
	var sb strings.Builder
	write(&sb, in)
	for _, want := range []string{"| measured: the dispatcher binary sending to ElasticMQ", "| measured: test/e2e Poller"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("table from measured figures lacks %q:\n%s", want, sb.String())
		}
	}
	if strings.Contains(sb.String(), "assumed") {
		t.Errorf("table from measured figures still says assumed:\n%s", sb.String())
	}

	// The dearer pass's SQS figures are taken.
	m.Consumer.Dup.SQS.ReceivePerMsg = 0.2
	if err := in.apply(m); err != nil || in.ReceivePerMsg != 0.2 || in.DeletePerMsg != 0.1 {
		t.Errorf("with 0.2 receives per duplicate: apply = %v, receive %g, delete %g", err, in.ReceivePerMsg, in.DeletePerMsg)
	}
	// A document without the poller's figures (the older measure) is refused, not half used.
	m.Consumer.New.SQS.ReceivePerMsg, m.Consumer.Dup.SQS.ReceivePerMsg = 0, 0
	if err := in.apply(m); err == nil {
		t.Error("apply accepted a document without SQS receive figures")
	}
	if err := in.apply(measured{}); err == nil {
		t.Error("apply accepted a document without measurements")
	}
}

func TestDefaultsAreLabelledAssumed(t *testing.T) {
	var sb strings.Builder
	write(&sb, defaults())
	rows := 0
	for _, row := range strings.Split(sb.String(), "\n") {
		if strings.HasPrefix(row, "| SQS ") {
			rows++
			if !strings.Contains(row, "| assumed: ") {
				t.Errorf("row %q is not labelled assumed", row)
			}
		}
	}
	if rows != 3 {
		t.Errorf("%d SQS rows, want send, receive and delete:\n%s", rows, sb.String())
	}
}

func TestValidate(t *testing.T) {
	in := defaults()
	in.BatchSize, in.DuplicateFraction = 0, 2
	err := in.validate()
	if err == nil || !strings.Contains(err.Error(), "-batch-size=0") || !strings.Contains(err.Error(), "-dup-fraction=2") {
		t.Errorf("validate = %v, want both flags named", err)
	}
}
