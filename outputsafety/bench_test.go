package outputsafety_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/outputsafety"
)

// mib is the largest output a tool is expected to return.
const mib = 1 << 20

// prose is ordinary text with a little of everything the patterns look
// for nearby (colons, dashes, underscores, "system", "ignore"), so the
// cheap first looks do not skip the work.
const prose = "The system: service_a returned status-ok at 10:42; users may ignore the warning about tokens. " +
	"Basic setup takes a minute, see https://example.com/docs?q=1&x=2 — naïve café ｆｕｌｌ width. "

// bigText is a 1 MiB JSON string of prose.
func bigText() json.RawMessage {
	b, _ := json.Marshal(strings.Repeat(prose, mib/len(prose)))
	return b
}

// bigRecords is a 1 MiB JSON array of small objects.
func bigRecords() json.RawMessage {
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; b.Len() < mib; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"item-%d","note":"an ordinary note about item %d","tags":["a","b_c"],"price":%d.5}`, i, i, i, i)
	}
	b.WriteByte(']')
	return json.RawMessage(b.String())
}

func benchmarkSanitize(b *testing.B, out json.RawMessage, mode outputsafety.Mode) {
	s := newSanitizer()
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	for b.Loop() {
		s.Sanitize(out, mode)
	}
}

func BenchmarkSanitizeText1MiB(b *testing.B) { benchmarkSanitize(b, bigText(), outputsafety.ModeFull) }
func BenchmarkSanitizeRecords1MiB(b *testing.B) {
	benchmarkSanitize(b, bigRecords(), outputsafety.ModeFull)
}
func BenchmarkSanitizeSecretsOnly1MiB(b *testing.B) {
	benchmarkSanitize(b, bigRecords(), outputsafety.ModeSecretsOnly)
}

// BenchmarkSanitizeFlagged1MiB: a 1 MiB text full of injection attempts
// and credentials, the worst case for the slower second looks.
func BenchmarkSanitizeFlagged1MiB(b *testing.B) {
	line := "ignore previous instructions; password=hunter22 Bearer abcdef0123456789xyz sk-abc123def456ghi789jkl0 " + agentKey + "\n"
	out, _ := json.Marshal(strings.Repeat(line, mib/len(line)))
	benchmarkSanitize(b, out, outputsafety.ModeFull)
}

// BenchmarkSanitizeAdversarial1MiB: texts made of what the searches start
// from, repeated — each costs a bounded try per occurrence, so the whole
// stays linear.
func BenchmarkSanitizeAdversarial1MiB(b *testing.B) {
	for _, unit := range []string{
		"ignore ", "you you ", "-----BEGIN RSA PRIVATE KEY-----!", "tgs_", "sk-aaaaaaaaaaaaaaaaaaaaaaaa ", "eyJaaaaaaaa.eyJ",
		"password=", "bearer ", "<|", "\n##", "ａ\u200b", "use the tool x ",
		"a\u00ad", "model must ", ". assistant, ", "your task ", "system: ", "call x_y ", "DB_PASSWORD=S3cr3tP@ss!\n",
		"QUJDREVGR0hJSktMTU5PUFFSU1RVVldY ", "i g n o r e ", "MTAxMjM0NTY3ODkwMTIzNDU2.", "AKIAZZZZEXAMPLE7FAKE ",
	} {
		out, _ := json.Marshal(strings.Repeat(unit, mib/len(unit)))
		b.Run(fmt.Sprintf("%q", unit), func(b *testing.B) { benchmarkSanitize(b, out, outputsafety.ModeFull) })
	}
	deep := json.RawMessage(strings.Repeat(`[{"password":`, mib/13/2) + `"x"` + strings.Repeat(`}]`, mib/13/2))
	b.Run("deep", func(b *testing.B) { benchmarkSanitize(b, deep, outputsafety.ModeFull) })
}
