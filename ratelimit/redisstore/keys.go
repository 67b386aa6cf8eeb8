package redisstore

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"strconv"
	"sync"
	"unsafe"

	"github.com/floodgate/floodgate/ratelimit"
)

// A keyHash stands for a caller's key in Redis key names and in the cache:
// the first 128 bits of its SHA-256 (or HMAC-SHA-256 with
// Options.KeySecret). Two keys share one with probability 2⁻¹²⁸.
type keyHash [16]byte

// hasher computes keyHashes, the same in every process given the same
// secret.
type hasher struct {
	secret []byte
	pool   sync.Pool // of hash.Hash, with a secret
}

func newHasher(secret []byte) *hasher {
	h := &hasher{}
	if len(secret) > 0 {
		h.secret = append([]byte(nil), secret...)
		h.pool.New = func() any { return hmac.New(sha256.New, h.secret) }
	}
	return h
}

// sum returns key's hash. It does not retain key.
func (h *hasher) sum(key string) keyHash {
	b := unsafe.Slice(unsafe.StringData(key), len(key)) // read only
	var out keyHash
	if h.secret == nil {
		sum := sha256.Sum256(b)
		copy(out[:], sum[:])
		return out
	}
	m := h.pool.Get().(hash.Hash)
	m.Reset()
	m.Write(b)
	var buf [sha256.Size]byte
	copy(out[:], m.Sum(buf[:0]))
	h.pool.Put(m)
	return out
}

// algorithmCodes name each Algorithm in Redis keys and in the script.
var algorithmCodes = [...]byte{
	ratelimit.SlidingWindow: 's',
	ratelimit.GCRA:          'g',
	ratelimit.FixedWindow:   'f',
}

// appendTag appends the hash tag of a key: "{" + 22 base64url characters
// + "}". Redis Cluster hashes only what is inside the braces, so all the
// counters of one key share a hash slot, as a multi-limit script needs.
func appendTag(b []byte, h keyHash) []byte {
	b = append(b, '{')
	b = base64.RawURLEncoding.AppendEncode(b, h[:])
	return append(b, '}')
}

// counterKey returns the Redis key of the counter of the key whose tag is
// tag under l: PREFIX{TAG}:A:COUNT:WINDOW_MS, such as
// fg:{lI_mA_YdwDa1xZbcCf484w}:s:1500:300000 (the key "client").
func counterKey(prefix string, tag []byte, l ratelimit.Limit) string {
	b := make([]byte, 0, len(prefix)+len(tag)+40)
	b = append(b, prefix...)
	b = append(b, tag...)
	b = append(b, ':', algorithmCodes[l.Algorithm], ':')
	b = strconv.AppendInt(b, l.Count, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, l.Window.Milliseconds(), 10)
	return unsafe.String(unsafe.SliceData(b), len(b)) // b is not written again
}
