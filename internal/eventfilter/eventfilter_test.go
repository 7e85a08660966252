package eventfilter

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// message is an SQS record as Lambda puts it in an event, after the example record of
// "Using event filtering with an Amazon SQS event source".
func message(body string) events.SQSMessage {
	return events.SQSMessage{
		MessageId:     "059f36b4-87a3-44ab-83d2-661975830a7d",
		ReceiptHandle: "AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a...",
		Body:          body,
		Attributes: map[string]string{
			"ApproximateReceiveCount":          "1",
			"SentTimestamp":                    "1545082649183",
			"SenderId":                         "AIDAIENQZJOLO23YVJ4VO",
			"ApproximateFirstReceiveTimestamp": "1545082649185",
		},
		MessageAttributes: map[string]events.SQSMessageAttribute{},
		Md5OfBody:         "e4e68fb7bd0e697a0ae8f1bb342846b3",
		EventSource:       "aws:sqs",
		EventSourceARN:    "arn:aws:sqs:us-west-2:123456789012:my-queue",
		AWSRegion:         "us-west-2",
	}
}

func marshal(t *testing.T, m events.SQSMessage) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func compile(t *testing.T, patterns ...string) *Criteria {
	t.Helper()
	c, err := Compile(patterns)
	if err != nil {
		t.Fatalf("Compile(%q): %v", patterns, err)
	}
	return c
}

// inBody puts a rule of the documentation's syntax on the fields of a JSON body.
func inBody(rule string) string { return `{"body": {` + rule + `}}` }

