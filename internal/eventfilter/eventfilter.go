// Package eventfilter matches Amazon SQS records against the filter criteria (FilterCriteria)
// of an AWS Lambda event source mapping, as Lambda does before it invokes a function: a record
// is delivered when it matches at least one filter, and Lambda deletes from the queue a record
// that matches none (the caller does that; this package only matches).
//
// A filter's Pattern is an EventBridge-style JSON pattern. It understands the comparison
// operators of "Filter rule syntax" in Lambda's "Control which events Lambda sends to your
// function":
//
//   - equals: a string, a number, true, false or null in a field's array ("" is the empty
//     string, null matches a JSON null, not a missing field);
//   - Or: several values in one array; And: several fields; "$or": [ {...}, {...} ] (two
//     objects or more): Or across fields;
//   - {"equals-ignore-case": s}, {"prefix": s}, {"suffix": s}: on string values;
//   - {"anything-but": x}: x a string, a number, or a list of only strings or only numbers;
//     it matches any value present that is not listed;
//   - {"numeric": [op, n]} with op one of = < <= > >=, and ranges [">" or ">=", n, "<" or "<=", m];
//     on number values;
//   - {"exists": true} and {"exists": false}, which look at leaf values only: an object is not
//     a leaf, so "exists": true does not match it and "exists": false does;
//   - {"cidr": "10.0.0.0/24"}: an IPv4 or IPv6 address string in the block (EventBridge's "IP
//     address matching"; Lambda says it "supports the Amazon EventBridge rules").
//
// Numbers in equals and anything-but compare by their text, as Lambda's page says: "For
// numbers, Lambda also uses string representation. For example, 300, 300.0, and 3.0e2 are
// not considered equal." (EventBridge's rule engine compares them by value.) The numeric
// operator compares values.
//
// Field names are case-sensitive. A rule on a field whose value is an array matches when it
// matches an element; an object pattern on an array of objects matches when one element
// matches all of it.
//
// The body of an SQS record is a string. When it is valid JSON (any JSON text: an object, but
// also an array, 42 or "text" in quotes), a pattern on "body" must be an object of fields,
// matched against the parsed body; when it is not, the pattern must be an array of rules,
// matched against the string. Otherwise the record does not match: the table
// of "Using event filtering with an Amazon SQS event source" says "Lambda drops the message".
//
// Where it departs from Lambda's documentation:
//
//   - Patterns on the record's metadata (attributes, messageAttributes, eventSourceARN...)
//     match it, where the SQS page says "Amazon SQS event source mappings only support
//     filtering on the body key".
//   - It refuses, rather than guesses at, what Lambda does not document: "wildcard",
//     "anything-but" of an operator (prefix, suffix, equals-ignore-case, wildcard), and
//     "prefix" or "suffix" of {"equals-ignore-case": ...}.
//   - Compile's errors say what is wrong; Lambda only says "Invalid filter pattern definition."
package eventfilter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxPatternLen is the longest Pattern Lambda takes (API reference, Filter: "Maximum length
// of 4096").
const maxPatternLen = 4096

// Criteria is a compiled FilterCriteria: a record passes when it matches any of its filters.
type Criteria struct {
	filters []*object
}

// object is an object of a pattern: every field must match (And), and for each "$or" in it,
// one of the alternatives.
type object struct {
	fields []field
	ors    [][]*object
}

// field is a pattern's field: an object of fields, or an array of rules one of which must
// match (Or).
type field struct {
	name  string
	obj   *object
	rules []rule
}

// rule is an element of a field's array: a test of presence (exists) or of one leaf value.
type rule struct {
	exists *bool
	match  func(v any) bool
}

// jsonBody is a record's body that is valid JSON, parsed.
type jsonBody struct{ v any }

// Compile parses the Pattern string of each entry of FilterCriteria.Filters. An invalid
// pattern is an error naming the filter's index, the field path and what is wrong (e.g.
// `filter 1: body.amount: numeric: want an operator and a number, got ...`), as Lambda's
// CreateEventSourceMapping would refuse it. Zero patterns: an error too (callers only compile
// when there are filters).
func Compile(patterns []string) (*Criteria, error) {
	if len(patterns) == 0 {
		return nil, errors.New("no filter patterns")
	}
	c := &Criteria{}
	for i, p := range patterns {
		o, err := compilePattern(p)
		if err != nil {
			return nil, fmt.Errorf("filter %d: %w", i, err)
		}
		c.filters = append(c.filters, o)
	}
	return c, nil
}

// Match reports whether an SQS record, as the JSON Lambda puts in the event's Records array
// (fields messageId, receiptHandle, body, attributes, messageAttributes, md5OfBody,
// eventSource, eventSourceARN, awsRegion: the shape of
// github.com/aws/aws-lambda-go/events.SQSMessage marshalled to JSON), matches any filter.
func (c *Criteria) Match(record []byte) bool {
	v, ok := decode(record)
	m, isObject := v.(map[string]any)
	if !ok || !isObject {
		return false
	}
	if s, ok := m["body"].(string); ok {
		if b, ok := decode([]byte(s)); ok {
			m["body"] = jsonBody{b}
		}
	}
	return slices.ContainsFunc(c.filters, func(o *object) bool { return o.match(m, true) })
}

// MatchDocument reports whether a JSON object matches any filter, with no rule of its own for
// a "body" field: an SNS subscription's filter policy matched against a message's attributes
// or its body (FilterPolicyScope), which uses the same rules.
func (c *Criteria) MatchDocument(doc []byte) bool {
	v, ok := decode(doc)
	m, isObject := v.(map[string]any)
	return ok && isObject && slices.ContainsFunc(c.filters, func(o *object) bool { return o.match(m, false) })
}

func compilePattern(p string) (*object, error) {
	if n := utf8.RuneCountInString(p); n > maxPatternLen {
		return nil, fmt.Errorf("pattern is %d characters long, more than the %d Lambda allows", n, maxPatternLen)
	}
	v, ok := decode([]byte(p))
	if !ok {
		return nil, errors.New("pattern is not valid JSON")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("pattern must be a JSON object, got %s", show(v))
	}
	if len(m) == 0 {
		return nil, errors.New("pattern is an empty object")
	}
	return compileObject(m, "")
}

func compileObject(m map[string]any, path string) (*object, error) {
	if len(m) == 0 {
		return nil, fmt.Errorf("%s: empty object", path)
	}
	o := &object{}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		p := join(path, name)
		if name == "$or" {
			alts, err := compileOr(m[name], p)
			if err != nil {
				return nil, err
			}
			o.ors = append(o.ors, alts)
			continue
		}
		switch v := m[name].(type) {
		case map[string]any:
			sub, err := compileObject(v, p)
			if err != nil {
				return nil, err
			}
			o.fields = append(o.fields, field{name: name, obj: sub})
		case []any:
			rules, err := compileRules(v, p)
			if err != nil {
				return nil, err
			}
			o.fields = append(o.fields, field{name: name, rules: rules})
		default:
			return nil, fmt.Errorf("%s: want an array of values or an object of fields, got %s", p, show(v))
		}
	}
	return o, nil
}

