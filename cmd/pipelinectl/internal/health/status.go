package health

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/cli"
)

// StatusUsage is `pipelinectl help status`.
const StatusUsage = `pipelinectl status: where each pipeline stands, in one read-only look.

  For each pipeline of the stack (or --pipeline): its queue's visible, in-flight and
  delayed messages and its DLQ's; the consumer's event source mappings (Lambda
  ListEventSourceMappings: State, LastProcessingResult, batch size, maximum concurrency
  or provisioned pollers); and, when the outputs name a composite alarm (UnhealthyAlarmName, or the pipeline's), the pipeline's paging
  alarms in ALARM with their reason and runbook. It changes nothing.

  It answers the first questions of most runbook sections without the AWS CLI. What it
  cannot read (CloudWatch or Lambda out of reach, say) is an UNKNOWN line saying what and
  why, and the rest is still read and printed. Exit 0 when every pipeline looks healthy
  (mappings Enabled, DLQ empty, no paging alarm in ALARM), 1 when one does not (each
  problem is named) or could not be read whole, 2 for a wrong command line.

  --output json   every pipeline's status as one JSON document on stdout
`

// Mapping is one event source mapping as Lambda's ListEventSourceMappings reports it.
type Mapping struct {
	UUID                  string `json:"uuid"`
	EventSourceArn        string `json:"eventSourceArn"`
	State                 string `json:"state"`
	StateTransitionReason string `json:"stateTransitionReason,omitempty"`
	LastProcessingResult  string `json:"lastProcessingResult,omitempty"`
	BatchSize             int    `json:"batchSize"`
	MaximumConcurrency    int    `json:"maximumConcurrency,omitempty"`
	// Pollers is provisioned mode's event pollers (nil in the default mode).
	Pollers *pollers `json:"provisionedPollers,omitempty"`
}

// pollers is a mapping's ProvisionedPollerConfig.
type pollers struct {
	Minimum int `json:"minimum"`
	Maximum int `json:"maximum"`
}

// Scaling says how far the mapping's concurrency goes, in words.
func (m Mapping) Scaling() string {
	switch {
	case m.Pollers != nil:
		return fmt.Sprintf("provisioned mode, %d-%d event pollers (up to %d concurrent invocations)", m.Pollers.Minimum, m.Pollers.Maximum, m.Pollers.Maximum*10)
	case m.MaximumConcurrency > 0:
		return fmt.Sprintf("maximum concurrency %d", m.MaximumConcurrency)
	}
	return "no maximum concurrency (Lambda's own scaling, up to 1,250 for a standard queue)"
}

// PipelineStatus is one pipeline's part of `status --output json`.
type PipelineStatus struct {
	Pipeline string `json:"pipeline"`
	Queue    struct {
		URL      string `json:"url"`
		Visible  int64  `json:"visible"`
		InFlight int64  `json:"inFlight"`
		Delayed  int64  `json:"delayed"`
	} `json:"queue"`
	DeadLetterQueue struct {
		URL      string `json:"url"`
		Visible  int64  `json:"visible"`
		InFlight int64  `json:"inFlight"`
	} `json:"deadLetterQueue"`
	Consumer string    `json:"consumer"`
	Mappings []Mapping `json:"mappings"`
	// AlarmsChecked is false when the outputs name no composite alarm, or its alarms could
	// not be read (then Unread says why).
	AlarmsChecked bool     `json:"alarmsChecked"`
	Alarms        []Alarm  `json:"alarmsInAlarm,omitempty"`
	Problems      []string `json:"problems,omitempty"`
	// Unread names what could not be read and why (the queue, the DLQ, the mappings, the
	// alarms): its counts are unknown, not zero.
	Unread []string `json:"unread,omitempty"`
}

// eventSourceMappings lists a function's event source mappings (every page).
func eventSourceMappings(ctx context.Context, rc *cli.RESTClient, fn string) ([]Mapping, error) {
	var out []Mapping
	marker := ""
	for {
		q := url.Values{"FunctionName": {fn}}
		if marker != "" {
			q.Set("Marker", marker)
		}
		_, body, err := rc.Call(ctx, "lambda", "ListEventSourceMappings", http.MethodGet, "/2015-03-31/event-source-mappings/?"+q.Encode(), nil, nil)
		if err != nil {
			return nil, err
		}
		var resp struct {
			EventSourceMappings []struct {
				UUID, EventSourceArn, State, StateTransitionReason, LastProcessingResult string
				BatchSize                                                                int
				ScalingConfig                                                            struct{ MaximumConcurrency int }
				ProvisionedPollerConfig                                                  *struct{ MinimumPollers, MaximumPollers int }
			}
			NextMarker string
		}
		if err := json.Unmarshal(body, &resp); err != nil {
			return nil, fmt.Errorf("lambda ListEventSourceMappings: an answer that is not its JSON: %w", err)
		}
		for _, m := range resp.EventSourceMappings {
			s := Mapping{UUID: m.UUID, EventSourceArn: m.EventSourceArn, State: m.State, StateTransitionReason: m.StateTransitionReason,
				LastProcessingResult: m.LastProcessingResult, BatchSize: m.BatchSize, MaximumConcurrency: m.ScalingConfig.MaximumConcurrency}
			if p := m.ProvisionedPollerConfig; p != nil {
				s.Pollers = &pollers{Minimum: p.MinimumPollers, Maximum: p.MaximumPollers}
			}
			out = append(out, s)
		}
		if marker = resp.NextMarker; marker == "" {
			return out, nil
		}
	}
}

