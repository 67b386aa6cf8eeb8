package config

import (
	"net/url"
	"reflect"
)

// Redacted returns a deep copy of c in which every field tagged
// `secret:"true"` is replaced by "[redacted]" when set, and the password
// of every URL-valued string is masked, so the effective configuration can
// be shown (GET /admin/config) without revealing credentials.
func Redacted(c Config) Config {
	v := reflect.New(reflect.TypeOf(c)).Elem()
	deepCopy(v, reflect.ValueOf(c))
	redact(v, false)
	return v.Interface().(Config)
}

func redact(v reflect.Value, secret bool) {
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		switch {
		case s == "":
		case secret:
			v.SetString("[redacted]")
		default:
			if u, err := url.Parse(s); err == nil && u.User != nil {
				if _, has := u.User.Password(); has {
					u.User = url.UserPassword(u.User.Username(), "redacted")
					v.SetString(u.String())
				}
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			redact(v.Field(i), v.Type().Field(i).Tag.Get("secret") == "true")
		}
	case reflect.Slice:
		for i := range v.Len() {
			redact(v.Index(i), secret)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			redact(e, secret)
			v.SetMapIndex(k, e)
		}
	}
}
