package demo

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// ExampleImageID and ExampleAudioID are the ids of one image and one audio
// record in the catalogue ("Ginger cat asleep on a windowsill" and "Purring
// cat, close up"), for tests that need an id the API knows.
const (
	ExampleImageID = "1465a516-8781-442d-b92b-4717d33e5d7e"
	ExampleAudioID = "d45fb4fe-6021-4e1c-85a3-97dad5fe200d"
)

// The media types, as the API names them in its paths.
const (
	images = "images"
	audio  = "audio"
)

// A tag is one entry of a record's "tags" list.
type tag struct {
	Name string `json:"name"`
}

// A media record as the API answers it; a subset of the Openverse fields.
// Records are built once and never modified, so handlers share them.
type media struct {
	ID                string   `json:"id"`
	Title             string   `json:"title"`
	IndexedOn         string   `json:"indexed_on"`
	ForeignLandingURL string   `json:"foreign_landing_url"`
	URL               string   `json:"url"`
	Creator           string   `json:"creator"`
	CreatorURL        string   `json:"creator_url"`
	License           string   `json:"license"`
	LicenseVersion    string   `json:"license_version"`
	LicenseURL        string   `json:"license_url"`
	Provider          string   `json:"provider"`
	Source            string   `json:"source"`
	Category          string   `json:"category"`
	Filetype          string   `json:"filetype"`
	Tags              []tag    `json:"tags"`
	Attribution       string   `json:"attribution"`
	FieldsMatched     []string `json:"fields_matched"`
	Mature            bool     `json:"mature"`
	Thumbnail         string   `json:"thumbnail"`
	// Images only.
	Width  int `json:"width,omitempty"`
	Height int `json:"height,omitempty"`
	// Audio only; Duration in milliseconds, as Openverse gives it.
	Duration int      `json:"duration,omitempty"`
	Genres   []string `json:"genres,omitempty"`

	// search is the lower-cased title and tag names, for q matching.
	search []string
}

// entry is the hand-written part of a record; the rest is derived.
type entry struct {
	id, title, creator        string
	license, version          string
	source, category, ext     string
	tags                      []string
	width, height, durationMS int
	genres                    []string
}

var imageEntries = []entry{
	{id: ExampleImageID, title: "Ginger cat asleep on a windowsill", creator: "Mara Okafor", license: "by", version: "2.0", source: "flickr", category: "photograph", ext: "jpg", tags: []string{"cat", "animal", "window", "sleep"}, width: 1024, height: 768},
	{id: "6f1afe72-ff7f-4a2e-8b73-70082b151d19", title: "Black cat in the garden", creator: "Tomás Ribeiro", license: "by-sa", version: "4.0", source: "wikimedia", category: "photograph", ext: "jpg", tags: []string{"cat", "garden", "animal"}, width: 1600, height: 1200},
	{id: "9903dbba-f7e0-4411-8869-c04ebaf6d0c4", title: "Red fox crossing a snowy field", creator: "Ingrid Solberg", license: "cc0", version: "1.0", source: "flickr", category: "photograph", ext: "jpg", tags: []string{"fox", "snow", "animal", "winter"}, width: 2048, height: 1365},
	{id: "3ca7efa1-e630-4705-9fd8-473753b2f825", title: "Lighthouse at dusk", creator: "Kenji Watanabe", license: "by", version: "4.0", source: "wikimedia", category: "photograph", ext: "jpg", tags: []string{"lighthouse", "sea", "coast", "dusk"}, width: 1200, height: 1600},
	{id: "361015a1-97ec-4855-94ac-4d156331fd70", title: "Botanical drawing of a fern", creator: "Eleanor Hayes", license: "pdm", version: "1.0", source: "smithsonian", category: "digitized_artwork", ext: "png", tags: []string{"fern", "plant", "botany", "drawing"}, width: 900, height: 1300},
	{id: "c672cd66-b811-4376-977d-4297e4b39314", title: "City skyline in the rain", creator: "Amara Diallo", license: "by-nc", version: "2.0", source: "flickr", category: "photograph", ext: "jpg", tags: []string{"city", "rain", "skyline", "night"}, width: 1920, height: 1080},
	{id: "6e431b7e-7cd6-4c53-adc0-ef541ce0bdfd", title: "Hand-drawn map of an imaginary island", creator: "Lucía Fernández", license: "by-sa", version: "4.0", source: "wikimedia", category: "illustration", ext: "svg", tags: []string{"map", "island", "drawing"}, width: 800, height: 800},
	{id: "07696e99-6bf4-447e-abd3-fdf792692f39", title: "Honeybee on lavender", creator: "Priya Raman", license: "by", version: "4.0", source: "wikimedia", category: "photograph", ext: "jpg", tags: []string{"bee", "insect", "flower", "lavender"}, width: 1500, height: 1000},
	{id: "92167225-c132-4628-82ff-cde37ac0d36f", title: "Kitten playing with yarn", creator: "Jonas Becker", license: "cc0", version: "1.0", source: "flickr", category: "photograph", ext: "jpg", tags: []string{"cat", "kitten", "yarn", "play"}, width: 1280, height: 960},
	{id: "a3350b13-cc5b-414a-9542-e38a0f2b417b", title: "Mountain lake at sunrise", creator: "Sofia Marchetti", license: "by-nd", version: "4.0", source: "flickr", category: "photograph", ext: "jpg", tags: []string{"mountain", "lake", "sunrise", "landscape"}, width: 2400, height: 1600},
	{id: "f7a3d2a5-ff24-415e-a817-134e514e04f8", title: "Vintage bicycle poster", creator: "Unknown artist", license: "pdm", version: "1.0", source: "smithsonian", category: "digitized_artwork", ext: "jpg", tags: []string{"bicycle", "poster", "vintage"}, width: 1000, height: 1500},
	{id: "90129b35-ea72-4742-ab20-1ab674493745", title: "Owl at night", creator: "Aiyana Redcloud", license: "by-nc-sa", version: "3.0", source: "flickr", category: "photograph", ext: "jpg", tags: []string{"owl", "bird", "night", "animal"}, width: 1024, height: 1024},
}

