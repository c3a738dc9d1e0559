package outputsafety

// A known secret cut in pieces with text between them ("key part1
// sk-proj-R26a part2 bcdefghij…") passes a search for the whole secret,
// and the pieces rebuild it. So every run of at least fragmentLength
// characters of a known secret at least fragmentMinSecret long is
// redacted too: a piece short enough to pass holds too little of the
// secret to matter, and so long a run of a random key does not occur in
// other text. One hash and one bit test per byte of the text (a bit set
// of the secrets' windows before the map): linear, cheap.

const (
	fragmentLength    = 16 // the shortest run of a secret redacted
	fragmentMinSecret = 24 // the shortest secret whose runs are looked for
	fragmentBits      = 1 << 16
)

// fragmentRef is where a window of fragmentLength bytes lies in a secret.
type fragmentRef struct {
	secret int // index in fragments.secrets
	offset int
}

// fragments finds runs of the known secrets.
type fragments struct {
	secrets []needle                 // the secrets looked for, as they are
	windows map[string][]fragmentRef // every window of each secret
	bits    []uint64                 // windowHash>>48 of every window
}

// newFragments returns the fragment search of the secrets long enough;
// nil when there are none.
func newFragments(secrets []Secret) *fragments {
	f := &fragments{windows: map[string][]fragmentRef{}, bits: make([]uint64, fragmentBits/64)}
	for _, sec := range secrets {
		if len(sec.Value) < fragmentMinSecret {
			continue
		}
		name := sec.Name
		if name == "" {
			name = "secret"
		}
		idx := len(f.secrets)
		f.secrets = append(f.secrets, needle{text: sec.Value, name: name})
		for o := 0; o+fragmentLength <= len(sec.Value); o++ {
			w := sec.Value[o : o+fragmentLength]
			f.windows[w] = append(f.windows[w], fragmentRef{secret: idx, offset: o})
			h := windowHash(w, 0) >> 48
			f.bits[h/64] |= 1 << (h % 64)
		}
	}
	if len(f.secrets) == 0 {
		return nil
	}
	return f
}

// windowHash hashes str[i:i+fragmentLength].
func windowHash(str string, i int) uint64 {
	var a, b uint64
	for k := 0; k < 8; k++ {
		a |= uint64(str[i+k]) << (8 * k)
		b |= uint64(str[i+8+k]) << (8 * k)
	}
	h := a*0x9E3779B97F4A7C15 ^ b*0xC2B2AE3D27D4EB4F
	return h ^ h>>29
}

// redact replaces every run of fragmentLength or more bytes of a secret
// in str.
func (f *fragments) redact(str string) (string, int) {
	if f == nil || len(str) < fragmentLength {
		return str, 0
	}
	type found struct {
		start, end int
		name       string
	}
	var ms []found
	for i := 0; i+fragmentLength <= len(str); {
		h := windowHash(str, i) >> 48
		if f.bits[h/64]&(1<<(h%64)) == 0 {
			i++
			continue
		}
		refs, ok := f.windows[str[i:i+fragmentLength]]
		if !ok {
			i++
			continue
		}
		// A run that began earlier would have been found there: extend forward only.
		best := found{start: i, end: i + fragmentLength}
		for _, ref := range refs {
			sec := f.secrets[ref.secret]
			end, o := i+fragmentLength, ref.offset+fragmentLength
			for end < len(str) && o < len(sec.text) && str[end] == sec.text[o] {
				end, o = end+1, o+1
			}
			if end >= best.end {
				best.end, best.name = end, sec.name
			}
		}
		ms = append(ms, best)
		i = best.end
	}
	if len(ms) == 0 {
		return str, 0
	}
	out := make([]byte, 0, len(str))
	last := 0
	for _, m := range ms {
		out = append(out, str[last:m.start]...)
		out = append(out, placeholder(m.name)...)
		last = m.end
	}
	out = append(out, str[last:]...)
	return string(out), len(ms)
}
