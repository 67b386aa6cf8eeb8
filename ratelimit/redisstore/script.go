package redisstore

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/floodgate/floodgate/ratelimit"
)

// takeScript decides and records one Take for the counters KEYS[1…],
// atomically, with the server's clock (TIME), and returns what it read so
// that the caller can compute the Decision with ratelimit.Limit.Take.
//
// Lua numbers are doubles, exact for integers below 2⁵³, so the script
// works in microseconds (TIME's resolution; 2026 is 1.8×10¹⁵ µs; windows
// are whole milliseconds, at most 3.2×10¹³ µs) and keeps GCRA's
// nanosecond instants as a pair (µs, ns below the µs). It only compares,
// adds and subtracts, except for the sliding window's test
// prev×(w−e) ≤ room×w, whose products can reach 2⁷⁷ and are then compared
// exactly in base-2²⁴ limbs (mulle). Every step mirrors Limit.Take in
// ratelimit/algorithm.go, which the caller runs on the same state and
// instant: the two must agree on admission, and the caller checks that
// they do.
//
// ARGV[1] is n (clamped to 2⁴⁰ by the caller: any n above a count is
// refused alike). Then, for each key, its algorithm and parameters:
//
//	"s" or "f", COUNT, WINDOW_US                          sliding or fixed window
//	"g", WINDOW_US, T_US, T_NS, B_US, B_NS, X_US, X_NS    GCRA
//
// where T = WINDOW/COUNT is GCRA's emission interval in ns, B = COUNT×T
// its bound and X = n×T (X_US = -1 when n > COUNT), each split into whole
// µs and the ns below.
//
// A counter's value is three integers separated by spaces:
//
//	sliding window: EXPIRY_US CURRENT PREVIOUS   (the current window starts at EXPIRY − 2×WINDOW)
//	fixed window:   END_US COUNT 0
//	GCRA:           TAT_US TAT_NS LAST_US        (theoretical arrival time, latest admission)
//
// and it expires (PX) when the counter is empty again. The reply is
// {NOW_US, ADMITTED (0 or 1), then three integers per key: its value as
// read, or 0 0 0}.
const takeScript = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local n = tonumber(ARGV[1])
local TWO24, TWO48, TWO53 = 16777216, 281474976710656, 9007199254740992
local floor = math.floor

-- wide returns a*b as hi*2^48 + lo, exactly, for a < 2^33 and b < 2^46.
local function wide(a, b)
  local a1 = floor(a / TWO24)
  local a0 = a - a1 * TWO24
  local b1 = floor(b / TWO24)
  local b0 = b - b1 * TWO24
  local mid = a1 * b0 + a0 * b1
  local mid1 = floor(mid / TWO24)
  local lo = a0 * b0 + (mid - mid1 * TWO24) * TWO24
  local carry = floor(lo / TWO48)
  return a1 * b1 + mid1 + carry, lo - carry * TWO48
end

-- mulle reports whether a*b <= c*d exactly (a, c < 2^33; b, d < 2^46).
local function mulle(a, b, c, d)
  local p, q = a * b, c * d
  if p < TWO53 and q < TWO53 then return p <= q end
  local ph, pl = wide(a, b)
  local qh, ql = wide(c, d)
  return ph < qh or (ph == qh and pl <= ql)
end

