package alarm

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// The two small languages of alarm definitions: CloudWatch metric math (the subset alarms
// here use: numbers, metric ids, + - * /, comparisons, AND, OR, NOT, IF, FILL, ABS), applied
// to one period's values at a time, and the composite alarms' AlarmRule (ALARM, OK,
// INSUFFICIENT_DATA, TRUE, FALSE, AND, OR, NOT, parentheses). An unknown function or word is
// a parse error, so an alarm the evaluator cannot apply fails the run instead of passing.

type token struct {
	kind string // "num", "id", "str", "op", "(", ")", ","
	text string
}

func lex(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		c := rune(s[i])
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '(' || c == ')' || c == ',':
			out = append(out, token{string(c), string(c)})
			i++
		case c == '"':
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 {
				return nil, fmt.Errorf("unterminated string at %d", i)
			}
			out = append(out, token{"str", s[i+1 : i+1+j]})
			i += j + 2
		case unicode.IsDigit(c) || c == '.':
			j := i
			for j < len(s) && (unicode.IsDigit(rune(s[j])) || s[j] == '.' || s[j] == 'e' || s[j] == 'E') {
				j++
			}
			out = append(out, token{"num", s[i:j]})
			i = j
		case unicode.IsLetter(c) || c == '_':
			j := i
			for j < len(s) && (unicode.IsLetter(rune(s[j])) || unicode.IsDigit(rune(s[j])) || s[j] == '_') {
				j++
			}
			out = append(out, token{"id", s[i:j]})
			i = j
		default:
			for _, op := range []string{">=", "<=", "==", "!=", ">", "<", "+", "-", "*", "/"} {
				if strings.HasPrefix(s[i:], op) {
					out = append(out, token{"op", op})
					i += len(op)
					goto next
				}
			}
			return nil, fmt.Errorf("unexpected %q at %d", c, i)
		next:
		}
	}
	return out, nil
}

type parser struct {
	toks []token
	pos  int
}

func (p *parser) peek() token {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return token{}
}

func (p *parser) next() token { t := p.peek(); p.pos++; return t }

func (p *parser) word(w string) bool {
	if t := p.peek(); t.kind == "id" && strings.EqualFold(t.text, w) {
		p.pos++
		return true
	}
	return false
}

func (p *parser) expect(kind string) error {
	if t := p.next(); t.kind != kind {
		return fmt.Errorf("want %q, got %q", kind, t.text)
	}
	return nil
}

// mathNode is a metric math expression over one period's values.
type mathNode struct {
	op   string // "num", "id", a binary operator, "NOT", "neg", or a function name
	num  float64
	id   string
	args []*mathNode
}

func parseMath(s string) (*mathNode, error) {
	toks, err := lex(s)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	n, err := p.mathOr()
	if err != nil {
		return nil, err
	}
	if p.pos != len(toks) {
		return nil, fmt.Errorf("unexpected %q", p.peek().text)
	}
	return n, nil
}

func (p *parser) mathOr() (*mathNode, error) {
	return p.binary(p.mathAnd, func() string {
		if p.word("OR") {
			return "OR"
		}
		return ""
	})
}

func (p *parser) mathAnd() (*mathNode, error) {
	return p.binary(p.mathCmp, func() string {
		if p.word("AND") {
			return "AND"
		}
		return ""
	})
}

func (p *parser) mathCmp() (*mathNode, error) {
	return p.binary(p.mathAdd, func() string { return p.op(">=", "<=", "==", "!=", ">", "<") })
}

func (p *parser) mathAdd() (*mathNode, error) {
	return p.binary(p.mathMul, func() string { return p.op("+", "-") })
}

func (p *parser) mathMul() (*mathNode, error) {
	return p.binary(p.mathUnary, func() string { return p.op("*", "/") })
}

func (p *parser) op(ops ...string) string {
	if t := p.peek(); t.kind == "op" {
		for _, o := range ops {
			if t.text == o {
				p.pos++
				return o
			}
		}
	}
	return ""
}

func (p *parser) binary(operand func() (*mathNode, error), operator func() string) (*mathNode, error) {
	left, err := operand()
	if err != nil {
		return nil, err
	}
	for {
		op := operator()
		if op == "" {
			return left, nil
		}
		right, err := operand()
		if err != nil {
			return nil, err
		}
		left = &mathNode{op: op, args: []*mathNode{left, right}}
	}
}

// mathFuncs are the functions the evaluator knows, with their arity.
var mathFuncs = map[string]int{"IF": 3, "FILL": 2, "ABS": 1}

func (p *parser) mathUnary() (*mathNode, error) {
	if p.op("-") != "" {
		n, err := p.mathUnary()
		return &mathNode{op: "neg", args: []*mathNode{n}}, err
	}
	if p.word("NOT") {
		n, err := p.mathUnary()
		return &mathNode{op: "NOT", args: []*mathNode{n}}, err
	}
	t := p.next()
	switch t.kind {
	case "num":
		v, err := strconv.ParseFloat(t.text, 64)
		return &mathNode{op: "num", num: v}, err
	case "(":
		n, err := p.mathOr()
		if err != nil {
			return nil, err
		}
		return n, p.expect(")")
	case "id":
		if p.peek().kind != "(" {
			return &mathNode{op: "id", id: t.text}, nil
		}
		name := strings.ToUpper(t.text)
		arity, ok := mathFuncs[name]
		if !ok {
			return nil, fmt.Errorf("metric math function %s is not evaluated by the local kit (package local)", t.text)
		}
		p.pos++
		n := &mathNode{op: name}
		for i := range arity {
			if i > 0 {
				if err := p.expect(","); err != nil {
					return nil, err
				}
			}
			a, err := p.mathOr()
			if err != nil {
				return nil, err
			}
			n.args = append(n.args, a)
		}
		return n, p.expect(")")
	}
	return nil, fmt.Errorf("unexpected %q", t.text)
}

