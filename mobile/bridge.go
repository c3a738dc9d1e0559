package mobile

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Provider is an external tool provider: another app on the device that
// offers read-only tools through the CETP v1 calls. Each method answers the
// CETP envelope as a JSON string; an error return means the provider could
// not be reached (the app is not running, the IPC failed).
// GetProviderInfo is optional in CETP: a provider without it answers "" or
// an error envelope with TOOL_NOT_FOUND.
type Provider interface {
	ListTools() (string, error)
	ExecuteTool(toolName, argsJSON, requestID string) (string, error)
	GetProviderInfo() (string, error)
}

// Bridge turns providers into tools of a Client: each provider's tools are
// registered read-only as "{label}__{tool}", and their calls are routed back
// to the provider. Providers may be added, refreshed and removed at any
// time (an app installed, updated or removed).
type Bridge struct {
	client *Client

	mu        sync.Mutex
	providers map[string]*bridgedProvider
}

// bridgedProvider is one provider as the bridge holds it.
type bridgedProvider struct {
	label    string
	provider Provider
	infoJSON string
	tools    map[string]string // prefixed name -> the provider's name
}

// NewBridge returns a bridge that registers its providers' tools with
// client. Add the providers before the client's Connect when the app
// starts, so calls still open from before a restart find their tools.
func NewBridge(client *Client) *Bridge {
	return &Bridge{client: client, providers: map[string]*bridgedProvider{}}
}

var labelUnsafe = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// ProviderLabel turns a name (an Android package name, an app label) into a
// label usable as a tool-name prefix: characters other than letters,
// digits, "_" and "-" become "_".
func ProviderLabel(name string) string {
	return strings.Trim(labelUnsafe.ReplaceAllString(name, "_"), "_")
}

// AddProvider lists the provider's tools and registers them as
// "{label}__{tool}". protocolVersion is the CETP version the provider
// declares; a provider of another version is left out, with a logged
// reason and an error. Adding a label again refreshes it: new tools are
// registered, tools it no longer lists are removed. A tool that cannot be
// offered (its name too long once prefixed, a bad schema) is left out and
// logged; the returned error names it, and the provider's other tools stay.
func (b *Bridge) AddProvider(label, protocolVersion string, p Provider) error {
	if label == "" || ProviderLabel(label) != label {
		return fmt.Errorf("provider label %q must be letters, digits, _ and - only (see ProviderLabel)", label)
	}
	if v := strings.TrimSpace(protocolVersion); v != CETPVersion {
		msg := fmt.Sprintf("skipping provider %s: it speaks CETP version %q, this bridge only version %s", label, protocolVersion, CETPVersion)
		b.client.log(LevelWarn, msg)
		return fmt.Errorf("%s", msg)
	}
	if p == nil {
		return fmt.Errorf("provider %s is nil", label)
	}
	listReply, err := p.ListTools()
	if err != nil {
		b.client.log(LevelWarn, fmt.Sprintf("provider %s: list_tools failed: %v", label, err))
		return fmt.Errorf("provider %s: list_tools: %w", label, err)
	}
	listed, err := parseToolList(listReply)
	if err != nil {
		b.client.log(LevelWarn, fmt.Sprintf("provider %s: list_tools: %v", label, err))
		return fmt.Errorf("provider %s: list_tools: %w", label, err)
	}
	bp := &bridgedProvider{label: label, provider: p, infoJSON: providerInfo(p), tools: map[string]string{}}
	var tools []registeredTool
	var problems []string
	for _, t := range listed {
		name := label + "__" + t.Name
		spec, err := buildToolSpec(name, t.Description, string(t.Parameters), &ToolOptions{ReadOnly: true})
		if err != nil {
			b.client.log(LevelWarn, fmt.Sprintf("provider %s: skipping tool %q: %v", label, t.Name, err))
			problems = append(problems, err.Error())
			continue
		}
		bp.tools[name] = t.Name
		tools = append(tools, registeredTool{spec: spec, handler: &bridgeToolHandler{bridge: b, label: label, tool: t.Name}})
	}

	b.mu.Lock()
	old := b.providers[label]
	b.providers[label] = bp
	b.mu.Unlock()
	var gone []string
	if old != nil {
		for name := range old.tools {
			if _, kept := bp.tools[name]; !kept {
				gone = append(gone, name)
			}
		}
	}
	if len(gone) > 0 {
		if err := b.client.removeTools(gone); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(tools) > 0 {
		if err := b.client.addTools(tools, false); err != nil {
			problems = append(problems, err.Error())
		}
	}
	b.client.log(LevelInfo, fmt.Sprintf("provider %s: %d tool(s) bridged", label, len(tools)))
	if len(problems) > 0 {
		return fmt.Errorf("provider %s: %s", label, strings.Join(problems, "; "))
	}
	return nil
}

// providerInfo asks for get_provider_info; it is optional, so any failure
// is no info.
func providerInfo(p Provider) string {
	reply, err := p.GetProviderInfo()
	if err != nil || reply == "" {
		return ""
	}
	data, te := parseEnvelope(reply)
	if te != nil {
		return ""
	}
	return string(data)
}

// RemoveProvider unregisters a provider's tools (its app was removed).
func (b *Bridge) RemoveProvider(label string) error {
	b.mu.Lock()
	bp := b.providers[label]
	delete(b.providers, label)
	b.mu.Unlock()
	if bp == nil {
		return fmt.Errorf("no provider %s", label)
	}
	names := make([]string, 0, len(bp.tools))
	for name := range bp.tools {
		names = append(names, name)
	}
	b.client.log(LevelInfo, fmt.Sprintf("provider %s removed with %d tool(s)", label, len(names)))
	return b.client.removeTools(names)
}

// ProviderLabelsJSON returns the labels of the bridged providers as a
// sorted JSON array.
func (b *Bridge) ProviderLabelsJSON() string {
	b.mu.Lock()
	labels := make([]string, 0, len(b.providers))
	for label := range b.providers {
		labels = append(labels, label)
	}
	b.mu.Unlock()
	sort.Strings(labels)
	out, _ := json.Marshal(labels)
	return string(out)
}

// ProviderInfoJSON returns what get_provider_info answered for a provider
// (its data), or "" when it offers none or is not bridged.
func (b *Bridge) ProviderInfoJSON(label string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if bp := b.providers[label]; bp != nil {
		return bp.infoJSON
	}
	return ""
}

// bridgeToolHandler routes calls of one bridged tool to its provider.
type bridgeToolHandler struct {
	bridge *Bridge
	label  string
	tool   string
}

// HandleCall calls execute_tool with the call id as the request id and
// maps the envelope to the answer.
func (h *bridgeToolHandler) HandleCall(call *Call) (string, error) {
	h.bridge.mu.Lock()
	bp := h.bridge.providers[h.label]
	h.bridge.mu.Unlock()
	if bp == nil {
		return "", &ToolError{Code: CodeToolNotFound, Message: fmt.Sprintf("provider %s is no longer available", h.label)}
	}
	reply, err := bp.provider.ExecuteTool(h.tool, call.ArgsJSON(), call.ID())
	if err != nil {
		return "", &ToolError{Code: CodeInternalError, Message: fmt.Sprintf("provider %s could not be reached: %v", h.label, err)}
	}
	data, te := parseEnvelope(reply)
	if te != nil {
		return "", te
	}
	return string(data), nil
}
