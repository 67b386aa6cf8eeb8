package admin

import (
	"crypto/subtle"

	"github.com/floodgate/floodgate/internal/httpsyntax"
)

// bearerMatches reports whether the Authorization field values vv carry
// token: exactly one value, of the Bearer scheme in any case
// (httpsyntax.BearerToken), whose token equals token. The comparison
// takes the same time whatever the bytes compared (it depends on the
// lengths alone).
func bearerMatches(vv []string, token string) bool {
	if len(vv) != 1 || token == "" {
		return false
	}
	got, ok := httpsyntax.BearerToken(vv[0])
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}
