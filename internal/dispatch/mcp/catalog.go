package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/internal/schemaref"
	"github.com/chiokernel/chio/policy"
)

// Tool is one tool an upstream lists, as chio offers it: its schemas are
// the upstream's own, its inputSchema compiled for validation.
type Tool struct {
	Server       string
	Name         string
	Title        string
	Description  string
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage // nil when the tool declares none
	Annotations  *mcpsdk.ToolAnnotations
	schema       *jsonschema.Resolved
}

// ErrInvalidArguments is wrapped by Validate's errors (the policy's: a
// declared input_schema refuses with the same error).
var ErrInvalidArguments = policy.ErrInvalidArguments

// Validate checks arguments (a JSON object) against the tool's inputSchema.
func (t *Tool) Validate(args json.RawMessage) error {
	return policy.ValidateArguments(t.schema, args)
}

// catalog is one server's tool list at one moment. It is replaced whole,
// never modified, so readers need no lock.
type catalog struct {
	tools map[string]*Tool
	names []string // in the upstream's order
}

func (c *catalog) list() []*Tool {
	out := make([]*Tool, 0, len(c.names))
	for _, n := range c.names {
		out = append(out, c.tools[n])
	}
	return out
}

// listTools reads the whole tool list of cs. A list over MaxTools is
// refused whole; a tool that cannot be offered safely (bad name, a schema
// that is too large or does not compile) is left out and reported through
// skip, so it can be neither listed to agents nor called; so is every
// definition of a name listed more than once.
func listTools(ctx context.Context, cs *mcpsdk.ClientSession, server string, skip func(name string, err error)) (*catalog, error) {
	c := &catalog{tools: map[string]*Tool{}}
	probe := newAddProbe()
	// listed counts each name's definitions, valid or not: a name listed
	// twice is ambiguous (which schema and description hold is the
	// upstream's guess), so neither definition is offered.
	listed := map[string]int{}
	n := 0 // tools listed so far
	var params mcpsdk.ListToolsParams
	for page := 0; ; page++ {
		if page == MaxListPages {
			return nil, fmt.Errorf("tools/list has more than %d pages", MaxListPages)
		}
		res, err := cs.ListTools(ctx, &params)
		if err != nil {
			return nil, err
		}
		for _, t := range res.Tools {
			// Every tool listed counts, offered or not: the limit bounds
			// what one list makes chio compile and log.
			if n++; n > MaxTools {
				return nil, fmt.Errorf("the server lists more than %d tools", MaxTools)
			}
			if listed[t.Name]++; listed[t.Name] > 1 {
				if listed[t.Name] == 2 {
					skip(t.Name, errors.New("listed more than once; no definition of it is offered"))
				}
				continue
			}
			tool, err := compileTool(server, t)
			if err == nil {
				err = probe.check(tool)
			}
			if err != nil {
				skip(t.Name, err)
				continue
			}
			c.tools[tool.Name] = tool
			c.names = append(c.names, tool.Name)
		}
		if res.NextCursor == "" {
			c.dropListedTwice(listed)
			return c, nil
		}
		params.Cursor = res.NextCursor
	}
}

// dropListedTwice removes every tool whose name was listed more than once
// (a later page may repeat a name an earlier one offered).
func (c *catalog) dropListedTwice(listed map[string]int) {
	names := c.names[:0]
	for _, n := range c.names {
		if listed[n] > 1 {
			delete(c.tools, n)
			continue
		}
		names = append(names, n)
	}
	c.names = names
}

func compileTool(server string, t *mcpsdk.Tool) (*Tool, error) {
	if err := checkToolName(t.Name); err != nil {
		return nil, err
	}
	in, err := json.Marshal(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("inputSchema: %w", err)
	}
	if len(in) > MaxSchemaBytes {
		return nil, fmt.Errorf("inputSchema is %d bytes; the limit is %d", len(in), MaxSchemaBytes)
	}
	// jsonschema.Schema's decoding matches member names case-insensitively
	// ({"Type":"object"} would read as type object); MCP, and the SDK's
	// Server.AddTool that offers the tool to agents, read "type" exactly.
	var top map[string]json.RawMessage
	if err := json.Unmarshal(in, &top); err != nil || string(top["type"]) != `"object"` {
		return nil, errors.New(`inputSchema must be a JSON object with "type": "object"`)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(in, &s); err != nil {
		return nil, fmt.Errorf("inputSchema: %w", err)
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("inputSchema must have type \"object\", not %q", s.Type)
	}
	// No loader: a schema that refers to a remote document is refused, so
	// validation never fetches anything an upstream names.
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("inputSchema does not compile: %w", err)
	}
	// jsonschema-go would follow a loop of references until the stack
	// overflows, which ends chiod at the tool's first call, and would
	// spend 2^depth steps on a schema that applies a recursive subschema
	// twice per level of the arguments.
	if err := schemaref.Check(in); err != nil {
		return nil, fmt.Errorf("inputSchema cannot be used: %w", err)
	}
	tool := &Tool{Server: server, Name: t.Name, Title: clip(t.Title, MaxNameBytes),
		Description: clip(t.Description, MaxDescriptionBytes), InputSchema: in, Annotations: t.Annotations, schema: rs}
	if t.OutputSchema != nil {
		out, err := json.Marshal(t.OutputSchema)
		if err != nil || len(out) > MaxSchemaBytes {
			return nil, errors.New("outputSchema is not valid JSON or is too large")
		}
		tool.OutputSchema = out
	}
	return tool, nil
}

// addProbe offers each compiled tool to a scratch go-sdk server, exactly as
// the gateway will offer it to agents. Server.AddTool panics on a schema it
// refuses (an inputSchema whose "type" is not exactly "object", invalid
// x-mcp-header annotations, …); a tool it would refuse is left out of the
// catalogue here, so that it is never offered, validated against or called,
// and an upstream's list can never make the gateway panic.
type addProbe struct{ srv *mcpsdk.Server }

func newAddProbe() *addProbe {
	return &addProbe{srv: mcpsdk.NewServer(&mcpsdk.Implementation{Name: "chio-probe", Version: "1"},
		&mcpsdk.ServerOptions{Logger: slog.New(slog.DiscardHandler)})}
}

func (p *addProbe) check(t *Tool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the MCP SDK refuses this tool: %v", r)
		}
	}()
	st := &mcpsdk.Tool{Name: t.Name, InputSchema: t.InputSchema}
	if t.OutputSchema != nil {
		st.OutputSchema = t.OutputSchema
	}
	p.srv.AddTool(st, func(context.Context, *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
		return nil, errors.New("probe")
	})
	p.srv.RemoveTools(t.Name)
	return nil
}

// MaxNameBytes bounds a tool's title.
const MaxNameBytes = 256

// checkToolName admits MCP's tool name alphabet. Grants match tool names
// with path.Match, so a name with glob characters could not be granted
// exactly; MCP does not allow them anyway.
func checkToolName(n string) error {
	if n == "" || len(n) > MaxToolNameLen {
		return fmt.Errorf("tool name must be 1..%d characters", MaxToolNameLen)
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Errorf("tool name %q has characters outside [A-Za-z0-9_.-]", n)
		}
	}
	return nil
}

// clip cuts s to at most n bytes at a rune boundary.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
