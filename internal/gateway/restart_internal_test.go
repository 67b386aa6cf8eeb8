package gateway

import (
	"reflect"
	"testing"

	"github.com/floodgate/floodgate/internal/config"
)

// TestRestartOnlyCoversServer: every field of config.Server is read when
// the listeners start, so a new one must be reported by restartOnly (and
// copied by restartSettings) too.
func TestRestartOnlyCoversServer(t *testing.T) {
	st := reflect.TypeOf(config.Server{})
	for i := range st.NumField() {
		var a, b config.Config
		switch f := reflect.ValueOf(&b.Server).Elem().Field(i); f.Kind() {
		case reflect.Int:
			f.SetInt(1)
		default:
			f.SetString("changed")
		}
		copied := restartSettings(&b)
		if got := restartOnly(&a, &copied); len(got) != 1 {
			t.Errorf("server field %s: restartOnly reports %v, want it alone", st.Field(i).Name, got)
		}
	}
}