var audioEntries = []entry{
	{id: "739a8c73-a255-497a-bc14-af8a5ab75699", title: "Rain on a tin roof", creator: "Field Recordings Collective", license: "cc0", version: "1.0", source: "freesound", category: "sound_effect", ext: "wav", tags: []string{"rain", "ambient", "weather"}, durationMS: 95000},
	{id: ExampleAudioID, title: "Purring cat, close up", creator: "Mara Okafor", license: "by", version: "4.0", source: "freesound", category: "sound_effect", ext: "wav", tags: []string{"cat", "purr", "animal"}, durationMS: 42000},
	{id: "360abccf-2155-4cc7-944c-4b7b5fc40427", title: "Morning birdsong in the park", creator: "Ingrid Solberg", license: "by", version: "3.0", source: "freesound", category: "sound_effect", ext: "mp3", tags: []string{"bird", "morning", "nature"}, durationMS: 180000},
	{id: "472910d1-1f34-4956-ad5d-29fda4c61f74", title: "Lo-fi piano loop", creator: "Kai Nakamura", license: "by-sa", version: "4.0", source: "jamendo", category: "music", ext: "mp3", tags: []string{"piano", "lofi", "loop"}, durationMS: 134000, genres: []string{"lofi", "instrumental"}},
	{id: "8e8d3de4-5c2f-44a0-a210-97f9d324cf10", title: "Ocean waves at the lighthouse", creator: "Kenji Watanabe", license: "by", version: "4.0", source: "freesound", category: "sound_effect", ext: "wav", tags: []string{"ocean", "waves", "sea"}, durationMS: 240000},
	{id: "dcb0cc51-df16-4f96-8798-91c039dd2527", title: "Upbeat ukulele tune", creator: "Rosa Lindqvist", license: "by-nc", version: "4.0", source: "jamendo", category: "music", ext: "mp3", tags: []string{"ukulele", "happy"}, durationMS: 151000, genres: []string{"folk", "pop"}},
	{id: "5416c6e1-4bce-4b04-8b5a-2455f065d2cf", title: "Interview about open licences", creator: "Open Culture Podcast", license: "by-nd", version: "4.0", source: "wikimedia_audio", category: "podcast", ext: "ogg", tags: []string{"podcast", "interview", "licensing"}, durationMS: 1520000},
	{id: "c240e9f7-5aea-42ea-ba0e-380a16e0354b", title: "Thunderstorm rolling in", creator: "Field Recordings Collective", license: "by-nc-sa", version: "4.0", source: "freesound", category: "sound_effect", ext: "wav", tags: []string{"thunder", "storm", "rain", "weather"}, durationMS: 310000},
}

