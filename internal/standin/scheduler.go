package standin

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// ScheduleInput is the event EventBridge Scheduler hands the dispatcher for one firing: the
// schedule's target input from the template with Scheduler's context attributes filled in.
// A retried or duplicated firing carries the same scheduled time and a different execution
// id, which is what the dispatcher must derive its keys from. items, when not nil, replaces
// the template's work items (the scenarios need more than the two the stack ships with).
func ScheduleInput(s Schedule, scheduled time.Time, executionID string, items []map[string]any) ([]byte, error) {
	if !strings.Contains(s.Input, "<aws.scheduler.scheduled-time>") {
		return nil, fmt.Errorf("schedule %s: the input does not carry <aws.scheduler.scheduled-time>: the dispatcher would have to use the wall clock", s.LogicalID)
	}
	in := strings.NewReplacer(
		"<aws.scheduler.scheduled-time>", scheduled.UTC().Format(time.RFC3339),
		"<aws.scheduler.execution-id>", executionID,
	).Replace(s.Input)
	if items == nil {
		return []byte(in), nil
	}
	var ev map[string]any
	if err := json.Unmarshal([]byte(in), &ev); err != nil {
		return nil, fmt.Errorf("schedule %s input: %w", s.LogicalID, err)
	}
	if _, ok := ev["items"]; !ok {
		return nil, fmt.Errorf("schedule %s input has no items to replace", s.LogicalID)
	}
	ev["items"] = items
	return json.Marshal(ev)
}