func compileOr(v any, path string) ([]*object, error) {
	alts, _ := v.([]any)
	if len(alts) < 2 {
		return nil, fmt.Errorf("%s: want an array of at least two objects, got %s", path, show(v))
	}
	var objs []*object
	for i, a := range alts {
		m, ok := a.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: want an array of at least two objects, got %s", path, show(v))
		}
		o, err := compileObject(m, fmt.Sprintf("%s[%d]", path, i))
		if err != nil {
			return nil, err
		}
		objs = append(objs, o)
	}
	return objs, nil
}

func compileRules(values []any, path string) ([]rule, error) {
	if len(values) == 0 {
		return nil, fmt.Errorf("%s: empty array, want at least one value", path)
	}
	var rules []rule
	for _, v := range values {
		switch v := v.(type) {
		case string, json.Number, bool, nil:
			rules = append(rules, rule{match: func(x any) bool { return equal(x, v) }})
		case map[string]any:
			r, err := compileOperator(v, path)
			if err != nil {
				return nil, err
			}
			rules = append(rules, r)
		default:
			return nil, fmt.Errorf("%s: want a string, number, true, false, null or operator object, got %s", path, show(v))
		}
	}
	return rules, nil
}

func compileOperator(m map[string]any, path string) (rule, error) {
	if len(m) != 1 {
		return rule{}, fmt.Errorf("%s: an operator object has exactly one key, got %s", path, show(m))
	}
	var op string
	var arg any
	for k, v := range m {
		op, arg = k, v
	}
	switch op {
	case "equals-ignore-case", "prefix", "suffix":
		s, ok := arg.(string)
		if !ok {
			return rule{}, fmt.Errorf("%s: %s: want a string, got %s", path, op, show(arg))
		}
		test := strings.EqualFold
		switch op {
		case "prefix":
			test = strings.HasPrefix
		case "suffix":
			test = strings.HasSuffix
		}
		return rule{match: func(v any) bool {
			x, ok := v.(string)
			return ok && test(x, s)
		}}, nil
	case "anything-but":
		return compileAnythingBut(arg, path)
	case "numeric":
		return compileNumeric(arg, path)
	case "exists":
		b, ok := arg.(bool)
		if !ok {
			return rule{}, fmt.Errorf("%s: exists: want true or false, got %s", path, show(arg))
		}
		return rule{exists: &b}, nil
	case "cidr":
		return compileCIDR(arg, path)
	}
	return rule{}, fmt.Errorf("%s: unknown operator %q", path, op)
}

