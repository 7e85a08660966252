package local

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/idempotent-sqs/pipeline/internal/lambdart"
	"github.com/idempotent-sqs/pipeline/internal/standin"
)

// The AWS APIs besides SQS and DynamoDB that pipelinectl reads (status, verify, backfill,
// --stack), served by the kit on one loopback port from what it runs: Lambda's Invoke (a
// dispatcher, as a deployed one) and ListEventSourceMappings (each consumer's poller),
// CloudWatch's DescribeAlarms (every alarm as the kit evaluates it), Scheduler's
// GetSchedule (the template's schedules), CloudFormation's DescribeStacks (each stack's
// outputs with their local values). Point AWS_ENDPOINT_URL_LAMBDA, _CLOUDWATCH, _SCHEDULER
// and _CLOUDFORMATION at it (Kit.Environ does). Anything else is answered with an error
// that says so.

// listenAWS takes the stand-ins' address, before any function is configured: every
// function's environment points each AWS service the kit does not serve at it too.
func (k *Kit) listenAWS() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("local: the Lambda, CloudWatch and Scheduler stand-ins: %w", err)
	}
	k.apiLn, k.apiURL = ln, "http://"+ln.Addr().String()
	return nil
}

// servedServices are the services the stand-ins answer, by the name a request's signature
// scopes it to; any other service gets notServed's error.
var servedServices = []string{"lambda", "monitoring", "scheduler", "cloudformation", "sns", "s3", "ssm", "secretsmanager"}

// serveAWS starts the stand-in server for the running stacks on listenAWS's address.
func (k *Kit) serveAWS() error {
	ln := k.apiLn
	mux := http.NewServeMux()
	mux.HandleFunc("POST /2015-03-31/functions/{name}/invocations", k.lambdaInvoke)
	mux.HandleFunc("GET /2015-03-31/event-source-mappings/", k.lambdaMappings)
	mux.HandleFunc("GET /2015-03-31/event-source-mappings", k.lambdaMappings) // the AWS CLI's path
	mux.HandleFunc("GET /schedules/{name}", k.schedulerGet)
	mux.HandleFunc("POST /{$}", k.queryAPI)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		awsError(w, http.StatusNotImplemented, "NotImplemented", fmt.Sprintf("the local kit does not stand in for %s %s", r.Method, r.URL.Path))
	})
	port := ln.Addr().(*net.TCPAddr).Port
	hosts := []string{fmt.Sprintf("127.0.0.1:%d", port), fmt.Sprintf("localhost:%d", port)}
	// The services with a handler of their own, by the name a request's signature scopes it
	// to; the rest of servedServices are routed by mux.
	own := map[string]http.HandlerFunc{"sns": k.snsAPI, "s3": k.s3API, "ssm": k.ssmAPI, "secretsmanager": k.secretsAPI}
	guard := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Only AWS clients: a signed request (every SDK, the AWS CLI and pipelinectl sign;
		// a web page cannot send Authorization without a preflight this server refuses) to
		// this address by its own name (no DNS rebinding).
		if !slices.Contains(hosts, r.Host) || !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
			awsError(w, http.StatusForbidden, "AccessDeniedException", "the local kit answers signed AWS requests to "+hosts[0]+" only")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 6<<20) // Lambda's synchronous payload limit
		service := signedService(r)
		if h, ok := own[service]; ok {
			h(w, r)
			return
		}
		if !slices.Contains(servedServices, service) {
			notServed(w, r, service)
			return
		}
		mux.ServeHTTP(w, r)
	})
	k.api = &http.Server{Handler: guard, ReadHeaderTimeout: 10 * time.Second}
	go k.api.Serve(ln)
	return nil
}