// Status is `pipelinectl status ARGS`.
func Status(ctx context.Context, args []string, w cli.Streams, connect cli.Connector) error {
	fs, c := cli.NewFlags("status", StatusUsage, w.Out)
	cli.OutputFlag(fs, c)
	if err := cli.ParseNoArgs(fs, args); err != nil {
		return err
	}
	if err := c.CheckOutput(); err != nil {
		return err
	}
	out := w.Text(c)
	cl, outputs, names, err := c.StackPipelines(ctx, connect, "status")
	if err != nil {
		return err
	}

	// The paging alarms in ALARM, by pipeline, read once for all of them.
	composites := cli.Composites(outputs, names)
	composite := strings.Join(composites, ", ")
	alarms, alarmsErr := firingAlarms(ctx, cl, composites)
	unread := 0
	var all []PipelineStatus
	unhealthy := 0
	for _, p := range names {
		s := pipelineStatusOf(ctx, cl, outputs, p, stackFlags(c))
		s.AlarmsChecked = composite != "" && alarmsErr == nil
		if alarmsErr != nil {
			s.Unread = append(s.Unread, "alarms: "+alarmsErr.Error())
		}
		if len(s.Unread) > 0 {
			unread++
		}
		s.addAlarms(alarms)
		if len(s.Problems) > 0 || len(s.Unread) > 0 {
			unhealthy++
		}
		printStatus(out, s)
		all = append(all, s)
	}
	if composite == "" {
		fmt.Fprintf(out, "alarms: not read: the outputs name no composite alarm (%s or <Pipeline>%s: monitoring.Outputs and pipeline.Outputs add them)\n", cli.OutUnhealthy, cli.OutUnhealthy)
	}
	// A paging alarm of none of the stack's pipelines (another label on the same monitoring)
	// is the stack's problem; with --pipeline only that pipeline's alarms count.
	for _, a := range alarms {
		if !slices.Contains(names, a.label()) && c.Pipeline == "" {
			fmt.Fprintf(out, "stack\n  PROBLEM   alarm %s is in ALARM: %s (runbook: %s)\n", a.Name, a.Reason, a.runbook())
			unhealthy++
		}
	}
	if c.Output == "json" {
		cli.WriteJSON(w.Out, all)
	}
	switch {
	case unread > 0:
		return fmt.Errorf("status: %d of %d pipelines could not be read whole (UNKNOWN above, with why); %d need a look", unread, len(names), unhealthy)
	case unhealthy > 0:
		return fmt.Errorf("status: %d of %d pipelines need a look", unhealthy, len(names))
	}
	return nil
}

// stackFlags are the flags that found the stack, for the commands status prints.
func stackFlags(c *cli.Common) string {
	if c.Stack != "" && c.Outputs == "" {
		return "--stack " + cli.ShellQuote(c.Stack)
	}
	return "--outputs " + cli.ShellQuote(c.Outputs)
}

// firingAlarms are the alarms in ALARM among those the composite alarms cover. What cannot
// be read is said, and the rest is still read and printed: at night the queue depths matter
// most when CloudWatch is what cannot be reached.
func firingAlarms(ctx context.Context, cl *cli.Clients, composites []string) ([]Alarm, error) {
	if len(composites) == 0 {
		return nil, nil
	}
	all, err := childAlarms(ctx, cl.REST, composites...)
	if err != nil {
		err = fmt.Errorf("the alarms of %s: %w (pipelinectl's cloudwatch:DescribeAlarms)", strings.Join(composites, ", "), cli.Explain(err))
	}
	var firing []Alarm
	for _, a := range all {
		if a.State == "ALARM" {
			firing = append(firing, a)
		}
	}
	return firing, err
}

// addAlarms adds the firing alarms of s's pipeline (its label) to s, each a problem.
func (s *PipelineStatus) addAlarms(firing []Alarm) {
	for _, a := range firing {
		if a.label() == s.Pipeline {
			s.Alarms = append(s.Alarms, a)
			s.Problems = append(s.Problems, fmt.Sprintf("alarm %s is in ALARM: %s (runbook: %s)", a.Name, a.Reason, a.runbook()))
		}
	}
}

