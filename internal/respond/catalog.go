package respond

import "strconv"

// A lang is an index into catalogs.
type lang uint8

const (
	langEN lang = iota
	langES
	numLangs
)

// noLang is no catalog language: that of a message's text in another
// language ("pt-BR").
const noLang = numLangs

// allLangs is the bit set of every catalog language.
const allLangs = 1<<numLangs - 1

// catalog is the text of every answer in one language. Details are
// templates (see CompileMessage) that may use {retry_after} and
// {retry_after_human}.
type catalog struct {
	tag     string // BCP 47 tag: Content-Language and <html lang>
	titles  [numKinds + 1]string
	details [numKinds + 1]string
	// retry is added after a detail that does not say when to retry.
	retry string
	// Labels of the HTML page's small print.
	codeLabel, ruleLabel string
	// Duration units, singular and plural, and the word joining two.
	second, seconds, minute, minutes, hour, hours, day, days, and string
}

// Titles for about:blank kinds are the status phrases (RFC 9457 §4.2.1),
// in sentence case.
var catalogs = [numLangs]catalog{
	langEN: {
		tag: "en",
		titles: [...]string{
			RateLimited:    "Too many requests",
			Denied:         "Forbidden",
			Unavailable:    "Service temporarily unavailable",
			BadGateway:     "Bad gateway",
			GatewayTimeout: "Gateway timeout",
			BadRequest:     "Bad request",
			NotFound:       "Not found",
			InternalError:  "Internal server error",

			RequestTimeout:  "Request timeout",
			ContentTooLarge: "Content too large",
			URITooLong:      "URI too long",
		},
		details: [...]string{
			RateLimited:    "You have sent too many requests in a short time. Please try again in {retry_after_human}.",
			Denied:         "You are not allowed to make this request.",
			Unavailable:    "The service is busy right now. Please try again in {retry_after_human}.",
			BadGateway:     "The gateway could not reach the service behind it.",
			GatewayTimeout: "The service behind the gateway took too long to respond.",
			BadRequest:     "The request is not valid.",
			NotFound:       "There is nothing at this address.",
			InternalError:  "Something went wrong in the gateway.",

			RequestTimeout:  "The request body did not arrive in time.",
			ContentTooLarge: "The request body is larger than this service accepts.",
			URITooLong:      "The request's address is longer than this service accepts.",
		},
		retry:     "Please try again in {retry_after_human}.",
		codeLabel: "Error code",
		ruleLabel: "Rule",
		second:    "second", seconds: "seconds",
		minute: "minute", minutes: "minutes",
		hour: "hour", hours: "hours",
		day: "day", days: "days",
		and: "and",
	},
	langES: {
		tag: "es",
		titles: [...]string{
			RateLimited:    "Demasiadas solicitudes",
			Denied:         "Prohibido",
			Unavailable:    "Servicio no disponible temporalmente",
			BadGateway:     "Puerta de enlace incorrecta",
			GatewayTimeout: "Tiempo de espera agotado en la puerta de enlace",
			BadRequest:     "Solicitud incorrecta",
			NotFound:       "No encontrado",
			InternalError:  "Error interno del servidor",

			RequestTimeout:  "Tiempo de espera de la solicitud agotado",
			ContentTooLarge: "Contenido demasiado grande",
			URITooLong:      "URI demasiado larga",
		},
		details: [...]string{
			RateLimited:    "Ha enviado demasiadas solicitudes en poco tiempo. Vuelva a intentarlo dentro de {retry_after_human}.",
			Denied:         "No tiene permiso para realizar esta solicitud.",
			Unavailable:    "El servicio está ocupado en este momento. Vuelva a intentarlo dentro de {retry_after_human}.",
			BadGateway:     "La puerta de enlace no pudo comunicarse con el servicio que hay detrás.",
			GatewayTimeout: "El servicio detrás de la puerta de enlace tardó demasiado en responder.",
			BadRequest:     "La solicitud no es válida.",
			NotFound:       "No hay nada en esta dirección.",
			InternalError:  "Se produjo un error en la puerta de enlace.",

			RequestTimeout:  "El cuerpo de la solicitud no llegó a tiempo.",
			ContentTooLarge: "El cuerpo de la solicitud es más grande de lo que admite este servicio.",
			URITooLong:      "La dirección de la solicitud es más larga de lo que admite este servicio.",
		},
		retry:     "Vuelva a intentarlo dentro de {retry_after_human}.",
		codeLabel: "Código de error",
		ruleLabel: "Regla",
		second:    "segundo", seconds: "segundos",
		minute: "minuto", minutes: "minutos",
		hour: "hora", hours: "horas",
		day: "día", days: "días",
		and: "y",
	},
}

// Languages returns the tags of the shipped catalogs, the default first.
func Languages() []string {
	tags := make([]string, numLangs)
	for l := range lang(numLangs) {
		tags[l] = catalogs[l].tag
	}
	return tags
}

// langByTag returns the catalog language tagged t (exactly, lower case).
func langByTag(t string) (lang, bool) {
	for l := range lang(numLangs) {
		if catalogs[l].tag == t {
			return l, true
		}
	}
	return 0, false
}

// appendHuman appends secs as people say it in language l, rounded up so
// that nobody is told to come back too early: under 2 minutes in seconds
// ("90 seconds"), under an hour in minutes ("5 minutes"), under a day in
// hours and minutes ("1 hour and 30 minutes"), else in days and hours.
// The output never holds a character that needs escaping in HTML or JSON.
func appendHuman(dst []byte, l lang, secs int64) []byte {
	c := &catalogs[l]
	const minute, hour, day = 60, 3600, 86400
	if secs < 0 {
		secs = 0
	}
	switch {
	case secs < 2*minute:
		return appendUnit(dst, secs, c.second, c.seconds)
	case secs < hour:
		m := ceilDiv(secs, minute)
		if m == 60 {
			return appendUnit(dst, 1, c.hour, c.hours)
		}
		return appendUnit(dst, m, c.minute, c.minutes)
	case secs < day:
		m := ceilDiv(secs, minute)
		if m == 24*60 {
			return appendUnit(dst, 1, c.day, c.days)
		}
		return appendPair(dst, c, m/60, c.hour, c.hours, m%60, c.minute, c.minutes)
	}
	h := ceilDiv(secs, hour)
	return appendPair(dst, c, h/24, c.day, c.days, h%24, c.hour, c.hours)
}

func ceilDiv(a, b int64) int64 { return a/b + min(a%b, 1) }

func appendPair(dst []byte, c *catalog, n1 int64, one1, many1 string, n2 int64, one2, many2 string) []byte {
	dst = appendUnit(dst, n1, one1, many1)
	if n2 == 0 {
		return dst
	}
	dst = append(dst, ' ')
	dst = append(dst, c.and...)
	dst = append(dst, ' ')
	return appendUnit(dst, n2, one2, many2)
}

func appendUnit(dst []byte, n int64, one, many string) []byte {
	dst = strconv.AppendInt(dst, n, 10)
	dst = append(dst, ' ')
	if n == 1 {
		return append(dst, one...)
	}
	return append(dst, many...)
}