// queryAPI answers the calls AWS clients post to "/": CloudFormation's (the query protocol,
// its Action in the form) and CloudWatch's (the query protocol, or JSON named by
// X-Amz-Target).
func (k *Kit) queryAPI(w http.ResponseWriter, req *http.Request) {
	if req.Header.Get("X-Amz-Target") == "" && req.ParseForm() == nil && req.Form.Get("Version") == cloudFormationVersion {
		if a := req.Form.Get("Action"); a != "DescribeStacks" {
			cloudWatchError(w, false, http.StatusBadRequest, "InvalidAction", fmt.Sprintf(
				"the local kit answers CloudFormation's DescribeStacks only, not %s: a shell with the kit's exports talks to the kit; deploy from another", a))
			return
		}
		k.describeStacks(w, req)
		return
	}
	k.cloudWatch(w, req)
}

// cloudFormationVersion is the API version every CloudFormation query-protocol call names.
const cloudFormationVersion = "2010-05-15"

// describeStacks answers CloudFormation's DescribeStacks with the running stacks and their
// outputs as the kit resolves them (Outputs), so that pipelinectl's --stack NAME finds the
// local queues and table as it finds the deployed ones, and a runbook's lines run as
// written.
func (k *Kit) describeStacks(w http.ResponseWriter, req *http.Request) {
	outputs, _ := k.Outputs()
	names := slices.Sorted(maps.Keys(outputs))
	if name := req.Form.Get("StackName"); name != "" {
		if _, rest, ok := strings.Cut(name, ":stack/"); ok { // an ARN: arn:aws:cloudformation:REGION:ACCOUNT:stack/NAME/ID
			name, _, _ = strings.Cut(rest, "/")
		}
		if _, ok := outputs[name]; !ok {
			cloudWatchError(w, false, http.StatusBadRequest, "ValidationError",
				fmt.Sprintf("Stack with id %s does not exist (the local kit runs %s)", name, strings.Join(names, ", ")))
			return
		}
		names = []string{name}
	}
	var b strings.Builder
	b.WriteString(`<DescribeStacksResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><DescribeStacksResult><Stacks>`)
	for _, name := range names {
		fmt.Fprintf(&b, "<member><StackName>%s</StackName><StackStatus>CREATE_COMPLETE</StackStatus><CreationTime>%s</CreationTime><Outputs>",
			xmlText(name), k.started.UTC().Format(time.RFC3339))
		for _, key := range slices.Sorted(maps.Keys(outputs[name])) {
			fmt.Fprintf(&b, "<member><OutputKey>%s</OutputKey><OutputValue>%s</OutputValue></member>", xmlText(key), xmlText(outputs[name][key]))
		}
		b.WriteString("</Outputs></member>")
	}
	b.WriteString(`</Stacks></DescribeStacksResult></DescribeStacksResponse>`)
	w.Header().Set("Content-Type", "text/xml")
	io.WriteString(w, b.String())
}

// signedService is the service a SigV4-signed request is scoped to (Credential=KEY/DATE/
// REGION/SERVICE/aws4_request), "" when the header says none.
func signedService(r *http.Request) string {
	_, cred, _ := strings.Cut(r.Header.Get("Authorization"), "Credential=")
	cred, _, _ = strings.Cut(cred, ",")
	if parts := strings.Split(cred, "/"); len(parts) == 5 {
		return parts[3]
	}
	return ""
}

// notServed answers a call to a service the kit does not serve, in the service's own error
// format so that the caller's SDK shows the message: a function under the kit, or a shell
// with its exports, reaches no AWS endpoint, whatever credentials are about.
func notServed(w http.ResponseWriter, r *http.Request, service string) {
	call := r.Header.Get("X-Amz-Target") // the JSON protocols: Service.Operation
	if _, op, ok := strings.Cut(call, "."); ok {
		call = op
	}
	query := false
	if call == "" && r.Method == http.MethodPost && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") && r.ParseForm() == nil {
		call, query = r.Form.Get("Action"), true // the query protocol (STS, SNS, SQS's older one)
	}
	if call == "" {
		call = r.Method + " " + r.URL.Path // the REST protocols
	}
	msg := fmt.Sprintf("the local kit does not serve %s (%s): nothing under the kit reaches AWS. "+
		"Point the function at a server of yours with --env FUNCTION.AWS_ENDPOINT_URL_%s=URL (Options.Env), or test this call against AWS",
		service, call, strings.ToUpper(strings.ReplaceAll(service, "-", "_")))
	switch {
	case query:
		cloudWatchError(w, false, http.StatusNotImplemented, "NotImplemented", msg)
	case r.Header.Get("X-Amz-Target") == "" && service == "s3":
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusNotImplemented)
		fmt.Fprintf(w, `<Error><Code>NotImplemented</Code><Message>%s</Message></Error>`, xmlText(msg))
	default:
		awsError(w, http.StatusNotImplemented, "NotImplemented", msg)
	}
}

