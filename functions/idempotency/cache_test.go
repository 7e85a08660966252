package idempotency

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestLRUCacheEvictsLeastRecentlyUsed(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newLRUCache(2)
	c.put("a", cachedRecord{expiration: 2000, attempt: 1})
	c.put("b", cachedRecord{expiration: 2000, attempt: 2})
	if _, ok := c.get("a", now); !ok { // a is now the most recent
		t.Fatal("a missing")
	}
	c.put("c", cachedRecord{expiration: 2000, attempt: 3})
	if _, ok := c.get("b", now); ok {
		t.Error("b survived although it was the least recently used")
	}
	for _, k := range []string{"a", "c"} {
		if _, ok := c.get(k, now); !ok {
			t.Errorf("%s evicted", k)
		}
	}
	if c.len() != 2 {
		t.Errorf("len = %d, want 2", c.len())
	}
	c.put("a", cachedRecord{expiration: 2000, attempt: 9}) // update in place
	if r, _ := c.get("a", now); r.attempt != 9 || c.len() != 2 {
		t.Errorf("update: %+v, len %d", r, c.len())
	}
}

func TestLRUCacheExpiresWithRecord(t *testing.T) {
	c := newLRUCache(4)
	c.put("a", cachedRecord{expiration: 1000})
	if _, ok := c.get("a", time.Unix(1000, 999e6)); !ok {
		t.Error("entry gone in its last second (the record is still live in DynamoDB)")
	}
	if _, ok := c.get("a", time.Unix(1001, 0)); ok {
		t.Error("entry outlived its record")
	}
	if c.len() != 0 {
		t.Errorf("expired entry kept: len %d", c.len())
	}
}

func TestLRUCacheConcurrentUse(t *testing.T) {
	c := newLRUCache(64)
	now := time.Unix(0, 0)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				k := fmt.Sprint((g*7 + i) % 100)
				c.put(k, cachedRecord{expiration: 10})
				c.get(k, now)
			}
		})
	}
	wg.Wait()
	if n := c.len(); n != 64 {
		t.Errorf("len = %d, want the bound 64", n)
	}
}
