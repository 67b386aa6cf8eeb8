package baseline

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/netip"

	"github.com/floodgate/floodgate/internal/clientip"
	"github.com/floodgate/floodgate/internal/uaclass"
)

// ClientID numbers the distinct clients of a Baseline from 0, in order of
// appearance.
type ClientID uint32

// clients interns client strings and tallies each client's requests by
// class.
type clients struct {
	ids     map[string]ClientID
	names   []string
	hashed  []bool
	classes [][uaclass.NumClasses]uint32
	// The last client seen: consecutive lines often share it.
	last   []byte
	lastID ClientID
	// User-Agent classes, cached by User-Agent string.
	uas    map[string]uaclass.Class
	lastUA []byte
	lastC  uaclass.Class
}

// maxCachedUAs bounds the User-Agent cache; past it, User-Agents are
// classified every time.
const maxCachedUAs = 1 << 16

func newClients() clients {
	return clients{ids: map[string]ClientID{}, uas: map[string]uaclass.Class{}}
}

func (c *clients) intern(name []byte, hashed bool) ClientID {
	if c.last != nil && string(name) == string(c.last) {
		return c.lastID
	}
	id, ok := c.ids[string(name)]
	if !ok {
		id = ClientID(len(c.names))
		s := string(name)
		c.ids[s] = id
		c.names = append(c.names, s)
		c.hashed = append(c.hashed, hashed)
		c.classes = append(c.classes, [uaclass.NumClasses]uint32{})
	}
	c.last = append(c.last[:0], name...)
	c.lastID = id
	return id
}

func (c *clients) classify(ua []byte) uaclass.Class {
	if c.lastUA != nil && string(ua) == string(c.lastUA) {
		return c.lastC
	}
	cl, ok := c.uas[string(ua)]
	if !ok {
		cl = uaclass.ClassifyBytes(ua)
		if len(c.uas) < maxCachedUAs {
			c.uas[string(ua)] = cl
		}
	}
	c.lastUA = append(c.lastUA[:0], ua...)
	c.lastC = cl
	return cl
}

// class is the client's class: that of most of its requests, Unknown
// ones aside; on a tie browser wins, then crawler, then script (counting
// a client as a browser is the cautious side when sizing limits).
func (c *clients) class(id ClientID) uaclass.Class {
	n := &c.classes[id]
	best := uaclass.Unknown
	var bestN uint32
	for _, cl := range []uaclass.Class{uaclass.Browser, uaclass.Crawler, uaclass.Script} {
		if n[cl] > bestN {
			best, bestN = cl, n[cl]
		}
	}
	return best
}

// A Namer shows clients in reports: as a keyed hash (16 hex digits of
// HMAC-SHA256) unless Show is set. Clients the log already gives as hashes
// (floodgate's logs) are shown as they are.
//
// An IP address is hashed as the gateway hashes the client of its access
// log (telemetry.AccessRecord): the text of the prefix it is counted
// under ("192.0.2.1/32", "2001:db8:1:2::/64"), so that with the gateway's
// key (FLOODGATE_LOG_HASH_KEY) a client has the same hash in the
// gateway's log and in reports of other logs. Two addresses the gateway
// counts as one client (one IPv6 /64) have one hash. A client that is not
// an address (a host name) is hashed as it is.
type Namer struct {
	Key  []byte // the HMAC key
	Show bool   // show clients as logged, not hashed
	// Resolver groups addresses as the gateway's client_ip settings do;
	// nil groups them as its defaults do (IPv4 /32, IPv6 /64).
	Resolver *clientip.Resolver
}

// Name returns how a client named name is shown.
func (n Namer) Name(name string, hashed bool) string {
	if n.Show || hashed {
		return name
	}
	key := []byte(name)
	if a, err := netip.ParseAddr(name); err == nil {
		r := n.Resolver
		if r == nil {
			r = &clientip.Resolver{}
		}
		key = r.KeyPrefix(a).AppendTo(key[:0])
	}
	m := hmac.New(sha256.New, n.Key)
	m.Write(key)
	var sum [sha256.Size]byte
	return hex.EncodeToString(m.Sum(sum[:0])[:8])
}
