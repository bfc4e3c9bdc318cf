// An MCP client on the official TypeScript SDK, as a desktop client would
// be: it launches `chio mcp serve` over stdio and drives one scenario,
// printing one JSON line per step on stdout for the Go test to check.
//
//   node ts-client.mjs CHIO_BINARY URL CAPABILITY_FILE KEY_FILE
//
// Steps: list; an allowed call; a denied call; a call that chio parks
// (printed with the approval id, so the test can approve it); chio_await
// on that approval, which returns once the test has approved.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [chio, url, cap, key] = process.argv.slice(2);
const out = (step, value) => console.log(JSON.stringify({ step, value }));

const transport = new StdioClientTransport({
  command: chio,
  args: ["mcp", "serve", "--url", url, "--capability", cap, "--key", key, "--pending-wait", "1s"],
  stderr: "inherit",
});
const client = new Client({ name: "chio-ts-test-client", version: "1.0.0" });
await client.connect(transport);

const { tools } = await client.listTools();
out("list", tools.map((t) => ({ name: t.name, inputSchema: t.inputSchema })).sort((a, b) => a.name.localeCompare(b.name)));

out("allow", await client.callTool({ name: "everything__echo", arguments: { message: "from typescript" } }));
out("deny", await client.callTool({ name: "everything__echo", arguments: { message: "/etc/shadow" } }));

let progress = 0;
const parked = await client.callTool(
  { name: "peer__transfer", arguments: { amount: 7, to: "carol" } },
  undefined,
  { onprogress: () => { progress++; } },
);
out("pending", { result: parked, progress });

const id = parked._meta["chio/approval_id"];
const awaited = await client.callTool(
  { name: "chio_await", arguments: { id, wait_seconds: 60 } },
  undefined,
  { timeout: 120000, resetTimeoutOnProgress: true },
);
out("await", awaited);
await client.close();