local out = {now, 0}
local admit = true
local ad, adx, mv, mvx = {}, {}, {}, {}
local a = 2
for i = 1, #KEYS do
  local x, y, z = 0, 0, 0
  local v = redis.call('GET', KEYS[i])
  if v then
    local p, q, r = string.match(v, '^(%d+) (%d+) (%d+)$')
    if p then x, y, z = tonumber(p), tonumber(q), tonumber(r) end
  end
  out[#out + 1] = x
  out[#out + 1] = y
  out[#out + 1] = z
  local alg = ARGV[a]
  local fits
  if alg == 'g' then
    local w = tonumber(ARGV[a + 1])
    local tu, tn, bu, bn = tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5])
    local xu, xn = tonumber(ARGV[a + 6]), tonumber(ARGV[a + 7])
    a = a + 8
    local tatu, tatn, last = x, y, z
    if now < last - w then -- the clock went back more than a window
      tatu = tatu - (last - now)
      last = now
      mv[i] = string.format('%d %d %d', tatu, tatn, last)
      mvx[i] = tatu + (tatn > 0 and 1 or 0)
    end
    local s = math.max(now, last)
    local uu, un = tatu - s, tatn -- used = min(max(tat - s, 0), bound)
    if uu < 0 then
      uu, un = 0, 0
    elseif uu > bu or (uu == bu and un > bn) then
      uu, un = bu, bn
    end
    if n == 0 then
      fits = true
    elseif xu < 0 then
      fits = false
    else
      local su, sn = uu + xu, un + xn
      if sn >= 1000 then su, sn = su + 1, sn - 1000 end
      fits = su < bu or (su == bu and sn <= bn)
      if fits then
        ad[i] = string.format('%d %d %d', s + su, sn, s)
        adx[i] = s + su + (sn > 0 and 1 or 0)
      end
    end
  else
    local c, w = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
    a = a + 3
    if alg == 's' then
      local exp, curr, prev = x, y, z
      local start
      if exp > now then
        start = exp - 2 * w
        if now < start - w then -- the clock went back more than a window
          start = now - now % w + w
          mv[i] = string.format('%d %d %d', start + 2 * w, curr, prev)
          mvx[i] = start + 2 * w
        elseif now >= start + w then
          start, curr, prev = start + w, 0, curr
        end
      else
        start, curr, prev = now - now % w, 0, 0
      end
      local e = math.max(now, start) - start
      local room = c - curr - n
      fits = n == 0 or (room >= 0 and mulle(prev, w - e, room, w))
      if fits and n > 0 then
        ad[i] = string.format('%d %d %d', start + 2 * w, curr + n, prev)
        adx[i] = start + 2 * w
      end
    else
      local wend, count = x, y
      if wend > now then
        if wend - 2 * w > now then -- the clock went back more than a window
          wend = now - now % w + 2 * w
          mv[i] = string.format('%d %d 0', wend, count)
          mvx[i] = wend
        end
      else
        wend, count = now - now % w + w, 0
      end
      fits = n == 0 or n <= c - count
      if fits and n > 0 then
        ad[i] = string.format('%d %d 0', wend, count + n)
        adx[i] = wend
      end
    end
  end
  admit = admit and fits
end
for i = 1, #KEYS do
  local v, x = mv[i], mvx[i]
  if admit and ad[i] then v, x = ad[i], adx[i] end
  if v then
    local ttl = math.ceil((x - now) / 1000)
    if ttl > 0 then
      redis.call('SET', KEYS[i], v, 'PX', ttl)
    else
      redis.call('DEL', KEYS[i])
    end
  end
end
if admit then out[2] = 1 end
return out
`

// takeScriptSHA is takeScript's SHA-1, for EVALSHA.
var takeScriptSHA = func() string {
	sum := sha1.Sum([]byte(takeScript))
	return hex.EncodeToString(sum[:])
}()

// maxScriptN is the largest n passed to the script; any larger n is
// refused alike, since counts are smaller.
const maxScriptN = 1 << 40

// appendArgs appends the script's arguments for l (see takeScript).
func appendArgs(args []string, l ratelimit.Limit, n int64) []string {
	wus := int64(l.Window / 1000)
	if l.Algorithm != ratelimit.GCRA {
		return append(args, string(algorithmCodes[l.Algorithm]), strconv.FormatInt(l.Count, 10), strconv.FormatInt(wus, 10))
	}
	T := int64(l.Window) / l.Count
	bound := l.Count * T
	xu, xn := int64(-1), int64(0)
	if n <= l.Count {
		x := n * T // ≤ bound
		xu, xn = x/1000, x%1000
	}
	return append(args, "g", strconv.FormatInt(wus, 10),
		strconv.FormatInt(T/1000, 10), strconv.FormatInt(T%1000, 10),
		strconv.FormatInt(bound/1000, 10), strconv.FormatInt(bound%1000, 10),
		strconv.FormatInt(xu, 10), strconv.FormatInt(xn, 10))
}

// maxUS bounds the instants the script may return, in µs: far beyond
// 2116 (ratelimit's maxTime), far below int64 overflow in ns.
const maxUS = 1 << 53

var errCorrupt = errors.New("redisstore: unexpected reply from the take script")

// decodeState returns the ratelimit.State that the script's three
// integers stand for under algorithm a.
func decodeState(a ratelimit.Algorithm, x, y, z int64) (ratelimit.State, error) {
	if x < 0 || y < 0 || z < 0 || x >= maxUS || z >= maxUS {
		return ratelimit.State{}, fmt.Errorf("%w: state %d %d %d", errCorrupt, x, y, z)
	}
	switch a {
	case ratelimit.GCRA:
		if y >= 1000 {
			return ratelimit.State{}, fmt.Errorf("%w: gcra state %d %d %d", errCorrupt, x, y, z)
		}
		return ratelimit.State{Expiry: x*1000 + y, Data: uint64(z) * 1000}, nil
	case ratelimit.FixedWindow:
		if y > ratelimit.MaxWindowCount {
			return ratelimit.State{}, fmt.Errorf("%w: fixed window state %d %d %d", errCorrupt, x, y, z)
		}
		return ratelimit.State{Expiry: x * 1000, Data: uint64(y)}, nil
	default:
		if y > ratelimit.MaxWindowCount || z > ratelimit.MaxWindowCount {
			return ratelimit.State{}, fmt.Errorf("%w: sliding window state %d %d %d", errCorrupt, x, y, z)
		}
		return ratelimit.State{Expiry: x * 1000, Data: uint64(y)<<32 | uint64(z)}, nil
	}
}
