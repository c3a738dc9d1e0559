package agentloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/toolgate/toolgate"
)

// OpenAIConfig points the provider at an OpenAI-compatible
// chat-completions endpoint: OpenAI, Ollama (http://localhost:11434/v1),
// vLLM, llama.cpp server, LM Studio.
type OpenAIConfig struct {
	BaseURL    string // e.g. https://api.openai.com/v1; the library's default when empty
	Model      string // required
	APIKey     string // empty for servers that need none
	MaxRetries int    // retries of a failed request (connection errors, 408, 429, 5xx); 2 when 0, none when negative
	HTTPClient *http.Client
}

// OpenAI is a Model speaking the chat-completions API through the official
// Go library (github.com/openai/openai-go).
type OpenAI struct {
	model  string
	client openai.Client
}

// NewOpenAI returns the provider; the model name is required.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("agentloop: a model name is required (--llm-model or TOOLGATE_LLM_MODEL)")
	}
	opts := []option.RequestOption{}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(strings.TrimRight(cfg.BaseURL, "/")+"/"))
	}
	// Servers such as Ollama ignore the key but some proxies insist on one.
	key := cfg.APIKey
	if key == "" {
		key = "none"
	}
	opts = append(opts, option.WithAPIKey(key))
	switch {
	case cfg.MaxRetries < 0:
		opts = append(opts, option.WithMaxRetries(0))
	case cfg.MaxRetries > 0:
		opts = append(opts, option.WithMaxRetries(cfg.MaxRetries))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &OpenAI{model: cfg.Model, client: openai.NewClient(opts...)}, nil
}

// Name implements Model.
func (p *OpenAI) Name() string { return p.model }

// Complete implements Model with one chat-completions request.
func (p *OpenAI) Complete(ctx context.Context, messages []toolgate.ChatMessage, tools []Definition) (toolgate.ChatMessage, error) {
	params := openai.ChatCompletionNewParams{Model: shared.ChatModel(p.model)}
	for _, m := range messages {
		params.Messages = append(params.Messages, toOpenAIMessage(m))
	}
	for _, d := range tools {
		var schema map[string]any
		if err := json.Unmarshal(d.Parameters, &schema); err != nil {
			return toolgate.ChatMessage{}, fmt.Errorf("tool %s: parameters: %w", d.Name, err)
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: d.Name, Description: openai.String(d.Description), Parameters: shared.FunctionParameters(schema),
		}))
	}
	resp, err := p.client.Chat.Completions.New(ctx, params)
	if err != nil {
		var apiErr *openai.Error
		if errors.As(err, &apiErr) {
			return toolgate.ChatMessage{}, toolgate.Errorf(toolgate.EInternal, "the model endpoint answered %d: %s", apiErr.StatusCode, apiErr.Message)
		}
		return toolgate.ChatMessage{}, fmt.Errorf("model request: %w", err)
	}
	if len(resp.Choices) == 0 {
		return toolgate.ChatMessage{}, errors.New("the model returned no choices")
	}
	got := resp.Choices[0].Message
	out := toolgate.ChatMessage{Role: toolgate.RoleAssistant, Content: got.Content}
	for _, tc := range got.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		out.ToolCalls = append(out.ToolCalls, toolgate.ChatToolCall{
			ID: tc.ID, Type: "function",
			Function: toolgate.ChatFunctionCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments},
		})
	}
	return out, nil
}

func toOpenAIMessage(m toolgate.ChatMessage) openai.ChatCompletionMessageParamUnion {
	switch m.Role {
	case toolgate.RoleSystem:
		return openai.SystemMessage(m.Content)
	case toolgate.RoleTool:
		return openai.ToolMessage(m.Content, m.ToolCallID)
	case toolgate.RoleAssistant:
		var a openai.ChatCompletionAssistantMessageParam
		if m.Content != "" || len(m.ToolCalls) == 0 {
			a.Content.OfString = openai.String(m.Content)
		}
		for _, tc := range m.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID:       tc.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Function.Name, Arguments: tc.Function.Arguments},
				},
			})
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}
	}
	return openai.UserMessage(m.Content)
}
