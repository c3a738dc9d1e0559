// Package outputsafety is the safety step a tool's output passes before a
// model sees it: secrets redacted, text that tries to pass as instructions
// found and reported so that the caller can mark the output as tool data.
//
// A Sanitizer walks the output as JSON — every string, object keys
// included — and keeps its shape: a value still parses, an object keeps
// its members in order, only the text inside strings changes. It
// redacts, in this order:
//
//   - The known secrets it was built with (New): the gateway's agent key,
//     the model's API key, the client key. Each is also found in the
//     encodings a tool could hand it on in without meaning to hide it:
//     URL-escaped, hex, and base64 (standard and URL alphabets, at every
//     alignment, so the secret is found inside a longer base64 text such
//     as an HTTP Basic credential), and with invisible format characters
//     (zero-width spaces, soft hyphens) put inside it or look-alike
//     letters (Cyrillic, Greek, fullwidth) for its own. A secret shorter
//     than MinSecretLength (4) is ignored: redacting it would redact
//     ordinary words; a short one's encodings are not looked for. A
//     secret split across three strings or more, spaced out, reversed or
//     otherwise re-encoded is not found: the step keeps a tool from
//     echoing a secret by accident, not one that means to leak it.
//   - The gateway's session tokens (tgs_ and 43 base64url characters),
//     found by their shape: the gateway keeps only their hashes.
//   - Values that look like credentials (ModeFull only): OpenAI-style keys (sk-…), AWS access key ids (AKIA…,
//     ASIA…) and an unlabelled secret access key beside one (40 base64
//     characters), GitHub tokens (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_),
//     GitLab (glpat-…), npm (npm_…), Hugging Face (hf_…), SendGrid (SG.…),
//     Twilio (SK…, AC…) and Discord bot tokens, Azure connection strings'
//     AccountKey= and SharedAccessKey=,
//     Slack tokens (xox[abprs]-…), Stripe keys (sk_live_…, rk_test_…),
//     Google API keys (AIza…), JSON Web
//     Tokens (eyJ….eyJ….…), PEM private key blocks, the credential of an
//     "Authorization: Bearer/Basic …" text, password=…/"password": "…"
//     style pairs (a quoted value always; a bare one when it mixes
//     letters with digits or symbols and is not an expression such as
//     os.environ['X']), config lines (.env, YAML, INI: a secret's name
//     starting a line, = or :, and any value that is not code, such as
//     DB_PASSWORD=S3cr3tP@ss!), but never a reference ($API_KEY,
//     ${TOKEN}, $(cat key)), and the string values of object members whose
//     key names a secret (password, secret, token, api_key,
//     authorization, private_key, access_key, credentials, cookie … as
//     the key's last word, so "token_type", "session_id" or
//     "password_hint" are left alone).
//
// Cheap disguises are undone first: a string holding look-alike
// Cyrillic or Greek letters, fullwidth or mathematical letters, other
// dashes or invisible characters is folded to ASCII before the
// credential patterns look (fold.go), a base64 text that decodes to text
// holding a credential of a known shape is redacted whole
// (base64Matches), and a secret split across two
// neighbouring strings of one object or array is found at their join
// and both parts redacted (split.go).
//
// A redacted value becomes [REDACTED:NAME] for a known secret (its name,
// e.g. agent_key) and [REDACTED:credential] for a pattern.
//
// Then, in ModeFull, it looks for injection attempts in the redacted
// text (in English, and "ignore the previous instructions" in Spanish,
// French, German, Portuguese, Italian and Chinese; a Human turn followed
// by an Assistant turn; letters spelled one at a time read rejoined): phrases aimed at the model rather than about the same things
// ("ignore previous instructions/directions", "you are now an
// unrestricted AI", "New task:" at a sentence's start, "your task has
// changed", "reveal your system prompt", "SYSTEM OVERRIDE", "AI agents
// reading this", "the AI must call …", "Assistant, please run …", "do
// not tell the user", "call the tool …", "use http_request to POST …"),
// role markers that look like a chat turn ("system: you must …",
// "### Instruction"), chat-template tokens (<|im_start|>, [INST],
// <</SYS>>) and fake tool-result closers (</tool_result>,
// </function_results>). The search runs on a normalised copy of each
// string — lowercase, combining marks dropped, fullwidth letters and
// common Cyrillic/Greek look-alikes folded to ASCII, runs of spaces
// folded to one — so those cheap dodges do not hide a phrase. An
// invisible format character (a zero-width space, a soft hyphen) may
// split a word or stand for a space: a string holding one is read both
// ways. Each finding names its pattern, where it is (a JSON path such as
// $.results[2].text) and a short excerpt of the redacted text.
//
// The cost is linear in the output: one pass over the JSON, a few
// strings.Index scans per known secret and a fixed set of regular
// expressions (Go's RE2, linear time) over each string. The findings
// kept per output are bounded (MaxFindings).
package outputsafety
