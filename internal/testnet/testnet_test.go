package testnet

import "testing"

// TestFreeAddrNeverRepeats takes many addresses, as a package's tests do
// over a run: none is handed out twice, though the kernel picks each
// freed port at random again (2 000 draws from ~28 000 ephemeral ports
// repeat some with near certainty).
func TestFreeAddrNeverRepeats(t *testing.T) {
	seen := map[string]bool{}
	for range 2000 {
		a := FreeAddr(t)
		if seen[a] {
			t.Fatalf("FreeAddr returned %s twice", a)
		}
		seen[a] = true
	}
}
