// Command fn is the Lambda function the lambdart tests run: a real aws-lambda-go main whose
// behaviour the event selects ("action"), and whose init the environment selects (FN_INIT).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

type event struct {
	Action  string   `json:"action"`
	Message string   `json:"message"`
	SleepMs int      `json:"sleepMs"`
	Code    int      `json:"code"`
	Stdout  []string `json:"stdout"`
	Stderr  []string `json:"stderr"`
	Env     []string `json:"env"`
	Size    int      `json:"size"`
}

type response struct {
	RequestID   string             `json:"requestId"`
	DeadlineMs  int64              `json:"deadlineMs"`
	FunctionARN string             `json:"functionArn"`
	TraceID     string             `json:"traceId"`
	Message     string             `json:"message"`
	Invocation  int64              `json:"invocation"`
	PID         int                `json:"pid"`
	Env         map[string]*string `json:"env,omitempty"`
	Data        string             `json:"data,omitempty"`
}

// validationError is a named type, so the Runtime API sees errorType "validationError".
type validationError struct{ msg string }

func (e *validationError) Error() string { return e.msg }

var invocations atomic.Int64

func handle(ctx context.Context, ev event) (*response, error) {
	lc, ok := lambdacontext.FromContext(ctx)
	if !ok {
		return nil, errors.New("no Lambda context")
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		return nil, errors.New("no deadline")
	}
	traceID, _ := ctx.Value("x-amzn-trace-id").(string)
	res := &response{
		RequestID:   lc.AwsRequestID,
		DeadlineMs:  deadline.UnixMilli(),
		FunctionARN: lc.InvokedFunctionArn,
		TraceID:     traceID,
		Message:     ev.Message,
		Invocation:  invocations.Add(1),
		PID:         os.Getpid(),
	}
	switch ev.Action {
	case "echo":
	case "error":
		return nil, &validationError{ev.Message}
	case "panic":
		panic(ev.Message)
	case "sleep":
		// Ignores ctx on purpose: a function that overruns its deadline.
		fmt.Println("sleeping")
		time.Sleep(time.Duration(ev.SleepMs) * time.Millisecond)
	case "exit":
		fmt.Println("exiting")
		os.Exit(ev.Code)
	case "print":
		for i := range max(len(ev.Stdout), len(ev.Stderr)) {
			if i < len(ev.Stdout) {
				fmt.Fprintln(os.Stdout, ev.Stdout[i])
			}
			if i < len(ev.Stderr) {
				fmt.Fprintln(os.Stderr, ev.Stderr[i])
			}
		}
	case "env":
		res.Env = map[string]*string{}
		for _, k := range ev.Env {
			if v, ok := os.LookupEnv(k); ok {
				res.Env[k] = &v
			} else {
				res.Env[k] = nil
			}
		}
	case "spawn":
		// A child in the function's process group that outlives nothing: it must die with
		// the function.
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		child := exec.Command(self)
		child.Env = append(os.Environ(), "FN_CHILD=sleep")
		if err := child.Start(); err != nil {
			return nil, err
		}
		fmt.Printf("child %d\n", child.Process.Pid)
		time.Sleep(time.Hour)
	case "big":
		res.Data = strings.Repeat("x", ev.Size)
	default:
		return nil, fmt.Errorf("unknown action %q", ev.Action)
	}
	return res, nil
}

func main() {
	switch os.Getenv("FN_CHILD") {
	case "sleep":
		time.Sleep(time.Hour)
		return
	}
	switch os.Getenv("FN_INIT") {
	case "error":
		postInitError()
		select {} // the Runtime API ends the process, as Lambda does
	case "exit":
		fmt.Println("missing configuration")
		os.Exit(2)
	case "sleep":
		time.Sleep(time.Hour)
	}
	fmt.Println("init done")
	lambda.Start(handle)
}

// postInitError reports a failed init the way a runtime does; aws-lambda-go has no call for it.
func postInitError() {
	body, _ := json.Marshal(map[string]string{"errorType": "InitTestError", "errorMessage": "config invalid"})
	url := "http://" + os.Getenv("AWS_LAMBDA_RUNTIME_API") + "/2018-06-01/runtime/init/error"
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
	req.Header.Set("Lambda-Runtime-Function-Error-Type", "InitTestError")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
}
