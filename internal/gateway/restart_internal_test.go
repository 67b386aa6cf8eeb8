package gateway

import (
	"reflect"
	"testing"

	"github.com/floodgate/floodgate/internal/config"
)

// reloadedServerFields are the fields of config.Server the Gateway reads
// (New), which a reload therefore applies.
var reloadedServerFields = map[string]bool{
	"MaxBodyBytes": true, "MaxURIBytes": true, "BodyReadTimeout": true, "RequestBufferBytes": true,
}

// TestRestartOnlyCoversServer: every other field of config.Server is read
// when the listeners start, so a new one must be reported by restartOnly
// (and copied by restartSettings) too.
func TestRestartOnlyCoversServer(t *testing.T) {
	st := reflect.TypeOf(config.Server{})
	for i := range st.NumField() {
		if reloadedServerFields[st.Field(i).Name] {
			continue
		}
		var a, b config.Config
		if f := reflect.ValueOf(&b.Server).Elem().Field(i); f.Kind() == reflect.String {
			f.SetString("changed")
		} else {
			f.SetInt(1)
		}
		copied := restartSettings(&b)
		if got := restartOnly(&a, &copied); len(got) != 1 {
			t.Errorf("server field %s: restartOnly reports %v, want it alone", st.Field(i).Name, got)
		}
	}
}