func compileAnythingBut(arg any, path string) (rule, error) {
	list, isList := arg.([]any)
	if !isList {
		list = []any{arg}
	}
	var strs, nums int
	for _, v := range list {
		switch v.(type) {
		case string:
			strs++
		case json.Number:
			nums++
		}
	}
	if len(list) == 0 || (strs != len(list) && nums != len(list)) {
		return rule{}, fmt.Errorf("%s: anything-but: want a string, a number, or a list of only strings or only numbers, got %s", path, show(arg))
	}
	return rule{match: func(v any) bool {
		return !slices.ContainsFunc(list, func(p any) bool { return equal(v, p) })
	}}, nil
}

// bound is a comparison of a numeric rule.
type bound struct {
	op string
	n  float64
}

func compileNumeric(arg any, path string) (rule, error) {
	list, ok := arg.([]any)
	if !ok || (len(list) != 2 && len(list) != 4) {
		return rule{}, fmt.Errorf("%s: numeric: want an operator and a number, got %s", path, show(arg))
	}
	var bounds []bound
	for i := 0; i < len(list); i += 2 {
		op, ok1 := list[i].(string)
		n, ok2 := list[i+1].(json.Number)
		if !ok1 || !ok2 {
			return rule{}, fmt.Errorf("%s: numeric: want an operator and a number, got %s", path, show(arg))
		}
		if !slices.Contains([]string{"=", "<", "<=", ">", ">="}, op) {
			return rule{}, fmt.Errorf("%s: numeric: unknown operator %q", path, op)
		}
		f, ok := number(n)
		if !ok {
			return rule{}, fmt.Errorf("%s: numeric: %s is not a number Lambda can compare", path, n)
		}
		bounds = append(bounds, bound{op, f})
	}
	if len(bounds) == 2 {
		lo, hi := bounds[0], bounds[1]
		if (lo.op != ">" && lo.op != ">=") || (hi.op != "<" && hi.op != "<=") {
			return rule{}, fmt.Errorf(`%s: numeric: a range is ">" or ">=" a number then "<" or "<=" a number, got %s`, path, show(arg))
		}
		if lo.n >= hi.n {
			return rule{}, fmt.Errorf("%s: numeric: empty range, %v is not below %v", path, lo.n, hi.n)
		}
	}
	return rule{match: func(v any) bool {
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		f, ok := number(n)
		return ok && !slices.ContainsFunc(bounds, func(b bound) bool { return !compare(f, b) })
	}}, nil
}

