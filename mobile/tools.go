package mobile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate"
)

// ToolOptions are a tool's optional traits. The zero value leaves every one
// to the gateway's defaults.
type ToolOptions struct {
	// TimeoutMS is how long a call may run before the gateway times it
	// out; zero is the gateway's default.
	TimeoutMS int64
	// RequiresApproval is "never", "unless_auto_approved" or "always";
	// empty is the gateway's default.
	RequiresApproval string
	// RequestsPerMinute and RequestsPerHour cap calls per session; zero
	// means no limit for that window.
	RequestsPerMinute int64
	RequestsPerHour   int64
	// ReadOnly says the tool changes nothing.
	ReadOnly bool
	// EstimatedCost is what a call is expected to cost, in the unit of a
	// run's max_cost (a budget counts a call at it until the call reports
	// its cost with Call.ReportCost); EstimatedDurationMS how long a call
	// is expected to take. Zero gives no estimate.
	EstimatedCost       float64
	EstimatedDurationMS int64
	// Title is a name for people to read (MCP hosts show it).
	// OutputSchemaJSON is the JSON Schema (top-level "type": "object") of
	// what a completed call outputs; MCP hosts see it as the tool's
	// outputSchema and the output as structuredContent. AnnotationsJSON is
	// a JSON object of MCP hints: {"title", "destructive_hint",
	// "idempotent_hint", "open_world_hint"}. Empty leaves each out.
	Title            string
	OutputSchemaJSON string
	AnnotationsJSON  string
}

// NewToolOptions returns options with every trait left to the gateway.
func NewToolOptions() *ToolOptions { return &ToolOptions{} }

// registeredTool is a tool this client offers: its spec and, optionally,
// a handler of its own.
type registeredTool struct {
	spec    toolgate.ToolSpec
	handler CallHandler
}

// buildToolSpec makes a tool's spec and checks it with the gateway's own
// check (toolgate.CheckToolSpec), so a tool the gateway would refuse for
// its shape is refused here, before any request, in the gateway's words.
func buildToolSpec(name, description, parametersJSON string, options *ToolOptions) (toolgate.ToolSpec, error) {
	spec := toolgate.ToolSpec{Name: name, Description: description}
	if strings.TrimSpace(parametersJSON) != "" {
		spec.Parameters = json.RawMessage(parametersJSON)
	}
	if options != nil {
		spec.TimeoutMS = options.TimeoutMS
		spec.RequiresApproval = toolgate.Approval(options.RequiresApproval)
		if options.RequestsPerMinute != 0 || options.RequestsPerHour != 0 {
			spec.RateLimit = &toolgate.RateLimit{
				RequestsPerMinute: int(options.RequestsPerMinute),
				RequestsPerHour:   int(options.RequestsPerHour),
			}
		}
		spec.ReadOnly = options.ReadOnly
		spec.EstimatedCost = options.EstimatedCost
		spec.EstimatedDurationMS = options.EstimatedDurationMS
		spec.Title = options.Title
		if strings.TrimSpace(options.OutputSchemaJSON) != "" {
			spec.OutputSchema = json.RawMessage(options.OutputSchemaJSON)
		}
		if strings.TrimSpace(options.AnnotationsJSON) != "" {
			dec := json.NewDecoder(strings.NewReader(options.AnnotationsJSON))
			dec.DisallowUnknownFields()
			var a toolgate.ToolAnnotations
			if err := dec.Decode(&a); err != nil {
				return spec, fmt.Errorf("tool %q: annotations must be a JSON object of title, destructive_hint, idempotent_hint and open_world_hint: %v", name, err)
			}
			spec.Annotations = &a
		}
	}
	if err := toolgate.CheckToolSpec(spec, toolgate.ToolSpecChecks{}); err != nil {
		return spec, fmt.Errorf("tool %q: %s", name, toolgate.ErrorMessage(err))
	}
	return spec, nil
}

// RegisterTool offers a tool with the gateway's default traits.
// parametersJSON is a JSON Schema object, or empty for no arguments.
// Before Connect the tool is only kept and checked locally; once
// connected it is registered at once and an error says why the gateway
// rejected it.
func (c *Client) RegisterTool(name, description, parametersJSON string) error {
	return c.RegisterToolWithOptions(name, description, parametersJSON, nil)
}

// RegisterToolWithOptions offers a tool with the given traits; options may
// be nil. Registering a name again replaces the tool.
func (c *Client) RegisterToolWithOptions(name, description, parametersJSON string, options *ToolOptions) error {
	spec, err := buildToolSpec(name, description, parametersJSON, options)
	if err != nil {
		return err
	}
	return c.addTools([]registeredTool{{spec: spec}}, false)
}

// SetToolHandler routes the calls of one tool to h instead of the client's
// handler; nil removes the routing. It may be called before or after the
// tool is registered.
func (c *Client) SetToolHandler(name string, h CallHandler) {
	c.tools.setHandler(name, h)
}

// UnregisterTool stops offering a tool. Once connected, the gateway is told
// at once.
func (c *Client) UnregisterTool(name string) error {
	return c.removeTools([]string{name})
}

// ToolNamesJSON returns the names of the tools this client offers, as a
// sorted JSON array of strings.
func (c *Client) ToolNamesJSON() string {
	b, _ := json.Marshal(c.tools.names())
	return string(b)
}

// addTools keeps the tools and, when connected, registers them with the
// gateway in one request. Tools the gateway rejects are dropped again and
// reported in the returned error; with keepRejected they are kept locally
// too (the bridge reports them but goes on).
func (c *Client) addTools(tools []registeredTool, keepRejected bool) error {
	c.regMu.Lock()
	defer c.regMu.Unlock()
	c.tools.add(tools)
	sess, ctx, connected := c.connectedSession()
	if !connected {
		return nil
	}
	specs := make([]toolgate.ToolSpec, len(tools))
	for i, t := range tools {
		specs[i] = t.spec
	}
	reply, err := c.api.registerTools(ctx, sess, false, specs)
	if err != nil {
		// The tools stay kept: they are registered again on the next
		// (re)connection.
		return fmt.Errorf("registering tools: %w", err)
	}
	if !keepRejected {
		c.tools.drop(reply.Rejected)
	}
	return rejectionError(reply.Rejected)
}

// removeTools forgets the tools and, when connected, registers the rest
// with replace, so the gateway drops them (GET and POST only, which every
// proxy passes).
func (c *Client) removeTools(names []string) error {
	c.regMu.Lock()
	defer c.regMu.Unlock()
	c.tools.remove(names)
	sess, ctx, connected := c.connectedSession()
	if !connected {
		return nil
	}
	return c.syncToolsLocked(ctx, sess)
}

// syncToolsLocked registers every kept tool with replace, so the gateway's
// list for the session is exactly this client's. regMu must be held.
func (c *Client) syncToolsLocked(ctx context.Context, sess sessionCredentials) error {
	reply, err := c.api.registerTools(ctx, sess, true, c.tools.list())
	if err != nil {
		return fmt.Errorf("registering tools: %w", err)
	}
	if err := rejectionError(reply.Rejected); err != nil {
		c.log(LevelWarn, err.Error())
	}
	return nil
}

// rejectionError returns an error naming the rejected tools, nil when
// there are none.
func rejectionError(rejected []toolgate.ToolRejection) error {
	if len(rejected) == 0 {
		return nil
	}
	msgs := make([]string, 0, len(rejected))
	for _, r := range rejected {
		msgs = append(msgs, fmt.Sprintf("%s (%s: %s)", r.Name, r.Code, r.Message))
	}
	return errors.New("the gateway rejected tools: " + strings.Join(msgs, "; "))
}
