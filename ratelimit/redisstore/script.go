package redisstore

import (
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"

	"github.com/floodgate/floodgate/ratelimit"
)

// takeScript decides and records a batch of Takes, one after the other,
// atomically, with the server's clock (TIME, read once for the batch), and
// returns what each read, so that the caller can compute the Decisions
// with ratelimit.Limit.Take. A batch is one Take, or the Takes that
// concurrent callers made while the previous batch was on its way (see
// batcher); each Take is all or nothing on its own, and a Take sees the
// counters as the Takes before it in the batch left them.
//
// Lua numbers are doubles, exact for integers below 2⁵³, so the script
// works in microseconds (TIME's resolution; 2026 is 1.8×10¹⁵ µs; windows
// are whole milliseconds, at most 3.2×10¹³ µs) and keeps GCRA's
// nanosecond instants as a pair (µs, ns below the µs). It only compares,
// adds and subtracts, except for the sliding window's test
// prev×(w−e) ≤ room×w, whose products can reach 2⁷⁷ and are then compared
// exactly in base-2²⁴ limbs (luaMulLE). Every step mirrors Limit.Take in
// ratelimit/algorithm.go, which the caller runs on the same state and
// instant: the two must agree on admission, and the caller checks that
// they do.
//
// Numbers travel as little-endian IEEE 754 doubles, packed with Redis's
// struct library: unpacking eight numbers is one call, where parsing text
// would be eight. KEYS are the counters of every Take, in order; ARGV[1]
// holds the number of Takes, then for each Take n (clamped to 2⁴⁰ by the
// caller: any n above a count is refused alike), its number of counters
// k, CHARGE (1 for a Charge, which records the events under every counter
// whether or not they fit, each count going to at most twice the limit;
// 0 for a Take), and eight numbers for each of its counters:
//
//	1 (sliding window) or 3 (fixed window), COUNT, WINDOW_US, 0, 0, 0, 0, 0
//	2 (GCRA), WINDOW_US, T_US, T_NS, B_US, B_NS, X_US, X_NS
//
// where T = WINDOW/COUNT is GCRA's emission interval in ns, B = COUNT×T
// its bound and X = min(n, 2×COUNT)×T (more than B when n > COUNT), each
// split into whole µs and the ns below.
//
// A counter's value is three numbers (24 bytes):
//
//	sliding window: EXPIRY_US CURRENT PREVIOUS   (the current window starts at EXPIRY − 2×WINDOW)
//	fixed window:   END_US COUNT 0
//	GCRA:           TAT_US TAT_NS LAST_US        (theoretical arrival time, latest admission)
//
// and it expires (PX) when the counter is empty again; a value of another
// length counts as an empty counter. The reply is a string of numbers:
// NOW_US, then for each Take ADMITTED (0 or 1) and its counters' three
// numbers as read (0 0 0 for none).
const takeScript = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local args = ARGV[1]
local takes, pos = struct.unpack('<d', args)
local EMPTY = struct.pack('<ddd', 0, 0, 0)
local out = {struct.pack('<d', now)}
local function charged(count, n, c) -- a window's count after a charge of n
  local most = 2 * c
  if most > 4294967295 then most = 4294967295 end
  local v = count + n
  if n > 2 * c then v = count + 2 * c end
  if v > most then v = most end
  if v < count then v = count end
  return v
end
local o = 1 -- out[o] is the last part of the reply
local ad, mv, ch = {}, {}, {} -- writes if admitted, anyway, if charged; [i] value, [-i] expiry
local base = 0
for take = 1, takes do
  local n, k, charge
  n, k, charge, pos = struct.unpack('<ddd', args, pos)
  local admit = true
  local head = o + 1 -- ADMITTED goes here, once known
  o = head
  for i = 1, k do
    ad[i], ad[-i], mv[i], mv[-i], ch[i], ch[-i] = nil, nil, nil, nil, nil, nil
    local key = KEYS[base + i]
    local v = redis.call('GET', key)
    if not v or #v ~= 24 then v = EMPTY end
    o = o + 1
    out[o] = v
    local x, y, z = struct.unpack('<ddd', v)
    local alg, p1, p2, p3, p4, p5, p6, p7
    alg, p1, p2, p3, p4, p5, p6, p7, pos = struct.unpack('<dddddddd', args, pos)
    local fits
    if alg == 2 then -- GCRA: p1 window, p2..p3 T, p4..p5 bound, p6..p7 n×T
      local tatu, tatn, last = x, y, z
      if now < last - p1 then -- the clock went back more than a window
        tatu = tatu - (last - now)
        last = now
        mv[i] = struct.pack('<ddd', tatu, tatn, last)
        mv[-i] = tatu + (tatn > 0 and 1 or 0)
      end
      local s = now
      if last > now then s = last end
      local bu, bn = 2 * p4, 2 * p5 -- twice the bound: the most a charge owes
      if bn >= 1000 then bu, bn = bu + 1, bn - 1000 end
      local uu, un = tatu - s, tatn -- used = min(max(tat - s, 0), 2×bound)
      if uu < 0 then
        uu, un = 0, 0
      elseif uu > bu or (uu == bu and un > bn) then
        uu, un = bu, bn
      end
      if n == 0 then
        fits = true
      else
        local su, sn = uu + p6, un + p7
        if sn >= 1000 then su, sn = su + 1, sn - 1000 end
        fits = su < p4 or (su == p4 and sn <= p5)
        if fits then
          ad[i] = struct.pack('<ddd', s + su, sn, s)
          ad[-i] = s + su + (sn > 0 and 1 or 0)
        end
        if su > bu or (su == bu and sn > bn) then su, sn = bu, bn end
        ch[i] = struct.pack('<ddd', s + su, sn, s)
        ch[-i] = s + su + (sn > 0 and 1 or 0)
      end
    elseif alg == 1 then -- sliding window: p1 count, p2 window
      local w, exp, curr, prev = p2, x, y, z
      local start
      if exp > now then
        start = exp - 2 * w
        if now < start - w then -- the clock went back more than a window
          start = now - now % w + w
          mv[i] = struct.pack('<ddd', start + 2 * w, curr, prev)
          mv[-i] = start + 2 * w
        elseif now >= start + w then
          start, curr, prev = start + w, 0, curr
        end
      else
        start, curr, prev = now - now % w, 0, 0
      end
      local e = 0
      if now > start then e = now - start end
      local room = p1 - curr - n
      if n == 0 then
        fits = true
      elseif room < 0 then
        fits = false
      else -- prev×(w−e) ≤ room×w, exactly
        local pa, pb, qa, qb = prev, w - e, room, w