func awsError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(map[string]string{"__type": code, "Message": msg, "message": msg})
}

// function finds a running function by its name, partial ARN or ARN, with or without a
// qualifier (arn:aws:lambda:region:account:function:name[:qualifier],
// account:function:name[:qualifier], name[:qualifier]): its pipeline and role.
func (k *Kit) function(nameOrArn string) (*run, string) {
	name := nameOrArn
	if _, after, ok := strings.Cut(nameOrArn, ":function:"); ok {
		name = after
	}
	name, _, _ = strings.Cut(name, ":")
	for _, st := range k.stacks {
		for _, r := range st.pipelines {
			if name == st.functionName(r.Consumer) {
				return r, "consumer"
			}
			if r.Dispatcher != "" && name == st.functionName(r.Dispatcher) {
				return r, "dispatcher"
			}
		}
	}
	return nil, ""
}

// lambdaInvoke runs a dispatcher as Lambda's Invoke does: RequestResponse (the default)
// answers with its result, X-Amz-Function-Error when it failed; Event runs it as an
// asynchronous invocation (retries, on-failure destination) and answers 202 at once. A
// consumer is invoked by its poller only: a payload of yours belongs on its queue.
func (k *Kit) lambdaInvoke(w http.ResponseWriter, req *http.Request) {
	r, role := k.function(req.PathValue("name"))
	if r == nil {
		awsError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+req.PathValue("name")+" (the local kit's functions are named <logical id>-<stack>; see the outputs file)")
		return
	}
	if role == "consumer" {
		awsError(w, http.StatusBadRequest, "InvalidRequestContentException", "the local kit invokes a consumer from its queue only: send the message to "+r.QueueURL)
		return
	}
	payload, err := io.ReadAll(req.Body)
	if err != nil {
		awsError(w, http.StatusBadRequest, "InvalidRequestContentException", err.Error())
		return
	}
	switch req.Header.Get("X-Amz-Invocation-Type") {
	case "DryRun":
		w.WriteHeader(http.StatusNoContent)
		return
	case "Event":
		if k.ctx.Err() != nil {
			awsError(w, http.StatusServiceUnavailable, "ServiceException", "the local kit is stopping")
			return
		}
		k.wg.Go(func() { // Close shuts the server down (this handler returns) before it waits for these
			r.mu.Lock()
			defer r.mu.Unlock()
			standin.InvokeAsync(k.ctx, r.st.d, k.sq, r.Dispatcher, payload, r.st.obs.Clock, func(ctx context.Context, payload []byte) (lambdart.Result, error) {
				return k.invoke(ctx, r.st, r.Dispatcher, r.disp, payload)
			}, r.disp.FunctionARN())
		})
		w.WriteHeader(http.StatusAccepted)
		return
	}
	// The invocation runs to its end whatever the client does, as Lambda's does; Close
	// ends it.
	ctx, cancel := context.WithCancel(context.WithoutCancel(req.Context()))
	defer cancel()
	defer context.AfterFunc(k.ctx, cancel)()
	r.mu.Lock()
	res, err := k.invoke(ctx, r.st, r.Dispatcher, r.disp, payload)
	r.mu.Unlock()
	// As Lambda answers: a function that failed in any way (an error, a panic, a timeout, a
	// crash, an init failure) is 200 with X-Amz-Function-Error; only a kit that is stopping
	// is a service error.
	fail := func(typ, msg string) {
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
		json.NewEncoder(w).Encode(map[string]string{"errorType": typ, "errorMessage": msg})
	}
	switch {
	case errors.Is(err, lambdart.ErrClosed) || k.ctx.Err() != nil:
		awsError(w, http.StatusServiceUnavailable, "ServiceException", "the local kit is stopping")
	case errors.Is(err, lambdart.ErrInit):
		fail("Runtime.InitError", err.Error())
	case errors.Is(err, lambdart.ErrTimeout):
		fail("Sandbox.Timedout", err.Error())
	case errors.Is(err, lambdart.ErrCrashed):
		fail("Runtime.ExitError", err.Error())
	case err != nil:
		fail("Runtime.Unknown", err.Error())
	case res.FunctionError != nil:
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
		if len(res.FunctionError.Payload) > 0 {
			w.Write(res.FunctionError.Payload)
		} else {
			json.NewEncoder(w).Encode(res.FunctionError)
		}
	default:
		w.Write(res.Payload)
	}
}