// eval computes the expression for one period: env holds each metric's datapoint (NaN:
// missing). A missing operand makes the result missing, unless FILL replaces it.
func (n *mathNode) eval(env map[string]float64) (float64, error) {
	nan := math.NaN()
	switch n.op {
	case "num":
		return n.num, nil
	case "id":
		v, ok := env[n.id]
		if !ok {
			return nan, fmt.Errorf("metric math: unknown id %q", n.id)
		}
		return v, nil
	case "FILL":
		v, err := n.args[0].eval(env)
		if err != nil || !math.IsNaN(v) {
			return v, err
		}
		return n.args[1].eval(env)
	}
	vals := make([]float64, len(n.args))
	for i, a := range n.args {
		v, err := a.eval(env)
		if err != nil {
			return nan, err
		}
		vals[i] = v
	}
	if n.op == "IF" {
		switch c := vals[0]; {
		case math.IsNaN(c):
			return nan, nil
		case c != 0:
			return vals[1], nil
		default:
			return vals[2], nil
		}
	}
	for _, v := range vals {
		if math.IsNaN(v) {
			return nan, nil
		}
	}
	b := func(c bool) float64 {
		if c {
			return 1
		}
		return 0
	}
	switch n.op {
	case "neg":
		return -vals[0], nil
	case "NOT":
		return b(vals[0] == 0), nil
	case "ABS":
		return math.Abs(vals[0]), nil
	case "+":
		return vals[0] + vals[1], nil
	case "-":
		return vals[0] - vals[1], nil
	case "*":
		return vals[0] * vals[1], nil
	case "/":
		if vals[1] == 0 {
			return nan, nil
		}
		return vals[0] / vals[1], nil
	case ">":
		return b(vals[0] > vals[1]), nil
	case "<":
		return b(vals[0] < vals[1]), nil
	case ">=":
		return b(vals[0] >= vals[1]), nil
	case "<=":
		return b(vals[0] <= vals[1]), nil
	case "==":
		return b(vals[0] == vals[1]), nil
	case "!=":
		return b(vals[0] != vals[1]), nil
	case "AND":
		return b(vals[0] != 0 && vals[1] != 0), nil
	case "OR":
		return b(vals[0] != 0 || vals[1] != 0), nil
	}
	return nan, fmt.Errorf("metric math: operator %s", n.op)
}

// ruleNode is a composite alarm rule.
type ruleNode struct {
	op    string // "AND", "OR", "NOT", "TRUE", "FALSE", or a state function
	child string // the alarm a state function names
	args  []ruleNode
}

var ruleStates = map[string]string{"ALARM": StateAlarm, "OK": StateOK, "INSUFFICIENT_DATA": StateInsufficient}

func parseRule(s string) (ruleNode, error) {
	toks, err := lex(s)
	if err != nil {
		return ruleNode{}, err
	}
	p := &parser{toks: toks}
	n, err := p.ruleOr()
	if err == nil && p.pos != len(toks) {
		err = fmt.Errorf("unexpected %q", p.peek().text)
	}
	return n, err
}

func (p *parser) ruleOr() (ruleNode, error)  { return p.ruleList("OR", p.ruleAnd) }
func (p *parser) ruleAnd() (ruleNode, error) { return p.ruleList("AND", p.ruleNot) }

func (p *parser) ruleList(op string, operand func() (ruleNode, error)) (ruleNode, error) {
	n, err := operand()
	if err != nil {
		return n, err
	}
	for p.word(op) {
		r, err := operand()
		if err != nil {
			return n, err
		}
		n = ruleNode{op: op, args: []ruleNode{n, r}}
	}
	return n, nil
}

func (p *parser) ruleNot() (ruleNode, error) {
	if p.word("NOT") {
		n, err := p.ruleNot()
		return ruleNode{op: "NOT", args: []ruleNode{n}}, err
	}
	t := p.next()
	switch {
	case t.kind == "(":
		n, err := p.ruleOr()
		if err != nil {
			return n, err
		}
		return n, p.expect(")")
	case t.kind == "id" && (strings.EqualFold(t.text, "TRUE") || strings.EqualFold(t.text, "FALSE")):
		return ruleNode{op: strings.ToUpper(t.text)}, nil
	case t.kind == "id" && ruleStates[strings.ToUpper(t.text)] != "":
		if err := p.expect("("); err != nil {
			return ruleNode{}, err
		}
		c := p.next()
		if c.kind != "id" && c.kind != "str" {
			return ruleNode{}, fmt.Errorf("%s: want an alarm, got %q", t.text, c.text)
		}
		// An ARN names the alarm last; the harness resolved template references to logical ids.
		child := c.text[strings.LastIndex(c.text, ":")+1:]
		return ruleNode{op: strings.ToUpper(t.text), child: child}, p.expect(")")
	}
	return ruleNode{}, fmt.Errorf("rule function %q is not evaluated by the local kit (package local)", t.text)
}

func (n ruleNode) children(acc []string) []string {
	if n.child != "" {
		acc = append(acc, n.child)
	}
	for _, a := range n.args {
		acc = a.children(acc)
	}
	return acc
}

func (n ruleNode) eval(state func(id string) string) bool {
	switch n.op {
	case "TRUE":
		return true
	case "FALSE":
		return false
	case "NOT":
		return !n.args[0].eval(state)
	case "AND":
		return n.args[0].eval(state) && n.args[1].eval(state)
	case "OR":
		return n.args[0].eval(state) || n.args[1].eval(state)
	}
	return state(n.child) == ruleStates[n.op]
}