// pipelineStatusOf reads pipeline p's queues and its consumer's mappings, and names what
// looks wrong in them, and in Unread what it could not read; where is the flags that found
// the stack, for the commands it names.
func pipelineStatusOf(ctx context.Context, cl *cli.Clients, outputs map[string]string, p, where string) PipelineStatus {
	s := PipelineStatus{Pipeline: p, Consumer: outputs[p+cli.OutConsumer]}
	s.Queue.URL, s.DeadLetterQueue.URL = outputs[p+cli.OutQueueURL], outputs[p+cli.OutDLQURL]
	if s.Queue.URL != "" {
		if q, err := cli.GetQueue(ctx, cl.SQS, s.Queue.URL); err != nil {
			s.Unread = append(s.Unread, "queue: "+cli.Explain(err).Error())
		} else {
			s.Queue.Visible, s.Queue.InFlight, s.Queue.Delayed = q.Visible, q.InFlight, q.Delayed
		}
	}
	if dlq, err := cli.GetQueue(ctx, cl.SQS, s.DeadLetterQueue.URL); err != nil {
		s.Unread = append(s.Unread, "DLQ: "+cli.Explain(err).Error())
	} else {
		s.DeadLetterQueue.Visible, s.DeadLetterQueue.InFlight = dlq.Visible, dlq.InFlight
		if n := dlq.Visible + dlq.InFlight; n > 0 {
			s.Problems = append(s.Problems, fmt.Sprintf("messages in the DLQ: %d; pipelinectl dlq inspect %s --pipeline %s", n, where, p))
		}
	}
	if s.Consumer != "" {
		ms, err := eventSourceMappings(ctx, cl.REST, s.Consumer)
		if err != nil {
			s.Unread = append(s.Unread, fmt.Sprintf("mappings: the event source mappings of %s: %v (pipelinectl's lambda:ListEventSourceMappings)", s.Consumer, cli.Explain(err)))
			return s
		}
		s.Mappings = ms
		if len(ms) == 0 {
			s.Problems = append(s.Problems, fmt.Sprintf("the consumer %s has no event source mapping: nothing receives from the queue", s.Consumer))
		}
		for _, m := range ms {
			switch {
			case m.State == "Creating" || m.State == "Enabling" || m.State == "Updating":
				// On its way to Enabled (a deploy under way): not a problem, and printed.
			case m.State != "Enabled":
				s.Problems = append(s.Problems, fmt.Sprintf("mapping %s is %s (%s): nothing receives while it is not Enabled; aws lambda update-event-source-mapping --uuid %s --enabled",
					m.UUID, m.State, cmp.Or(m.StateTransitionReason, "no reason given"), m.UUID))
			case strings.HasPrefix(m.LastProcessingResult, "PROBLEM"):
				s.Problems = append(s.Problems, fmt.Sprintf("mapping %s: %s", m.UUID, m.LastProcessingResult))
			}
		}
	}
	return s
}

func printStatus(out io.Writer, s PipelineStatus) {
	fmt.Fprintf(out, "%s\n", s.Pipeline)
	unread := func(what string) bool {
		return slices.ContainsFunc(s.Unread, func(u string) bool { return strings.HasPrefix(u, what+": ") })
	}
	switch {
	case s.Queue.URL != "" && unread("queue"):
		fmt.Fprintf(out, "  queue     UNKNOWN (not read, see below)   %s\n", s.Queue.URL)
	case s.Queue.URL != "":
		fmt.Fprintf(out, "  queue     %d visible, %d in flight, %d delayed   %s\n", s.Queue.Visible, s.Queue.InFlight, s.Queue.Delayed, s.Queue.URL)
	}
	if unread("DLQ") {
		fmt.Fprintf(out, "  DLQ       UNKNOWN (not read, see below)   %s\n", s.DeadLetterQueue.URL)
	} else {
		fmt.Fprintf(out, "  DLQ       %d visible, %d in flight   %s\n", s.DeadLetterQueue.Visible, s.DeadLetterQueue.InFlight, s.DeadLetterQueue.URL)
	}
	if s.Consumer != "" {
		fmt.Fprintf(out, "  consumer  %s\n", s.Consumer)
	}
	for _, m := range s.Mappings {
		fmt.Fprintf(out, "  mapping   %s %s, last processing result %q, batch size %d, %s\n",
			m.UUID, m.State, m.LastProcessingResult, m.BatchSize, m.Scaling())
	}
	if s.AlarmsChecked && len(s.Alarms) == 0 {
		fmt.Fprintf(out, "  alarms    no paging alarm in ALARM\n")
	}
	for _, p := range s.Problems {
		fmt.Fprintf(out, "  PROBLEM   %s\n", p)
	}
	for _, u := range s.Unread {
		fmt.Fprintf(out, "  UNKNOWN   %s\n", strings.ReplaceAll(u, "\n", "\n            "))
	}
	if len(s.Problems) == 0 && len(s.Unread) == 0 {
		fmt.Fprintf(out, "  healthy\n")
	}
}
