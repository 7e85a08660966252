package idempotency

import (
	"container/list"
	"sync"
	"time"
)

// cachedRecord is what a duplicate needs from a COMPLETED record.
type cachedRecord struct {
	expiration int64 // epoch seconds, the record's TTL: the entry dies with the record
	hash       string
	data       []byte
	attempt    int
	dropped    bool // the result was not stored (Result.ResultDropped)
}

// lruCache is a size-bounded LRU of COMPLETED records. Only COMPLETED records are cached:
// they never change until they expire, so a hit can answer without DynamoDB. An INPROGRESS
// record changes at any moment and is never cached.
type lruCache struct {
	mu    sync.Mutex
	size  int
	order *list.List // front = most recently used; values are *cacheEntry
	items map[string]*list.Element
}

type cacheEntry struct {
	key string
	rec cachedRecord
}

func newLRUCache(size int) *lruCache {
	return &lruCache{size: size, order: list.New(), items: make(map[string]*list.Element, size)}
}

// get returns the live entry for key; an entry whose record has expired is dropped.
func (c *lruCache) get(key string, now time.Time) (cachedRecord, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return cachedRecord{}, false
	}
	e := el.Value.(*cacheEntry)
	if e.rec.expiration < now.Unix() { // the acquire condition's notion of expired
		c.order.Remove(el)
		delete(c.items, key)
		return cachedRecord{}, false
	}
	c.order.MoveToFront(el)
	return e.rec, true
}

func (c *lruCache) put(key string, rec cachedRecord) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		el.Value.(*cacheEntry).rec = rec
		c.order.MoveToFront(el)
		return
	}
	c.items[key] = c.order.PushFront(&cacheEntry{key: key, rec: rec})
	if c.order.Len() > c.size {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.items, oldest.Value.(*cacheEntry).key)
	}
}

func (c *lruCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