func compare(f float64, b bound) bool {
	switch b.op {
	case "=":
		return f == b.n
	case "<":
		return f < b.n
	case "<=":
		return f <= b.n
	case ">":
		return f > b.n
	}
	return f >= b.n
}

func compileCIDR(arg any, path string) (rule, error) {
	s, ok := arg.(string)
	if !ok {
		return rule{}, fmt.Errorf("%s: cidr: want a string, got %s", path, show(arg))
	}
	block, err := netip.ParsePrefix(s)
	if err != nil {
		return rule{}, fmt.Errorf("%s: cidr: %q is not an IP address block like \"10.0.0.0/24\"", path, s)
	}
	// EventBridge's rule engine refuses a block of one address ("IPv4 mask bits must be < 32").
	if bits := block.Addr().BitLen(); block.Bits() == bits {
		return rule{}, fmt.Errorf("%s: cidr: %q: the mask must be shorter than %d bits", path, s, bits)
	}
	block = block.Masked()
	return rule{match: func(v any) bool {
		x, ok := v.(string)
		if !ok {
			return false
		}
		a, err := netip.ParseAddr(x)
		return err == nil && (block.Contains(a) || block.Contains(a.Unmap()))
	}}, nil
}

func (o *object) match(m map[string]any, top bool) bool {
	for _, f := range o.fields {
		v, present := m[f.name]
		if top && f.name == "body" {
			// The SQS body table: the body's format and the pattern's must agree.
			b, isJSON := v.(jsonBody)
			if isJSON != (f.obj != nil) {
				return false
			}
			if isJSON {
				v = b.v
			}
		}
		if !f.match(v, present) {
			return false
		}
	}
	for _, alts := range o.ors {
		if !slices.ContainsFunc(alts, func(a *object) bool { return a.match(m, top) }) {
			return false
		}
	}
	return true
}

func (f *field) match(v any, present bool) bool {
	if f.obj != nil {
		return matchObject(f.obj, v)
	}
	var values []any
	if present {
		values = leaves(v)
	}
	for _, r := range f.rules {
		if r.exists != nil {
			if *r.exists == (len(values) > 0) {
				return true
			}
		} else if slices.ContainsFunc(values, r.match) {
			return true
		}
	}
	return false
}

// matchObject matches an object pattern against a record value: an object, an array of which
// one element matches, or anything else, where the pattern's fields are all absent.
func matchObject(o *object, v any) bool {
	switch v := v.(type) {
	case map[string]any:
		return o.match(v, false)
	case []any:
		if len(v) > 0 {
			return slices.ContainsFunc(v, func(e any) bool { return matchObject(o, e) })
		}
	}
	return o.match(nil, false)
}

// leaves are the values a rule tests in a record value: itself, or the elements of an array,
// at any depth; objects are not leaves.
func leaves(v any) []any {
	switch v := v.(type) {
	case map[string]any:
		return nil
	case []any:
		var out []any
		for _, e := range v {
			out = append(out, leaves(e)...)
		}
		return out
	}
	return []any{v}
}

// equal reports whether a record's leaf value v equals a pattern's value p.
func equal(v, p any) bool {
	if p, ok := p.(json.Number); ok {
		n, ok := v.(json.Number)
		return ok && sameNumber(n, p)
	}
	return v == p // string, bool or nil: comparable
}

// sameNumber compares numbers by their text, as Lambda does in equals and anything-but.
func sameNumber(a, b json.Number) bool { return a == b }

// number is n as a float64, if the float64 holds n's decimal value, as the one EventBridge's
// rule engine compares numbers by value in: 0.1 and 3.0e2 are, 12345678901234567891 is not.
func number(n json.Number) (float64, bool) {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return 0, false
	}
	exact, ok1 := new(big.Rat).SetString(string(n))
	held, ok2 := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
	return f, ok1 && ok2 && exact.Cmp(held) == 0
}

// decode parses JSON text, keeping numbers as written.
func decode(data []byte) (any, bool) {
	if !json.Valid(data) {
		return nil, false
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	return v, d.Decode(&v) == nil
}

// show is v as compact JSON, for error messages.
func show(v any) string {
	var b strings.Builder
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
