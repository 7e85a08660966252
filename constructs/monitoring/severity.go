package monitoring

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
)

// severity decides which topic an alarm notifies and whether the composite "pipeline
// unhealthy" alarm covers it.
//
// An alarm pages when work is lost or stuck and will stay so until someone acts: a message
// in a dead-letter queue or on-failure queue, a stalled consumer, a schedule invocation
// dropped or dead-lettered, a heartbeat that no longer completes (the pipeline is broken
// even if nothing is waiting yet). Everything else the pipeline retries on its own (function errors
// within a batch's retries, throttles, DynamoDB errors the store retries, schedule target
// errors within the retry policy) or is a trend (message age, backlog): those open a ticket.
// Work that keeps failing ends in a DLQ or stalls the consumer, so it pages then.
type severity int

const (
	sevTicket severity = iota
	sevPage
)

func (s severity) String() string {
	if s == sevPage {
		return "page"
	}
	return "ticket"
}

// anchorUnhealthy is the composite alarm's section of docs/runbooks.md (each alarm of the
// Watch methods names its own in its definition, alarms.go). The anchor is GitHub's for the
// section's heading (lower case, punctuation dropped, spaces as hyphens).
const anchorUnhealthy = "pipeline-unhealthy"

// describe ends an alarm description with its severity and its runbook section.
func (m *pipelineMonitoring) describe(text string, sev severity, anchor string) string {
	return fmt.Sprintf("%s Severity: %s. Runbook: %s#%s", text, sev, m.s.runbookURL, anchor)
}

// notify sends alarm's notifications to the topic of sev and files it under sev.
func (m *pipelineMonitoring) notify(alarm awscloudwatch.Alarm, sev severity) {
	action := m.ticketing
	if sev == sevPage {
		action = m.page
		m.paging = append(m.paging, alarm)
	} else {
		m.ticketed = append(m.ticketed, alarm)
	}
	alarm.AddAlarmAction(action)
	if m.s.notifyOnOK {
		alarm.AddOkAction(action)
	}
	m.alarms = append(m.alarms, alarm)
}