` + luaMulLE + `
      end
      if fits and n > 0 then
        ad[i] = struct.pack('<ddd', start + 2 * w, curr + n, prev)
        ad[-i] = start + 2 * w
      end
      if n > 0 then
        ch[i] = struct.pack('<ddd', start + 2 * w, charged(curr, n, p1), prev)
        ch[-i] = start + 2 * w
      end
    else -- fixed window: p1 count, p2 window
      local w, wend, count = p2, x, y
      if wend > now then
        if wend - 2 * w > now then -- the clock went back more than a window
          wend = now - now % w + 2 * w
          mv[i] = struct.pack('<ddd', wend, count, 0)
          mv[-i] = wend
        end
      else
        wend, count = now - now % w + w, 0
      end
      fits = n == 0 or n <= p1 - count
      if fits and n > 0 then
        ad[i] = struct.pack('<ddd', wend, count + n, 0)
        ad[-i] = wend
      end
      if n > 0 then
        ch[i] = struct.pack('<ddd', wend, charged(count, n, p1), 0)
        ch[-i] = wend
      end
    end
    admit = admit and fits
  end
  for i = 1, k do
    local v, x = mv[i], mv[-i]
    if admit and ad[i] then v, x = ad[i], ad[-i] end
    if charge == 1 and ch[i] then v, x = ch[i], ch[-i] end
    if v then
      local ttl = math.ceil((x - now) / 1000)
      if ttl > 0 then
        redis.call('SET', KEYS[base + i], v, 'PX', ttl)
      else
        redis.call('DEL', KEYS[base + i])
      end
    end
  end
  out[head] = struct.pack('<d', admit and 1 or 0)
  base = base + k
end
return table.concat(out)
`

// luaMulLE sets fits to whether pa×pb ≤ qa×qb, exactly, for integers
// pa, qa < 2³³ and pb, qb < 2⁴⁶ (counts and windows in µs), whose
// products may exceed 2⁵³: then both are computed as hi×2⁴⁸ + lo from
// base-2²⁴ limbs, each partial product below 2⁴⁸.
const luaMulLE = `
      local p, q = pa * pb, qa * qb
      if p < 9007199254740992 and q < 9007199254740992 then
        fits = p <= q
      else
        local floor, TWO24, TWO48 = math.floor, 16777216, 281474976710656
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
        local ph, pl = wide(pa, pb)
        local qh, ql = wide(qa, qb)
        fits = ph < qh or (ph == qh and pl <= ql)
      end`

// takeScriptSHA is takeScript's SHA-1, for EVALSHA.
var takeScriptSHA = func() string {
	sum := sha1.Sum([]byte(takeScript))
	return hex.EncodeToString(sum[:])
}()

// maxScriptN is the largest n passed to the script; any larger n is
// refused alike, since counts are smaller.
const maxScriptN = 1 << 40

// Algorithm codes in the script's arguments.
var scriptCodes = [...]float64{ratelimit.SlidingWindow: 1, ratelimit.GCRA: 2, ratelimit.FixedWindow: 3}

// appendArgs appends to b the script's eight numbers for l (see
// takeScript).
func appendArgs(b []byte, l ratelimit.Limit, n int64) []byte {
	wus := int64(l.Window / 1000)
	if l.Algorithm != ratelimit.GCRA {
		return appendNumbers(b, scriptCodes[l.Algorithm], float64(l.Count), float64(wus), 0, 0, 0, 0, 0)
	}
	T := int64(l.Window) / l.Count
	bound := l.Count * T
	x := min(n, 2*l.Count) * T // ≤ 2×bound, more than bound when n > Count
	xu, xn := x/1000, x%1000
	return appendNumbers(b, 2, float64(wus), float64(T/1000), float64(T%1000),
		float64(bound/1000), float64(bound%1000), float64(xu), float64(xn))
}

// appendNumbers appends xs as little-endian doubles, as the script's
// struct.unpack('<d…') reads them.
func appendNumbers(b []byte, xs ...float64) []byte {
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}

// number returns the i-th little-endian double of b as an integer, and
// whether it is one and below maxUS in magnitude.
func number(b []byte, i int) (int64, bool) {
	f := math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	if f != math.Trunc(f) || math.Abs(f) >= maxUS {
		return 0, false
	}
	return int64(f), true
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
