// A stdio MCP server for chio's upstream tests, built on the official
// TypeScript SDK. It does what the reference server will not do on demand:
// answers with members MCP does not define (chio must record results byte
// for byte), asks the client for elicitation and sampling whether or not it
// advertised them (chio must refuse), changes its tool list, echoes the
// request's _meta, exits mid-call, and never answers.
import { appendFileSync } from "node:fs";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import {
  CallToolRequestSchema,
  CreateMessageResultSchema,
  ElicitResultSchema,
  ListToolsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const server = new Server(
  { name: "chio-test-peer", version: "1.0.0" },
  { capabilities: { tools: { listChanged: true } } },
);

const object = { type: "object", properties: {} };
let grown = false;

function tools() {
  const list = [
    { name: "raw", description: "a result with members MCP does not define", inputSchema: object },
    { name: "meta", description: "returns the request's _meta as text", inputSchema: object },
    { name: "elicit", description: "asks the client to elicit input", inputSchema: object },
    { name: "sample", description: "asks the client to sample a model", inputSchema: object },
    { name: "grow", description: "adds the tool 'added' and announces list_changed", inputSchema: object },
    { name: "die", description: "exits while the call is in flight", inputSchema: object },
    {
      name: "hang",
      description: "never answers (a stuck tool); first appends a line to the file arguments.mark names",
      inputSchema: { type: "object", properties: { mark: { type: "string" } } },
    },
    {
      name: "transfer",
      description: "moves money (nothing happens)",
      inputSchema: {
        type: "object",
        properties: { amount: { type: "integer", minimum: 1 }, to: { type: "string" } },
        required: ["amount", "to"],
        additionalProperties: false,
      },
    },
    {
      // Applies itself twice at each level of the arguments: validating
      // arguments nested n deep costs 2^n, so chio must not catalogue it.
      name: "nest",
      description: "a schema whose validation cost doubles with each level of nesting",
      inputSchema: { type: "object", properties: { a: { allOf: [{ $ref: "#" }, { $ref: "#" }] } } },
    },
  ];
  if (grown) list.push({ name: "added", description: "appeared after grow", inputSchema: object });
  return list;
}

const text = (t, isError = false) => ({ content: [{ type: "text", text: t }], isError });

server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: tools() }));

server.setRequestHandler(CallToolRequestSchema, async (req) => {
  const { name, arguments: args, _meta } = req.params;
  switch (name) {
    case "raw":
      return { content: [{ type: "text", text: "raw" }], zExtra: { b: 1, a: [true, null] }, _meta: { "x/y": "z" } };
    case "meta":
      return text(JSON.stringify(_meta ?? null));
    case "elicit":
      try {
        const r = await server.request(
          { method: "elicitation/create", params: { message: "Approve the transfer?", requestedSchema: { type: "object", properties: { ok: { type: "boolean" } } } } },
          ElicitResultSchema,
        );
        return text("elicitation answered: " + JSON.stringify(r));
      } catch (e) {
        return text("elicitation refused: " + e.message, true);
      }
    case "sample":
      try {
        const r = await server.request(
          { method: "sampling/createMessage", params: { messages: [{ role: "user", content: { type: "text", text: "say yes" } }], maxTokens: 5 } },
          CreateMessageResultSchema,
        );
        return text("sampling answered: " + JSON.stringify(r));
      } catch (e) {
        return text("sampling refused: " + e.message, true);
      }
    case "grow":
      grown = true;
      await server.sendToolListChanged();
      return text("grown");
    case "die":
      setTimeout(() => process.exit(3), 50);
      return new Promise(() => {});
    case "hang":
      if (args && typeof args.mark === "string") appendFileSync(args.mark, "called\n");
      return new Promise(() => {});
    case "transfer":
      return text(`transferred ${args.amount} to ${args.to}`);
    case "added":
      return text("added works");
    default:
      throw new Error(`unknown tool ${name}`);
  }
});

await server.connect(new StdioServerTransport());
