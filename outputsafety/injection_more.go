package outputsafety

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// chatTurnRules find a fake chat transcript: a Human (or User) turn
// followed by an Assistant turn, each at a line's start, as the
// completion formats of chat models write them ("\n\nHuman: … \n\n
// Assistant:"). One "User:" line alone is left alone (a log, a form).
var chatTurnRules = []rule{
	within(requiring(lineStartRule(injectionRule("role_marker", `(?:human|user) ?:[^\n]{0,300}(?:\n[^\n]{0,300}){0,2}\n ?(?:assistant|ai|claude|chatgpt) ?:`,
		"human", "user")), "assistant", "ai", "claude", "chatgpt"), 1000),
	within(requiring(lineStartRule(injectionRule("role_marker", `human ?: ?(?:you\b|your\b|ignore|disregard|forget|from now on|new (?:task|instructions?)\b|act as|reveal|print\b|call\b|run\b|execute|send\b)`,
		"human")), ":"), 48),
}

// foreignInjectionRules are "ignore the previous instructions" in
// Spanish, French, German, Portuguese, Italian and Chinese: a verb of
// dropping, instructions, and a word saying they came before (or all of
// them), so that "ignora las instrucciones del fabricante" is left alone.
var foreignInjectionRules = []rule{
	injectionRule("ignore_instructions", `(?:ignora|ignore|ignoren|ignorad|ignorar|olvida|olvide|olviden|olvidad|olvidar|omite|omita|descarta|descarte|desestima) `+
		`(?:(?:todas|todos) (?:(?:las|los|tus|sus) )?(?:instrucciones|indicaciones|[oó]rdenes|reglas|directrices|directivas)`+
		`|(?:(?:las|los|tus|sus|cualquier) )?(?:instrucciones|indicaciones|[oó]rdenes|reglas|directrices|directivas) (?:anteriores|previas|precedentes|originales|iniciales|de arriba|del sistema|que (?:te )?(?:dieron|di|recibiste)))`,
		"ignora", "ignore", "ignoren", "ignorad", "ignorar", "olvida", "olvide", "olviden", "olvidad", "olvidar", "omite", "omita", "descarta", "descarte", "desestima"),
	injectionRule("ignore_instructions", `(?:ignore|ignorez|ignorer|oublie|oubliez|oublier|n[eé]glige|n[eé]gligez) `+
		`(?:toutes (?:(?:les|tes|vos|ses) )?(?:instructions|consignes|directives|r[eè]gles)`+
		`|(?:(?:les|tes|vos|ses) )?(?:instructions|consignes|directives|r[eè]gles|ordres) (?:pr[eé]c[eé]dentes|ant[eé]rieures|ci-dessus|initiales|originales|d'origine|du syst[eè]me|re[cç]ues))`,
		"ignore", "ignorez", "ignorer", "oublie", "oubliez", "oublier", "néglige", "neglige", "négligez", "negligez"),
	injectionRule("ignore_instructions", `(?:ignoriere|ignorier|ignoriert|ignorieren sie|vergiss|vergesst|vergessen sie|missachte|missachtet|missachten sie) `+
		`(?:(?:alle|s[aä]mtliche) (?:(?:deine|ihre|eure|die|bisherigen|vorherigen|obigen|fr[uü]heren|vorigen) )*`+
		`|(?:(?:deine|ihre|eure|die) )?(?:bisherigen|vorherigen|obigen|fr[uü]heren|vorigen|urspr[uü]nglichen|vorangegangenen|vorhergehenden) )`+
		`(?:anweisungen|instruktionen|befehle|regeln|vorgaben|anordnungen|systemanweisungen)`,
		"ignoriere", "ignorier", "ignoriert", "ignorieren", "vergiss", "vergesst", "vergessen", "missachte", "missachtet", "missachten"),
	injectionRule("ignore_instructions", `(?:ignore|ignora|esque[cç]a|desconsidere|ignorate|dimentica|dimenticate) (?:(?:todas|tutte) )?(?:(?:as|le) )?`+
		`(?:instru[cç][oõ]es|istruzioni|regras|regole|indicazioni) (?:anteriores|pr[eé]vias|acima|precedenti|sopra|iniziali|originali)`,
		"ignore", "ignora", "esqueça", "esqueca", "desconsidere", "ignorate", "dimentica", "dimenticate"),
	within(injectionRule("ignore_instructions", `(?:忽略|无视|忽视|不要理会|不要理睬|忘记|忘掉|無視|忽略掉|请忽略)(?:你|您)?(?:之前|以前|先前|上面|上述|前面|此前|所有|以上|全部|一切)(?:的)?(?:所有|全部|一切)?(?:的)?(?:指令|指示|说明|說明|提示|规则|規則|命令|设定|設定|系统提示|系統提示)`,
		"忽略", "无视", "忽视", "不要理会", "不要理睬", "忘记", "忘掉", "無視"), 96),
}

// despaced returns s with its letters spelled one at a time rejoined —
// "i g n o r e  p r e v i o u s" reads "ignore previous": single letters
// a single space apart form one word, a wider gap parts two — and whether
// it changed anything.
func despaced(s string) (string, bool) {
	parts := strings.Split(s, " ")
	var b strings.Builder
	b.Grow(len(s))
	prevSingle, gap, changed := false, 0, false
	for i, p := range parts {
		if p == "" {
			gap++
			continue
		}
		r, size := utf8.DecodeRuneInString(p)
		single := size == len(p) && unicode.IsLetter(r)
		if i > 0 {
			if single && prevSingle && gap == 0 {
				changed = true
			} else {
				b.WriteByte(' ')
			}
		}
		b.WriteString(p)
		prevSingle, gap = single, 0
	}
	return b.String(), changed
}

// holdsSpacedLetters reports whether the normalised text norm holds four
// letters spelled one at a time ("a b c d"), the cue to read it despaced.
func holdsSpacedLetters(norm string) bool {
	run := 0 // single letters seen in a row
	for i := 0; i < len(norm); i++ {
		c := norm[i]
		isLetter := c >= 'a' && c <= 'z' || c >= utf8.RuneSelf
		if isLetter && (i == 0 || norm[i-1] == ' ') && (i+1 == len(norm) || norm[i+1] == ' ') {
			if run++; run >= 4 {
				return true
			}
			continue
		}
		if c != ' ' {
			run = 0
		}
	}
	return false
}