// lambdaMappings answers ListEventSourceMappings: the mapping of the consumer FunctionName
// names, or of every consumer, from the template; Enabled while the kit runs its poller,
// Disabled for a mapping the template disables (the kit does not poll it).
func (k *Kit) lambdaMappings(w http.ResponseWriter, req *http.Request) {
	fn := req.URL.Query().Get("FunctionName")
	var runs []*run
	if fn != "" {
		r, role := k.function(fn)
		if r == nil {
			awsError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+fn)
			return
		}
		if role == "consumer" {
			runs = append(runs, r)
		}
	} else {
		for _, st := range k.stacks {
			runs = append(runs, st.pipelines...)
		}
	}
	list := []map[string]any{}
	for _, r := range runs {
		m := map[string]any{
			"UUID": r.p.Mapping.LogicalID, "EventSourceArn": r.st.d.QueueARN[r.p.Queue], "State": "Enabled", "LastProcessingResult": "OK",
			"FunctionArn": fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", k.region, r.st.d.Account(), r.st.functionName(r.Consumer)),
			"BatchSize":   r.p.Mapping.BatchSize,
		}
		if r.p.Mapping.Disabled {
			m["State"], m["LastProcessingResult"] = "Disabled", "No records processed"
		}
		if r.p.Mapping.MaxConcurrency > 0 {
			m["ScalingConfig"] = map[string]any{"MaximumConcurrency": r.p.Mapping.MaxConcurrency}
		}
		list = append(list, m)
	}
	json.NewEncoder(w).Encode(map[string]any{"EventSourceMappings": list})
}