// TestOperators checks each comparison operator on the documentation's own example, with
// bodies that match it and bodies that do not.
func TestOperators(t *testing.T) {
	tests := []struct {
		name           string
		pattern        string
		match, noMatch []string // JSON bodies
	}{
		// "Control which events Lambda sends to your function", Filter rule syntax:
		// Null, UserID is null: "UserID": [ null ]
		{"null", inBody(`"UserID": [ null ]`),
			[]string{`{"UserID": null}`},
			[]string{`{"UserID": "null"}`, `{"UserID": ""}`, `{}`}},
		// "Control which events Lambda sends to your function", Filter rule syntax:
		// Empty, LastName is empty: "LastName": [""]
		{"empty", inBody(`"LastName": [""]`),
			[]string{`{"LastName": ""}`},
			[]string{`{"LastName": "Doe"}`, `{"LastName": null}`, `{}`}},
		// "Control which events Lambda sends to your function", Filter rule syntax:
		// Equals, Name is "Alice": "Name": [ "Alice" ]
		{"equals", inBody(`"Name": [ "Alice" ]`),
			[]string{`{"Name": "Alice"}`},
			[]string{`{"Name": "alice"}`, `{"Name": "Alice "}`, `{"name": "Alice"}`}},
		// "Control which events Lambda sends to your function", Attaching filter criteria
		// (console): { "Metadata" : [ 1, 2 ] } "process only the records where field
		// Metadata is equal to 1 or 2"
		{"equals a number", inBody(`"Metadata" : [ 1, 2 ]`),
			[]string{`{"Metadata": 2}`, `{"Metadata": 1}`},
			[]string{`{"Metadata": 3}`, `{"Metadata": "1"}`, `{"Metadata": 1.5}`, `{"Metadata": 1.0}`}},
		// "Control which events Lambda sends to your function", Filter rule syntax:
		// Equals (ignore case), Name is "Alice": "Name": [ { "equals-ignore-case": "alice" } ]
		{"equals-ignore-case", inBody(`"Name": [ { "equals-ignore-case": "alice" } ]`),
			[]string{`{"Name": "Alice"}`, `{"Name": "ALICE"}`},
			[]string{`{"Name": "Alicia"}`, `{"Name": ["Bob"]}`}},
		// "Control which events Lambda sends to your function", Filter rule syntax:
		// And, Location is "New York" and Day is "Monday":
		// "Location": [ "New York" ], "Day": ["Monday"]
		{"and", inBody(`"Location": [ "New York" ], "Day": ["Monday"]`),
			[]string{`{"Location": "New York", "Day": "Monday", "Weather": "Sunny"}`},
			[]string{`{"Location": "New York", "Day": "Tuesday"}`, `{"Location": "New York"}`}},
		// "Control which events Lambda sends to your function", Filter rule syntax:
		// Or, PaymentType is "Credit" or "Debit": "PaymentType": [ "Credit", "Debit"]
		{"or", inBody(`"PaymentType": [ "Credit", "Debit"]`),
			[]string{`{"PaymentType": "Credit"}`, `{"PaymentType": "Debit"}`},
			[]string{`{"PaymentType": "Cash"}`}},
		// "Control which events Lambda sends to your function", Filter rule syntax:
		// Or (multiple fields), Location is "New York", or Day is "Monday".:
		// "$or": [ { "Location": [ "New York" ] }, { "Day": [ "Monday" ] } ]
		{"$or", inBody(`"$or": [ { "Location": [ "New York" ] }, { "Day": [ "Monday" ] } ]`),
			[]string{`{"Location": "New York", "Day": "Sunday"}`, `{"Location": "Paris", "Day": "Monday"}`},
			[]string{`{"Location": "Paris", "Day": "Sunday"}`, `{}`}},
		// "Control which events Lambda sends to your function", Filter rule syntax:
		// Not, Weather is anything but "Raining": "Weather": [ { "anything-but": [ "Raining" ] } ]
		{"anything-but a list", inBody(`"Weather": [ { "anything-but": [ "Raining" ] } ]`),
			[]string{`{"Weather": "Sunny"}`, `{"Weather": "raining"}`, `{"Weather": 7}`},
			[]string{`{"Weather": "Raining"}`, `{}`}},
		// "Content filtering in Amazon EventBridge event patterns", Anything-but matching:
		// "state": [ { "anything-but": "initializing" } ]
		{"anything-but a string", inBody(`"state": [ { "anything-but": "initializing" } ]`),
			[]string{`{"state": "running"}`},
			[]string{`{"state": "initializing"}`}},
		// "Content filtering in Amazon EventBridge event patterns", Anything-but matching:
		// "x-limit": [ { "anything-but": [ 100, 200, 300 ] } ]
		{"anything-but numbers", inBody(`"x-limit": [ { "anything-but": [ 100, 200, 300 ] } ]`),
			[]string{`{"x-limit": 150}`, `{"x-limit": "100"}`, `{"x-limit": 3.0e2}`},
			[]string{`{"x-limit": 200}`, `{"x-limit": 300}`}},
		// "Control which events Lambda sends to your function", Filter rule syntax:
		// Numeric (equals), Price is 100: "Price": [ { "numeric": [ "=", 100 ] } ]
		{"numeric equals", inBody(`"Price": [ { "numeric": [ "=", 100 ] } ]`),
			[]string{`{"Price": 100}`, `{"Price": 1e2}`, `{"Price": 100.0}`},
			[]string{`{"Price": 100.5}`, `{"Price": "100"}`, `{}`}},
		// "Control which events Lambda sends to your function", Filter rule syntax:
		// Numeric (range), Price is more than 10, and less than or equal to 20:
		// "Price": [ { "numeric": [ ">", 10, "<=", 20 ] } ]
		{"numeric range", inBody(`"Price": [ { "numeric": [ ">", 10, "<=", 20 ] } ]`),
			[]string{`{"Price": 20}`, `{"Price": 10.5}`},
			[]string{`{"Price": 10}`, `{"Price": 20.01}`, `{"Price": "15"}`}},
		// "Content filtering in Amazon EventBridge event patterns", Numeric matching:
		// "d-count": [ { "numeric": [ "<", 10 ] } ]
		{"numeric less than", inBody(`"d-count": [ { "numeric": [ "<", 10 ] } ]`),
			[]string{`{"d-count": 9.99}`, `{"d-count": -3}`},
			[]string{`{"d-count": 10}`}},
		{"numeric at most", inBody(`"d-count": [ { "numeric": [ "<=", 10 ] } ]`),
			[]string{`{"d-count": 10}`},
			[]string{`{"d-count": 10.000001}`}},
		{"numeric at least", inBody(`"d-count": [ { "numeric": [ ">=", 10 ] } ]`),
			[]string{`{"d-count": 10}`, `{"d-count": 1e9}`},
			[]string{`{"d-count": 9}`}},
		{"numeric range from at least", inBody(`"d-count": [ { "numeric": [ ">=", 0, "<", 5 ] } ]`),
			[]string{`{"d-count": 0}`, `{"d-count": 4.5}`},
			[]string{`{"d-count": 5}`, `{"d-count": -1}`}},
		// "Control which events Lambda sends to your function", Filter rule syntax:
		// Exists, ProductName exists: "ProductName": [ { "exists": true } ]
		{"exists", inBody(`"ProductName": [ { "exists": true } ]`),
			[]string{`{"ProductName": "Widget"}`, `{"ProductName": ""}`},
			[]string{`{"productName": "Widget"}`, `{}`, `{"ProductName": {"en": "Widget"}}`}},
		// "Control which events Lambda sends to your function", Filter rule syntax:
		// Does not exist, ProductName does not exist: "ProductName": [ { "exists": false } ]
		{"does not exist", inBody(`"ProductName": [ { "exists": false } ]`),
			[]string{`{}`, `{"productName": "Widget"}`, `{"ProductName": {"en": "Widget"}}`},
			[]string{`{"ProductName": "Widget"}`}},
		// "Control which events Lambda sends to your function", Filter rule syntax: "the
		// filter pattern { "person": { "address": [ { "exists": true } ] } }" wouldn't find a
		// match because "address" is an intermediate node.
		{"exists on an intermediate node", `{"body": { "person": { "address": [ { "exists": true } ] } }}`,
			[]string{`{"person": {"name": "John Doe", "address": "123 Main St"}}`},
			[]string{`{"person": {"name": "John Doe", "age": 30, "address": {"street": "123 Main St", "city": "Anytown", "country": "USA"}}}`}},
		// "Control which events Lambda sends to your function", Filter rule syntax:
		// Begins with, Region is in the US: "Region": [ {"prefix": "us-" } ]
		{"prefix", inBody(`"Region": [ {"prefix": "us-" } ]`),
			[]string{`{"Region": "us-east-1"}`},
			[]string{`{"Region": "eu-west-1"}`, `{"Region": "US-EAST-1"}`}},
		// "Control which events Lambda sends to your function", Filter rule syntax:
		// Ends with, FileName ends with a .png extension.: "FileName": [ { "suffix": ".png" } ]
		{"suffix", inBody(`"FileName": [ { "suffix": ".png" } ]`),
			[]string{`{"FileName": "cat.png"}`},
			[]string{`{"FileName": "cat.jpg"}`, `{"FileName": "cat.PNG"}`}},
		// "Content filtering in Amazon EventBridge event patterns", IP address matching:
		// "sourceIPAddress": [ { "cidr": "10.0.0.0/24" } ]
		{"cidr", inBody(`"sourceIPAddress": [ { "cidr": "10.0.0.0/24" } ]`),
			[]string{`{"sourceIPAddress": "10.0.0.11"}`, `{"sourceIPAddress": "10.0.0.255"}`},
			[]string{`{"sourceIPAddress": "10.0.1.1"}`, `{"sourceIPAddress": "host"}`, `{"sourceIPAddress": 10}`}},
		// "Content filtering in Amazon EventBridge event patterns": "You can use IP address
		// matching for IPv4 and IPv6 addresses".
		{"cidr IPv6", inBody(`"sourceIPAddress": [ { "cidr": "2001:db8::/32" } ]`),
			[]string{`{"sourceIPAddress": "2001:db8::1"}`},
			[]string{`{"sourceIPAddress": "2001:db9::1"}`, `{"sourceIPAddress": "10.0.0.1"}`}},
		// "Using event filtering with an Amazon SQS event source":
		// { "body" : { "RequestCode" : [ "BBBB" ] } }
		{"SQS body equals", `{ "body" : { "RequestCode" : [ "BBBB" ] } }`,
			[]string{"{\n \"RecordNumber\": 1234,\n \"TimeStamp\": \"yyyy-mm-ddThh:mm:ss\",\n \"RequestCode\": \"BBBB\"\n}"},
			[]string{"{\n \"RecordNumber\": 1234,\n \"TimeStamp\": \"yyyy-mm-ddThh:mm:ss\",\n \"RequestCode\": \"AAAA\"\n}"}},
		// "Using event filtering with an Amazon SQS event source":
		// { "body" : { "RecordNumber" : [ { "numeric": [ ">", 9999 ] } ] } }
		{"SQS body numeric", `{ "body" : { "RecordNumber" : [ { "numeric": [ ">", 9999 ] } ] } }`,
			[]string{`{"RecordNumber": 10000, "RequestCode": "AAAA"}`},
			[]string{`{"RecordNumber": 1234, "RequestCode": "AAAA"}`, `{"RecordNumber": "10000"}`}},
		// Event Ruler README, Simple matching: "if the value in the event is also an array, the
		// rule matches if the intersection between the event array and rule-array is non-empty".
		{"array in the record", inBody(`"tags": [ "b", "z" ]`),
			[]string{`{"tags": ["a", "b"]}`, `{"tags": [["x", "z"]]}`},
			[]string{`{"tags": ["a", "c"]}`, `{"tags": []}`}},
		// Event Ruler README, JSON Array Matching: { "employees": { "firstName": [ "Anna" ] } }
		// matches, and "Anna"/"Jones" from different elements does not.
		{"array of objects", inBody(`"employees": { "firstName": [ "Anna" ], "lastName": [ "Smith" ] }`),
			[]string{`{"employees": [{"firstName": "John", "lastName": "Doe"}, {"firstName": "Anna", "lastName": "Smith"}]}`},
			[]string{`{"employees": [{"firstName": "Anna", "lastName": "Jones"}, {"firstName": "Peter", "lastName": "Smith"}]}`}},
		// "Control which events Lambda sends to your function": "For numbers, Lambda also uses
		// string representation. For example, 300, 300.0, and 3.0e2 are not considered equal."
		{"numbers by their text", inBody(`"Price": [ 300 ]`),
			[]string{`{"Price": 300}`},
			[]string{`{"Price": 3.0e2}`, `{"Price": 300.0}`, `{"Price": 300.5}`, `{"Price": "300"}`}},
		{"numbers beyond float64 by their text", inBody(`"Account": [ 12345678901234567891 ]`),
			[]string{`{"Account": 12345678901234567891}`},
			[]string{`{"Account": 12345678901234567892}`}},
		{"true and false", inBody(`"Paid": [ true ]`),
			[]string{`{"Paid": true}`},
			[]string{`{"Paid": false}`, `{"Paid": "true"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := compile(t, tt.pattern)
			for _, body := range tt.match {
				if !c.Match(marshal(t, message(body))) {
					t.Errorf("%s does not match body %s", tt.pattern, body)
				}
			}
			for _, body := range tt.noMatch {
				if c.Match(marshal(t, message(body))) {
					t.Errorf("%s matches body %s", tt.pattern, body)
				}
			}
		})
	}
}

// TestBodyFormat checks every row of the table in "Using event filtering with an Amazon SQS
// event source": "If there is a mismatch, Lambda drops the message."
func TestBodyFormat(t *testing.T) {
	tests := []struct {
		row     string // incoming message body format / filter pattern body format
		pattern string
		body    string
		want    bool
	}{
		// Plain string / Plain string: Lambda filters based on your filter criteria.
		{"plain/plain", `{"body": ["Result: ok", "done"]}`, "done", true},
		{"plain/plain", `{"body": [{"prefix": "Result: "}]}`, "Result: ok", true},
		{"plain/plain", `{"body": [{"prefix": "Result: "}]}`, "Error: no", false},
		{"plain/plain", `{"body": [{"exists": true}]}`, "anything", true},
		// Plain string / No filter pattern for data properties: Lambda filters (on the other
		// metadata properties only) based on your filter criteria.
		{"plain/none", `{"eventSource": ["aws:sqs"]}`, "anything", true},
		{"plain/none", `{"awsRegion": ["eu-west-1"]}`, "anything", false},
		// Plain string / Valid JSON: Lambda drops the message.
		{"plain/JSON", `{"body": {"RequestCode": ["BBBB"]}}`, "RequestCode: BBBB", false},
		{"plain/JSON", `{"body": {"RequestCode": [{"exists": false}]}}`, "no fields here", false},
		// Valid JSON / Plain string: Lambda drops the message.
		{"JSON/plain", `{"body": ["{\"RequestCode\":\"BBBB\"}"]}`, `{"RequestCode":"BBBB"}`, false},
		{"JSON/plain", `{"body": [{"prefix": "{"}]}`, `{"RequestCode":"BBBB"}`, false},
		{"JSON/plain", `{"body": [{"exists": true}]}`, `{"RequestCode":"BBBB"}`, false},
		{"JSON/plain", `{"body": [42]}`, `42`, false},
		// Valid JSON / No filter pattern for data properties: Lambda filters (on the other
		// metadata properties only) based on your filter criteria.
		{"JSON/none", `{"eventSource": ["aws:sqs"]}`, `{"RequestCode":"BBBB"}`, true},
		{"JSON/none", `{"awsRegion": ["eu-west-1"]}`, `{"RequestCode":"BBBB"}`, false},
		// Valid JSON / Valid JSON: Lambda filters based on your filter criteria.
		{"JSON/JSON", `{"body": {"RequestCode": ["BBBB"]}}`, `{"RequestCode":"BBBB"}`, true},
		{"JSON/JSON", `{"body": {"RequestCode": ["BBBB"]}}`, `{"RequestCode":"AAAA"}`, false},
		{"JSON/JSON", `{"body": {"RequestCode": ["BBBB"]}}`, `[{"RequestCode":"BBBB"}]`, true},
		// The rule holds in each alternative of a top-level "$or".
		{"$or", `{"$or": [{"body": {"a": ["x"]}}, {"body": ["plain"]}]}`, `{"a":"x"}`, true},
		{"$or", `{"$or": [{"body": {"a": ["x"]}}, {"body": ["plain"]}]}`, "plain", true},
		{"$or", `{"$or": [{"body": {"a": ["x"]}}, {"body": ["plain"]}]}`, `"plain"`, false},
	}
	for _, tt := range tests {
		c := compile(t, tt.pattern)
		if got := c.Match(marshal(t, message(tt.body))); got != tt.want {
			t.Errorf("%s: %s on body %q: Match = %v, want %v", tt.row, tt.pattern, tt.body, got, tt.want)
		}
	}
}

// TestMetadata checks patterns on the record's fields other than body.
func TestMetadata(t *testing.T) {
	typed := func(body, typ string) events.SQSMessage {
		m := message(body)
		m.MessageAttributes["type"] = events.SQSMessageAttribute{StringValue: &typ, DataType: "String"}
		return m
	}
	tests := []struct {
		pattern string
		msg     events.SQSMessage
		want    bool
	}{
		{`{"messageAttributes": {"type": {"stringValue": ["order"]}}}`, typed("x", "order"), true},
		{`{"messageAttributes": {"type": {"stringValue": ["order"]}}}`, typed("x", "refund"), false},
		{`{"messageAttributes": {"type": {"stringValue": ["order"]}}}`, message("x"), false},
		{`{"messageAttributes": {"type": {"stringValue": ["order"]}}, "body": {"n": [1]}}`, typed(`{"n":1}`, "order"), true},
		{`{"messageAttributes": {"type": {"stringValue": ["order"]}}, "body": {"n": [1]}}`, typed(`{"n":2}`, "order"), false},
		{`{"attributes": {"ApproximateReceiveCount": ["1"]}}`, message("x"), true},
		{`{"attributes": {"ApproximateReceiveCount": [1]}}`, message("x"), false}, // a string, not a number
		{`{"eventSourceARN": [{"suffix": ":my-queue"}]}`, message("x"), true},
		{`{"awsregion": ["us-west-2"]}`, message("x"), false}, // field names are case-sensitive
	}
	for _, tt := range tests {
		c := compile(t, tt.pattern)
		if got := c.Match(marshal(t, tt.msg)); got != tt.want {
			t.Errorf("%s on %+v: Match = %v, want %v", tt.pattern, tt.msg, got, tt.want)
		}
	}
}

// TestFilters checks that filters are ORed: "If a record from your event source satisfies
// one or more of your filters, Lambda includes the record ... If none of your filters are
// satisfied, Lambda discards the record."
func TestFilters(t *testing.T) {
	c := compile(t,
		`{"body": {"type": ["order"]}}`,
		`{"body": {"type": ["refund"], "amount": [{"numeric": [">", 100]}]}}`,
		`{"body": ["ping"]}`,
	)
	tests := []struct {
		record string
		want   bool
	}{
		{string(marshal(t, message(`{"type": "order"}`))), true},
		{string(marshal(t, message(`{"type": "refund", "amount": 150}`))), true},
		{string(marshal(t, message("ping"))), true},
		{string(marshal(t, message(`{"type": "refund", "amount": 50}`))), false}, // no filter
		{string(marshal(t, message(`{"type": "invoice"}`))), false},              // no filter
		{string(marshal(t, message("pong"))), false},                             // no filter
		{`not a record`, false},
		{`["a record is an object"]`, false},
	}
	for _, tt := range tests {
		if got := c.Match([]byte(tt.record)); got != tt.want {
			t.Errorf("Match(%s) = %v, want %v", tt.record, got, tt.want)
		}
	}
}

// TestCompileErrors checks each rule Compile refuses a pattern by.
func TestCompileErrors(t *testing.T) {
	long := `{"a":["` + strings.Repeat("x", 4087) + `"]}` // 4097 characters
	tests := []struct {
		patterns []string
		want     string
	}{
		{nil, "no filter patterns"},
		{[]string{long}, "filter 0: pattern is 4097 characters long, more than the 4096 Lambda allows"},
		{[]string{`{"a": [`}, "filter 0: pattern is not valid JSON"},
		{[]string{`simple string`}, "filter 0: pattern is not valid JSON"},
		{[]string{`null`}, "filter 0: pattern must be a JSON object, got null"},
		{[]string{`["a"]`}, `filter 0: pattern must be a JSON object, got ["a"]`},
		{[]string{`{}`}, "filter 0: pattern is an empty object"},
		{[]string{`{"body": {}}`}, "filter 0: body: empty object"},
		{[]string{`{"eventSource": "aws:sqs"}`}, `filter 0: eventSource: want an array of values or an object of fields, got "aws:sqs"`},
		{[]string{`{"eventSource": []}`}, "filter 0: eventSource: empty array, want at least one value"},
		{[]string{`{"body": {"a": [["x"]]}}`}, `filter 0: body.a: want a string, number, true, false, null or operator object, got ["x"]`},
		{[]string{`{"body": {"a": [{"prefix": "x", "suffix": "y"}]}}`}, `filter 0: body.a: an operator object has exactly one key, got {"prefix":"x","suffix":"y"}`},
		{[]string{`{"body": {"a": [{}]}}`}, `filter 0: body.a: an operator object has exactly one key, got {}`},
		{[]string{`{"body": {"a": [{"wildcard": "*.png"}]}}`}, `filter 0: body.a: unknown operator "wildcard"`},
		{[]string{`{"body": {"a": [{"prefix": {"equals-ignore-case": "us-"}}]}}`}, `filter 0: body.a: prefix: want a string, got {"equals-ignore-case":"us-"}`},
		{[]string{`{"body": {"a": [{"suffix": 5}]}}`}, `filter 0: body.a: suffix: want a string, got 5`},
		{[]string{`{"body": {"a": [{"equals-ignore-case": null}]}}`}, `filter 0: body.a: equals-ignore-case: want a string, got null`},
		{[]string{`{"body": {"a": [{"exists": "true"}]}}`}, `filter 0: body.a: exists: want true or false, got "true"`},
		{[]string{`{"body": {"a": [{"anything-but": ["x", 1]}]}}`}, `filter 0: body.a: anything-but: want a string, a number, or a list of only strings or only numbers, got ["x",1]`},
		{[]string{`{"body": {"a": [{"anything-but": []}]}}`}, `filter 0: body.a: anything-but: want a string, a number, or a list of only strings or only numbers, got []`},
		{[]string{`{"body": {"a": [{"anything-but": null}]}}`}, `filter 0: body.a: anything-but: want a string, a number, or a list of only strings or only numbers, got null`},
		{[]string{`{"body": {"a": [{"anything-but": {"prefix": "init"}}]}}`}, `filter 0: body.a: anything-but: want a string, a number, or a list of only strings or only numbers, got {"prefix":"init"}`},
		{[]string{`{"body": {"a": ["x"]}}`, `{"body": {"amount": [{"numeric": [">", "x"]}]}}`}, `filter 1: body.amount: numeric: want an operator and a number, got [">","x"]`},
		{[]string{`{"body": {"amount": [{"numeric": 5}]}}`}, `filter 0: body.amount: numeric: want an operator and a number, got 5`},
		{[]string{`{"body": {"amount": [{"numeric": [">", 1, "<"]}]}}`}, `filter 0: body.amount: numeric: want an operator and a number, got [">",1,"<"]`},
		{[]string{`{"body": {"amount": [{"numeric": [5, ">"]}]}}`}, `filter 0: body.amount: numeric: want an operator and a number, got [5,">"]`},
		{[]string{`{"body": {"amount": [{"numeric": ["!=", 5]}]}}`}, `filter 0: body.amount: numeric: unknown operator "!="`},
		{[]string{`{"body": {"amount": [{"numeric": ["<", 1e400]}]}}`}, `filter 0: body.amount: numeric: 1e400 is not a number Lambda can compare`},
		{[]string{`{"body": {"amount": [{"numeric": ["=", 12345678901234567891]}]}}`}, `filter 0: body.amount: numeric: 12345678901234567891 is not a number Lambda can compare`},
		{[]string{`{"body": {"amount": [{"numeric": ["<", 10, ">", 1]}]}}`}, `filter 0: body.amount: numeric: a range is ">" or ">=" a number then "<" or "<=" a number, got ["<",10,">",1]`},
		{[]string{`{"body": {"amount": [{"numeric": ["=", 10, "<", 20]}]}}`}, `filter 0: body.amount: numeric: a range is ">" or ">=" a number then "<" or "<=" a number, got ["=",10,"<",20]`},
		{[]string{`{"body": {"amount": [{"numeric": [">", 20, "<=", 10]}]}}`}, `filter 0: body.amount: numeric: empty range, 20 is not below 10`},
		{[]string{`{"body": {"amount": [{"numeric": [">=", 5, "<=", 5]}]}}`}, `filter 0: body.amount: numeric: empty range, 5 is not below 5`},
		{[]string{`{"body": {"ip": [{"cidr": 10}]}}`}, `filter 0: body.ip: cidr: want a string, got 10`},
		{[]string{`{"body": {"ip": [{"cidr": "10.0.0.0"}]}}`}, `filter 0: body.ip: cidr: "10.0.0.0" is not an IP address block like "10.0.0.0/24"`},
		{[]string{`{"body": {"ip": [{"cidr": "10.0.0.1/32"}]}}`}, `filter 0: body.ip: cidr: "10.0.0.1/32": the mask must be shorter than 32 bits`},
		{[]string{`{"body": {"ip": [{"cidr": "2001:db8::1/128"}]}}`}, `filter 0: body.ip: cidr: "2001:db8::1/128": the mask must be shorter than 128 bits`},
		{[]string{`{"$or": {"a": ["x"]}}`}, `filter 0: $or: want an array of at least two objects, got {"a":["x"]}`},
		{[]string{`{"$or": "a"}`}, `filter 0: $or: want an array of at least two objects, got "a"`},
		{[]string{`{"$or": []}`}, `filter 0: $or: want an array of at least two objects, got []`},
		{[]string{`{"body": {"$or": [{"a": ["x"]}]}}`}, `filter 0: body.$or: want an array of at least two objects, got [{"a":["x"]}]`},
		{[]string{`{"$or": [{"a": ["x"]}, "b"]}`}, `filter 0: $or: want an array of at least two objects, got [{"a":["x"]},"b"]`},
		{[]string{`{"$or": [{"a": ["x"]}, {"b": "y"}]}`}, `filter 0: $or[1].b: want an array of values or an object of fields, got "y"`},
	}
	for _, tt := range tests {
		c, err := Compile(tt.patterns)
		if err == nil {
			t.Errorf("Compile(%q) = %v, want error %q", tt.patterns, c, tt.want)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("Compile(%q):\n got error %q\nwant error %q", tt.patterns, err, tt.want)
		}
	}
}

// TestMatchDocument: an SNS subscription's filter policy on a message's attributes, with the
// example of "Amazon SNS message filtering" (attributes store, customer_interests, price_usd),
// and no rule of its own for a field named body (Match's SQS body table).
func TestMatchDocument(t *testing.T) {
	attrs := []byte(`{"store":"example_corp","customer_interests":["soccer","rugby","hockey"],"price_usd":210.75}`)
	tests := []struct {
		policy string
		doc    []byte
		want   bool
	}{
		{`{"store":["example_corp"],"customer_interests":["rugby"],"price_usd":[{"numeric":[">",100]}]}`, attrs, true},
		{`{"store":["example_corp"],"price_usd":[{"numeric":["<",100]}]}`, attrs, false},
		{`{"customer_interests":[{"prefix":"hock"}]}`, attrs, true}, // an array attribute: any element
		{`{"store":[{"anything-but":["example_corp"]}]}`, attrs, false},
		{`{"encrypted":[{"exists":false}]}`, attrs, true},
		{`{"body":[{"prefix":"{"}]}`, []byte(`{"body":"{\"a\":1}"}`), true}, // a string here; Match would parse it
		{`{"store":["example_corp"]}`, []byte(`not json`), false},
	}
	for _, tt := range tests {
		if got := compile(t, tt.policy).MatchDocument(tt.doc); got != tt.want {
			t.Errorf("%s on %s: MatchDocument = %v, want %v", tt.policy, tt.doc, got, tt.want)
		}
	}
}
