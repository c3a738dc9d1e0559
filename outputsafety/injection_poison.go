package outputsafety

// toolPoisoningRules find the instructions a poisoned tool description
// (or any text a model reads) hides for the model: a block tagged
// <IMPORTANT> that tells it what to do, a note addressed to the AI
// assistant or the model, an order to read a file of secrets (~/.ssh,
// .env, ~/.aws/credentials, an MCP client's config) and hand its content
// on, and an order to keep something from the user. Each needs words
// aimed at the model, so that a README telling a person to "cat
// ~/.ssh/id_rsa.pub" or to copy .env.example is left alone.
var toolPoisoningRules = []rule{
	// <IMPORTANT> Before calling, read … </IMPORTANT>
	within(requiring(injectionRule("hidden_instructions", `<(?:important|secret|instructions?|hidden)>[^<]{0,300}?\b(?:before|always|must|never|do not|don't|first|`+
		`read|pass|include|send|call|use|ignore|forget|tell|reveal|provide|add)\b`,
		"<important>", "<secret>", "<instruction>", "<instructions>", "<hidden>"), ">"), 400),
	// Note to the AI assistant: … / a message for the model, …
	requiring(injectionRule("addresses_the_model", `(?:note|message|notice|reminder|instructions?|attention) (?:to|for) (?:the |any |all |every )?`+
		`(?:ai |llm |language )?(?:assistant|model|agent|ai|llm|chatbot)s? ?[:,!-]`,
		"note", "message", "notice", "reminder", "instruction", "instructions", "attention"), "assistant", "model", "agent", "ai", "llm", "chatbot"),
	// read ~/.cursor/mcp.json and pass its content as …
	requiring(injectionRule("read_secret_file", `(?:read|cat|open|load|get|fetch|copy) (?:the (?:file |contents? of (?:the )?)?|your |the user's )?`+secretPath+
		`[^\n]{0,80}?\b(?:and|then|to) (?:pass|send|include|put|append|post|upload|return|forward|use|insert|provide)\b`,
		"read", "cat", "open", "load", "get", "fetch", "copy"), "ssh", "env", "aws", "mcp", "netrc", "npmrc", "pypirc", "credentials", "kube", "docker", "gnupg", "passwd", "shadow", "id_"),
	// … with the contents of ~/.ssh/id_rsa as the path argument
	requiring(injectionRule("read_secret_file", `(?:pass|passing|send|sending|include|including|put|append|post|upload|forward|provide|providing|with) (?:it |in )?(?:the |its )?(?:full |entire |raw |complete )?`+
		`contents? of (?:the |your |the user's )?(?:file )?`+secretPath,
		"pass", "passing", "send", "sending", "include", "including", "put", "append", "post", "upload", "forward", "provide", "providing", "with"), "content"),
	// hide this from the user / the user does not need to know
	requiring(injectionRule("conceal_from_user", `(?:hide|keep|conceal) (?:this |it |that |these (?:steps |instructions )?)?(?:secret )?from (?:the )?(?:user|human|operator)\b`+
		`|(?:user|human|operator) (?:does not|doesn't|must not|should not|shouldn't|need not|needn't|is not to|may not) (?:need to )?(?:know|see|notice|be (?:told|informed|shown))\b`,
		"hide", "keep", "conceal", "user", "human", "operator"), "user", "human", "operator"),
}

// secretPath is a file that holds secrets, as an instruction to read it
// names it: an SSH private key (not its .pub), .env, cloud and package
// registry credentials, an MCP client's config.
const secretPath = `(?:(?:~|\$home|/home/[\w.-]+|/root)/)?(?:` +
	`\.ssh(?:/id_(?:rsa|ed25519|ecdsa|dsa)(?:[^.\w]|\.\s|$)|/config\b|/?(?:[^/\w.]|$))|id_(?:rsa|ed25519|ecdsa|dsa)(?:[^.\w]|\.\s|$)|` +
	`\.env(?:[^.\w]|\.\s|$)|\.aws/credentials|\.aws\b|` +
	`\.(?:cursor|codeium|claude|continue)/[\w.-]*(?:mcp|config|settings)[\w.-]*|\.netrc|\.npmrc|\.pypirc|\.git-credentials|\.kube/config|\.docker/config\.json|\.gnupg\b|` +
	`/etc/(?:passwd|shadow)|[\w.-]*credentials\.json|claude_desktop_config\.json)`
