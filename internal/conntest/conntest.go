// Package conntest counts the connections an SDK client's calls open, for the tests of the
// local servers' clients (internal/sqslocal, internal/dynamolocal): clients made one per call
// must share one connection pool. Only tests import it: it links package testing.
package conntest

import (
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"testing"
)

// Doer is an SDK client's HTTP client (sqs.HTTPClient, dynamodb.HTTPClient).
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// Shared fails t unless 200 calls, one after another, each through a new client, open fewer
// than 50 connections: the clients share a pool. Clients with a pool each open 200. A shared
// pool still opens a few: the transport puts a connection back in the pool from its read
// loop, after the caller already has its response, and a call that comes first dials a new
// one (up to 13 of 200 with two CPU hogs beside the test, 0-13 over 60 runs). call makes the
// client, wraps its HTTP client with wrap, and makes one call.
func Shared(t *testing.T, call func(wrap func(Doer) Doer) error) {
	t.Helper()
	n, err := Opened(200, call)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("200 calls, one new client each: %d connections opened", n)
	if n >= 50 {
		t.Errorf("200 calls, one new client each, opened %d connections: want the clients to share them", n)
	}
}

// Opened runs call n times, one after another, and returns how many new (not reused)
// connections the clients it makes opened. call wraps its client's HTTP client with wrap.
func Opened(n int, call func(wrap func(Doer) Doer) error) (int64, error) {
	var opened atomic.Int64
	wrap := func(inner Doer) Doer { return counting{inner, &opened} }
	for range n {
		if err := call(wrap); err != nil {
			return opened.Load(), err
		}
	}
	return opened.Load(), nil
}

type counting struct {
	inner  Doer
	opened *atomic.Int64
}

func (c counting) Do(r *http.Request) (*http.Response, error) {
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		if !i.Reused {
			c.opened.Add(1)
		}
	}}
	return c.inner.Do(r.WithContext(httptrace.WithClientTrace(r.Context(), trace)))
}