// catalogue holds the records of each media type, in a fixed order.
var catalogue = map[string][]*media{
	images: build(images, imageEntries),
	audio:  build(audio, audioEntries),
}

// build derives the full records of one media type from its entries.
func build(kind string, es []entry) []*media {
	out := make([]*media, len(es))
	for i, e := range es {
		m := &media{
			ID:                e.id,
			Title:             e.title,
			IndexedOn:         "2024-01-15T00:00:00Z",
			ForeignLandingURL: "https://media.example/" + kind + "/" + e.id,
			URL:               "https://media.example/" + kind + "/" + e.id + "." + e.ext,
			Creator:           e.creator,
			CreatorURL:        "https://media.example/creators/" + strings.ToLower(strings.ReplaceAll(e.creator, " ", "-")),
			License:           e.license,
			LicenseVersion:    e.version,
			LicenseURL:        licenseURL(e.license, e.version),
			Provider:          e.source,
			Source:            e.source,
			Category:          e.category,
			Filetype:          e.ext,
			Attribution:       attribution(e),
			FieldsMatched:     []string{},
			Width:             e.width,
			Height:            e.height,
			Duration:          e.durationMS,
			Genres:            e.genres,
		}
		m.search = append(m.search, strings.ToLower(e.title))
		for _, t := range e.tags {
			m.Tags = append(m.Tags, tag{Name: t})
			m.search = append(m.search, strings.ToLower(t))
		}
		if kind == audio {
			m.Thumbnail = waveform(i)
		} else {
			m.Thumbnail = landscape(i)
		}
		out[i] = m
	}
	return out
}

// find returns the record of kind with id, or nil.
func find(kind, id string) *media {
	for _, m := range catalogue[kind] {
		if m.ID == id {
			return m
		}
	}
	return nil
}

// licenseName is how a license is written for people: "CC BY-SA 4.0".
func licenseName(code, version string) string {
	switch code {
	case "cc0":
		return "CC0 " + version
	case "pdm":
		return "Public Domain Mark " + version
	}
	return "CC " + strings.ToUpper(code) + " " + version
}

func licenseURL(code, version string) string {
	switch code {
	case "cc0":
		return "https://creativecommons.org/publicdomain/zero/" + version + "/"
	case "pdm":
		return "https://creativecommons.org/publicdomain/mark/" + version + "/"
	}
	return "https://creativecommons.org/licenses/" + code + "/" + version + "/"
}

// attribution follows the wording of Openverse's attribution field.
func attribution(e entry) string {
	name := licenseName(e.license, e.version)
	if e.license == "cc0" || e.license == "pdm" {
		return fmt.Sprintf("\"%s\" by %s is marked with %s. To view the terms, visit %s.", e.title, e.creator, name, licenseURL(e.license, e.version))
	}
	return fmt.Sprintf("\"%s\" by %s is licensed under %s. To view a copy of this license, visit %s.", e.title, e.creator, name, licenseURL(e.license, e.version))
}

// svgURL returns the data: URL of an SVG document.
func svgURL(svg string) string {
	return "data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString([]byte(svg))
}

// landscape draws image thumbnail i: hills and a sun on a coloured sky.
func landscape(i int) string {
	hue := (i * 47) % 360
	sunX := 30 + (i*37)%100
	peak := 40 + (i*23)%40
	return svgURL(fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" width="160" height="120" viewBox="0 0 160 120">`+
		`<rect width="160" height="120" fill="hsl(%d,60%%,78%%)"/>`+
		`<circle cx="%d" cy="32" r="14" fill="hsl(45,90%%,85%%)"/>`+
		`<path d="M0 120 L0 90 L45 %d L80 95 L115 70 L160 88 L160 120 Z" fill="hsl(%d,35%%,38%%)"/>`+
		`</svg>`, hue, sunX, peak, (hue+120)%360))
}

// waveform draws audio thumbnail i: bars of a made-up waveform.
func waveform(i int) string {
	hue := (200 + i*53) % 360
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="160" height="120" viewBox="0 0 160 120">`+
		`<rect width="160" height="120" fill="hsl(%d,45%%,22%%)"/>`, hue)
	x := uint32(i*2654435761 + 1) // a small deterministic sequence of heights
	for bar := 0; bar < 16; bar++ {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		h := 10 + int(x%80)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="6" height="%d" rx="2" fill="hsl(%d,80%%,70%%)"/>`, 8+bar*9, 60-h/2, h, hue)
	}
	b.WriteString(`</svg>`)
	return svgURL(b.String())
}
