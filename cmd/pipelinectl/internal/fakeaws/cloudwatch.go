// Package fakeaws stands in for the AWS APIs that no local backend serves and pipelinectl
// calls (CloudWatch's DescribeAlarms), as they answer, for the commands' tests. Only tests
// import it.
package fakeaws

import (
	"fmt"
	"net/http"
	"strings"
)

// describeAlarmsPage is one DescribeAlarms answer in CloudWatch's query-API XML: each alarm
// is {name, state, description, metric}. With full false it holds only the name and the state,
// all CloudWatch answers to ChildrenOfAlarmName.
func describeAlarmsPage(next string, full bool, alarms ...[4]string) string {
	var b strings.Builder
	b.WriteString(`<DescribeAlarmsResponse xmlns="http://monitoring.amazonaws.com/doc/2010-08-01/"><DescribeAlarmsResult><MetricAlarms>`)
	for _, a := range alarms {
		if full {
			fmt.Fprintf(&b, `<member><AlarmName>%s</AlarmName><StateValue>%s</StateValue><StateReason>%s</StateReason><AlarmDescription>%s</AlarmDescription><MetricName>%s</MetricName></member>`,
				a[0], a[1], "Threshold Crossed: no datapoints were received for 2 periods and 2 missing datapoints were treated as [Breaching].", a[2], a[3])
		} else {
			fmt.Fprintf(&b, `<member><AlarmName>%s</AlarmName><StateValue>%s</StateValue></member>`, a[0], a[1])
		}
	}
	b.WriteString(`</MetricAlarms><CompositeAlarms/>`)
	if next != "" {
		fmt.Fprintf(&b, `<NextToken>%s</NextToken>`, next)
	}
	b.WriteString(`</DescribeAlarmsResult></DescribeAlarmsResponse>`)
	return b.String()
}

// CloudWatch stands in for DescribeAlarms as CloudWatch answers it: ChildrenOfAlarmName of
// composite (one page each of the pages pagesNow returns at each call, names and states
// only), or AlarmNames.member.N with AlarmTypes (every field of the named alarms). Each
// alarm is {name, state, description, metric}. It refuses a request not signed for
// CloudWatch ("monitoring"). requests, when not nil, records each call's form.
func CloudWatch(composite string, pagesNow func() [][][4]string, requests *[]string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if requests != nil {
			*requests = append(*requests, r.Form.Encode())
		}
		pages := pagesNow()
		if !strings.Contains(r.Header.Get("Authorization"), "/monitoring/aws4_request") || r.Form.Get("Action") != "DescribeAlarms" {
			http.Error(w, `<ErrorResponse><Error><Code>AccessDenied</Code></Error></ErrorResponse>`, http.StatusForbidden)
			return
		}
		if c := r.Form.Get("ChildrenOfAlarmName"); c != "" {
			if c != composite || len(r.Form) > 4 { // Action, Version, ChildrenOfAlarmName, NextToken at most
				http.Error(w, `<ErrorResponse><Error><Code>InvalidParameterCombination</Code></Error></ErrorResponse>`, http.StatusBadRequest)
				return
			}
			page, next := 0, ""
			fmt.Sscanf(r.Form.Get("NextToken"), "page-%d", &page)
			if page+1 < len(pages) {
				next = fmt.Sprintf("page-%d", page+1)
			}
			var alarms [][4]string
			if page < len(pages) {
				alarms = pages[page]
			}
			fmt.Fprint(w, describeAlarmsPage(next, false, alarms...))
			return
		}
		if r.Form.Get("AlarmTypes.member.1") != "MetricAlarm" || r.Form.Get("AlarmTypes.member.2") != "CompositeAlarm" {
			http.Error(w, `<ErrorResponse><Error><Code>InvalidParameterValue</Code></Error></ErrorResponse>`, http.StatusBadRequest)
			return
		}
		byName := map[string][4]string{}
		for _, page := range pages {
			for _, a := range page {
				byName[a[0]] = a
			}
		}
		var named [][4]string
		for i := 1; r.Form.Get(fmt.Sprintf("AlarmNames.member.%d", i)) != ""; i++ {
			if a, ok := byName[r.Form.Get(fmt.Sprintf("AlarmNames.member.%d", i))]; ok {
				named = append(named, a)
			}
		}
		fmt.Fprint(w, describeAlarmsPage("", true, named...))
	}
}