// schedulerGet answers GetSchedule for a schedule of the templates, by its local name
// (<logical id>-<stack>, what Ref of it gives in the outputs file).
func (k *Kit) schedulerGet(w http.ResponseWriter, req *http.Request) {
	name := req.PathValue("name")
	for _, st := range k.stacks {
		for _, s := range st.d.Template.Schedules {
			if st.d.LocalName(s.LogicalID) != name {
				continue
			}
			group := req.URL.Query().Get("groupName")
			if group == "" {
				group = "default"
			}
			json.NewEncoder(w).Encode(map[string]any{"Name": name, "GroupName": group, "State": "ENABLED",
				"ScheduleExpression": s.Expression, "ScheduleExpressionTimezone": s.Timezone,
				"Target": map[string]any{"Arn": fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", k.region, st.d.Account(), st.functionName(s.Function)), "Input": s.Input}})
			return
		}
	}
	awsError(w, http.StatusNotFound, "ResourceNotFoundException", "Schedule "+name+" does not exist.")
}

// cloudWatch answers DescribeAlarms as CloudWatch does, in its query protocol (form and
// XML, as pipelinectl asks) or its JSON protocol (X-Amz-Target, as the AWS CLI asks; not
// the RPCv2 CBOR protocol of the newest SDKs' CloudWatch clients): with ChildrenOfAlarmName, the composite's children, name and
// state only; with AlarmNames or AlarmNamePrefix (or neither), those metric alarms, and the
// composite alarms too when AlarmTypes names CompositeAlarm, with their reasons and
// descriptions. States are the kit's evaluation now.
func (k *Kit) cloudWatch(w http.ResponseWriter, req *http.Request) {
	q, err := parseAlarmsQuery(req)
	if err != nil {
		cloudWatchError(w, true, http.StatusBadRequest, "SerializationException", err.Error())
		return
	}
	if q.action != "DescribeAlarms" {
		cloudWatchError(w, q.json, http.StatusBadRequest, "InvalidAction", fmt.Sprintf("the local kit answers CloudWatch's DescribeAlarms only, not %q", q.action))
		return
	}
	states, err := k.Alarms()
	if err != nil {
		cloudWatchError(w, q.json, http.StatusInternalServerError, "InternalFailure", err.Error())
		return
	}
	metricAlarms, compositeAlarms := k.pickAlarms(q, k.describeAlarms(states))
	writeAlarms(w, q.json, metricAlarms, compositeAlarms)
}

// alarmsQuery is a DescribeAlarms request, in the JSON protocol or the query one.
type alarmsQuery struct {
	AlarmNames          []string
	AlarmNamePrefix     string
	ChildrenOfAlarmName string
	AlarmTypes          []string
	action              string
	json                bool
}

// cwAlarm is an alarm as DescribeAlarms answers it.
type cwAlarm struct {
	AlarmName, StateValue                     string
	StateReason, AlarmDescription, MetricName string `json:",omitempty"`
	composite                                 bool
}

// parseAlarmsQuery reads a CloudWatch request: JSON (X-Amz-Target) or a query form; an
// error is a JSON body that does not decode.
func parseAlarmsQuery(req *http.Request) (alarmsQuery, error) {
	var q alarmsQuery
	if target := req.Header.Get("X-Amz-Target"); target != "" {
		q.json = true
		_, q.action, _ = strings.Cut(target, ".")
		if err := json.NewDecoder(req.Body).Decode(&q); err != nil && err != io.EOF {
			return q, err
		}
	} else if err := req.ParseForm(); err == nil {
		q.action, q.AlarmNamePrefix, q.ChildrenOfAlarmName = req.Form.Get("Action"), req.Form.Get("AlarmNamePrefix"), req.Form.Get("ChildrenOfAlarmName")
		for i := 1; req.Form.Get(fmt.Sprintf("AlarmNames.member.%d", i)) != ""; i++ {
			q.AlarmNames = append(q.AlarmNames, req.Form.Get(fmt.Sprintf("AlarmNames.member.%d", i)))
		}
		for i := 1; req.Form.Get(fmt.Sprintf("AlarmTypes.member.%d", i)) != ""; i++ {
			q.AlarmTypes = append(q.AlarmTypes, req.Form.Get(fmt.Sprintf("AlarmTypes.member.%d", i)))
		}
	}
	return q, nil
}

// describeAlarms is every alarm of the kit's stacks, with its state.
func (k *Kit) describeAlarms(states []AlarmState) []cwAlarm {
	var all []cwAlarm
	for _, st := range k.stacks {
		for _, s := range states {
			if s.Stack != st.ref.DisplayName {
				continue
			}
			a := cwAlarm{AlarmName: st.d.AlarmName(s.LogicalID), StateValue: s.State,
				StateReason: fmt.Sprintf("evaluated by the local kit on a clock %d times the wall clock", k.opts.AlarmTimeScale)}
			for _, t := range st.d.Template.Alarms {
				if t.LogicalID == s.LogicalID {
					a.AlarmDescription = t.Description
					if ms := t.Metrics(); len(ms) == 1 {
						a.MetricName = ms[0].Name
					}
				}
			}
			for _, c := range st.d.Template.Composites {
				if c.LogicalID == s.LogicalID {
					a.AlarmDescription, a.composite = c.Description, true
				}
			}
			all = append(all, a)
		}
	}
	return all
}

// pickAlarms is what the query asks of all: by name, name prefix or composite parent, by
// type; a composite's children are answered with their names and states only.
func (k *Kit) pickAlarms(q alarmsQuery, all []cwAlarm) (metricAlarms, compositeAlarms []cwAlarm) {
	var pick func(cwAlarm) bool
	full := true
	switch {
	case q.ChildrenOfAlarmName != "":
		full = false
		children := map[string]bool{}
		for _, st := range k.stacks {
			for _, c := range st.d.Template.Composites {
				if st.d.AlarmName(c.LogicalID) == q.ChildrenOfAlarmName {
					for _, child := range c.Children() {
						children[st.d.AlarmName(child)] = true
					}
				}
			}
		}
		pick = func(a cwAlarm) bool { return children[a.AlarmName] }
	case len(q.AlarmNames) > 0:
		pick = func(a cwAlarm) bool { return slices.Contains(q.AlarmNames, a.AlarmName) }
	default:
		pick = func(a cwAlarm) bool { return strings.HasPrefix(a.AlarmName, q.AlarmNamePrefix) }
	}
	composites := slices.Contains(q.AlarmTypes, "CompositeAlarm")
	metrics := len(q.AlarmTypes) == 0 || slices.Contains(q.AlarmTypes, "MetricAlarm")
	for _, a := range all {
		if !pick(a) {
			continue
		}
		if !full {
			a = cwAlarm{AlarmName: a.AlarmName, StateValue: a.StateValue, composite: a.composite}
		}
		switch {
		case a.composite && (composites || !full):
			compositeAlarms = append(compositeAlarms, a)
		case !a.composite && (metrics || !full):
			metricAlarms = append(metricAlarms, a)
		}
	}
	return metricAlarms, compositeAlarms
}

// writeAlarms writes the answer in the request's protocol.
func writeAlarms(w http.ResponseWriter, asJSON bool, metricAlarms, compositeAlarms []cwAlarm) {
	if asJSON {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		json.NewEncoder(w).Encode(map[string]any{"MetricAlarms": orEmpty(metricAlarms), "CompositeAlarms": orEmpty(compositeAlarms)})
		return
	}
	var b strings.Builder
	b.WriteString(`<DescribeAlarmsResponse xmlns="http://monitoring.amazonaws.com/doc/2010-08-01/"><DescribeAlarmsResult>`)
	for _, list := range []struct {
		tag    string
		alarms []cwAlarm
	}{{"MetricAlarms", metricAlarms}, {"CompositeAlarms", compositeAlarms}} {
		b.WriteString("<" + list.tag + ">")
		for _, a := range list.alarms {
			b.WriteString("<member>")
			for _, f := range [][2]string{{"AlarmName", a.AlarmName}, {"StateValue", a.StateValue}, {"StateReason", a.StateReason},
				{"AlarmDescription", a.AlarmDescription}, {"MetricName", a.MetricName}} {
				if f[1] != "" {
					b.WriteString("<" + f[0] + ">" + xmlText(f[1]) + "</" + f[0] + ">")
				}
			}
			b.WriteString("</member>")
		}
		b.WriteString("</" + list.tag + ">")
	}
	b.WriteString(`</DescribeAlarmsResult></DescribeAlarmsResponse>`)
	w.Header().Set("Content-Type", "text/xml")
	io.WriteString(w, b.String())
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// cloudWatchError answers with a CloudWatch error in the request's protocol.
func cloudWatchError(w http.ResponseWriter, asJSON bool, status int, code, msg string) {
	if asJSON {
		awsError(w, status, code, msg)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<ErrorResponse><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error></ErrorResponse>`, code, xmlText(msg))
}

func xmlText(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
