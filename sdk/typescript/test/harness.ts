// A real chiod for the tests.
//
// The binaries come from CHIO_BIN_DIR (CI builds them once with
// `go build -o DIR ./cmd/chiod ./cmd/chio`) or are built here into a
// temporary directory. chiod listens on a free loopback port (-listen
// 127.0.0.1:0; the address is read from its log), keeps its data in a
// temporary directory and runs testdata/sdk/policy.toml. CHIO_ADMIN_TOKEN is
// not set, so chiod writes <data_dir>/admin.token; agents get keys from
// `chio keygen` and capabilities from `chio capability issue` with that
// token, as an operator would. One chiod serves a test file; call
// stopChiod() from an after() hook.

import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

import { ChioClient, type ApprovalRequest } from "@chio-protocol/sdk";

import { ROOT } from "./paths.js";

export const POLICY = join(ROOT, "testdata", "sdk", "policy.toml");
export const FINANCE_LEAD_KEY = join(ROOT, "examples", "keys", "finance-lead.pem");

export interface Agent {
  keyFile: string;
  capabilityFile: string;
  publicKey: string;
  /** The environment ChioClient.fromEnv reads. */
  env: Record<string, string>;
}

export interface Run {
  stdout: string;
  stderr: string;
  code: number;
}

export function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env, cwd = ROOT): Promise<Run> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env, cwd, timeout: 120_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
      resolve({ stdout, stderr, code });
    });
  });
}

export class Chiod {
  readonly tmp = mkdtempSync(join(tmpdir(), "chio-ts-sdk-"));
  readonly dataDir = join(this.tmp, "data");
  binDir = process.env["CHIO_BIN_DIR"] ?? "";
  url = "";
  adminToken = "";
  log: string[] = [];
  #proc: ChildProcess | undefined;
  #agents = 0;

  async start(): Promise<this> {
    if (!this.binDir) {
      this.binDir = join(this.tmp, "bin");
      mkdirSync(this.binDir); // go build -o writes several binaries only into a directory that exists
      const b = await run("go", ["build", "-o", this.binDir, "./cmd/chiod", "./cmd/chio"]);
      if (b.code !== 0) throw new Error(`go build: ${b.stderr}`);
    }
    const env = { ...process.env };
    delete env["CHIO_ADMIN_TOKEN"];
    delete env["CHIO_READ_TOKEN"];
    const listen = this.url ? this.url.replace("http://", "") : "127.0.0.1:0";
    const proc = spawn(join(this.binDir, "chiod"), ["-config", POLICY, "-listen", listen, "-data-dir", this.dataDir], {
      env,
      stdio: ["ignore", "ignore", "pipe"],
    });
    this.#proc = proc;
    this.url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("chiod did not start:\n" + this.log.join("\n"))), 30_000);
      proc.on("exit", () => reject(new Error("chiod exited:\n" + this.log.join("\n"))));
      createInterface({ input: proc.stderr! }).on("line", (line) => {
        this.log.push(line);
        const m = /"chiod serving" addr=(\S+)/.exec(line);
        if (m) {
          clearTimeout(timer);
          resolve("http://" + m[1]);
        }
      });
    });
    this.adminToken = readFileSync(join(this.dataDir, "admin.token"), "utf8").trim();
    return this;
  }

  /** SIGINT, as an operator would; the data stays. */
  async stop(): Promise<void> {
    const p = this.#proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise((r) => p.once("exit", r));
    p.kill("SIGINT");
    const t = setTimeout(() => p.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(t);
  }

  async close(): Promise<void> {
    await this.stop();
    rmSync(this.tmp, { recursive: true, force: true });
  }

  /** Run the real CLI as the operator; throws unless it exits 0. */
  async chio(...args: string[]): Promise<Run> {
    const r = await run(join(this.binDir, "chio"), args, { ...process.env, CHIO_URL: this.url, CHIO_ADMIN_TOKEN: this.adminToken });
    if (r.code !== 0) throw new Error(`chio ${args.join(" ")}: exit ${r.code}\n${r.stdout}\n${r.stderr}`);
    return r;
  }

  /** A fresh agent key (`chio keygen`) and a capability for grants. */
  async newAgent(...grants: string[]): Promise<Agent> {
    const dir = join(this.tmp, `agent${++this.#agents}`);
    mkdirSync(dir);
    const keyFile = join(dir, "agent.pem");
    const capabilityFile = join(dir, "agent.cap");
    const publicKey = (await this.chio("keygen", "--out", keyFile)).stdout.trim().split(/\s+/).pop()!;
    if (!publicKey.startsWith("ed25519:")) throw new Error(`chio keygen printed ${publicKey}`);
    await this.chio("capability", "issue", "--subject", publicKey, "--ttl", "1h", "--out", capabilityFile, ...grants.flatMap((g) => ["--grant", g]));
    return { keyFile, capabilityFile, publicKey, env: { CHIO_URL: this.url, CHIO_KEY: keyFile, CHIO_CAPABILITY: capabilityFile } };
  }

  /** The Finance Lead approves with the real CLI. */
  approve(approvalId: string, ...extra: string[]): Promise<Run> {
    return this.chio("approval", "approve", approvalId, "--key", FINANCE_LEAD_KEY, ...extra);
  }

  /** The approval request chiod parked for agent, as a polling channel (GET /approvals/pending with a reader token) sees it. */
  async nextRequest(agent: Agent): Promise<ApprovalRequest> {
    const reader = new ChioClient({ url: this.url, bearer: this.adminToken });
    for (;;) {
      const req = (await reader.pending()).find((r) => r.subject_id === agent.publicKey);
      if (req) return req;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

let shared: Promise<Chiod> | undefined;

/** The test file's chiod, started on first use. */
export function chiod(): Promise<Chiod> {
  shared ??= new Chiod().start();
  return shared;
}

export async function stopChiod(): Promise<void> {
  if (shared) await (await shared).close();
}

/** Set environment variables for the duration of f. */
export async function withEnv<T>(values: Record<string, string>, f: () => Promise<T>): Promise<T> {
  const old = Object.fromEntries(Object.keys(values).map((k) => [k, process.env[k]]));
  Object.assign(process.env, values);
  try {
    return await f();
  } finally {
    for (const [k, v] of Object.entries(old)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}
