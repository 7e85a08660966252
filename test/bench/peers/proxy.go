package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/idempotent-sqs/pipeline/internal/ddbproxy"
)

// countingProxy records every call a contender makes through a ddbproxy.Proxy in front of
// DynamoDB Local: the operation, whether it failed and how (a failed condition is a normal
// outcome for a duplicate), and the item it addressed.
type countingProxy struct {
	*ddbproxy.Proxy

	mu     sync.Mutex
	byItem map[string][]string // record id -> ops in order
	other  map[string]int      // calls without an item key
}

// startProxy starts a proxy to target that delays every call by latency before forwarding
// it (0: none), to model the network round trip a real DynamoDB call waits for.
func startProxy(target string, latency time.Duration) (*countingProxy, error) {
	px, err := ddbproxy.New(target)
	if err != nil {
		return nil, err
	}
	p := &countingProxy{Proxy: px, byItem: map[string][]string{}, other: map[string]int{}}
	px.Delay = latency
	px.Observe = func(c ddbproxy.Call, r ddbproxy.Reply) {
		op := c.Op
		if r.Type == "ConditionalCheckFailedException" {
			op += " (condition failed)"
		} else if r.Status/100 != 2 {
			op += " (" + r.Type + ")"
		}
		p.record(c.Key, op)
	}
	return p, nil
}

func (p *countingProxy) record(item, op string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if item == "" {
		p.other[op]++
		return
	}
	p.byItem[item] = append(p.byItem[item], op)
}

// callCounts are the DynamoDB calls of one contender on one event set, per kind of record.
type callCounts struct {
	PerNew, PerDup map[string]int // op -> calls per record
	Other          map[string]int // table-level calls, in total
	Conns          int            // TCP connections opened over the run (warm-up included)
	Irregular      string         // set when the calls do not split cleanly into new and duplicate
}

// split derives the calls per new record and per duplicate from the calls per item: every key
// is processed once as new, and set.Duplicates keys once more as a duplicate. The most common
// pattern of calls per item is the new record's; the duplicated keys carry it plus the
// duplicate's. Anything else (retries, extra reads on some items) is reported as irregular.
func (p *countingProxy) split(set *eventSet) callCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	hist := map[string]int{}
	for _, ops := range p.byItem {
		hist[signature(ops)]++
	}
	type entry struct {
		sig string
		n   int
	}
	var es []entry
	for s, n := range hist {
		es = append(es, entry{s, n})
	}
	sort.Slice(es, func(i, j int) bool { return es[i].n > es[j].n || es[i].n == es[j].n && es[i].sig < es[j].sig })
	cc := callCounts{Other: p.other}
	if p.Proxy != nil {
		cc.Conns = p.Conns()
	}
	if len(es) == 0 {
		cc.Irregular = "no item calls"
		return cc
	}
	cc.PerNew = parseSig(es[0].sig)
	wantNewOnly := set.UniqueKeys - set.Duplicates
	switch {
	case set.Duplicates == 0 && len(es) == 1 && es[0].n == set.UniqueKeys:
		cc.PerDup = map[string]int{}
	case len(es) == 2 && es[0].n == wantNewOnly && es[1].n == set.Duplicates:
		both := parseSig(es[1].sig)
		cc.PerDup = map[string]int{}
		for op, n := range both {
			if d := n - cc.PerNew[op]; d != 0 {
				cc.PerDup[op] = d
			}
		}
	default:
		var parts []string
		for _, e := range es {
			parts = append(parts, fmt.Sprintf("%d items: %s", e.n, e.sig))
		}
		cc.Irregular = fmt.Sprintf("want %d items with one pattern and %d with another; got %s",
			wantNewOnly, set.Duplicates, strings.Join(parts, "; "))
	}
	return cc
}

// signature is an order-free summary of one item's calls: "op×n, op×n" sorted by op.
func signature(ops []string) string {
	m := map[string]int{}
	for _, op := range ops {
		m[op]++
	}
	return formatOps(m)
}

func formatOps(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s×%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func parseSig(sig string) map[string]int {
	m := map[string]int{}
	for _, part := range strings.Split(sig, ", ") {
		i := strings.LastIndex(part, "×")
		var n int
		fmt.Sscan(part[i+len("×"):], &n)
		m[part[:i]] = n
	}
	return m
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
