//go:build unix

package mcp

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/mcptest"
	"github.com/chiokernel/chio/policy"
)

// A stdio server started with npx gets the npm configuration npx needs to
// find and install its package (the registry, the cache), and none of the
// rest of chiod's npm_config_* environment: not the registry credentials
// it may hold, which the server has no use for (the reference server's
// get-env tool hands them to the agent that calls it), and not the settings
// by which npm runs a program of its choosing: script_shell (the shell npx
// runs the server's bin with), node_options (NODE_OPTIONS, e.g. --require
// of any script) or userconfig (another .npmrc, which may set either).
// chiod passed every npm_config_* variable on.
func TestStdioServerGetsOnlyTheNpmConfigNpxNeeds(t *testing.T) {
	mcptest.Require(t)
	npx, err := exec.LookPath("npx") // installed with node
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	ran := filepath.Join(tmp, "ran")
	shell := filepath.Join(tmp, "shell.sh")
	if err := os.WriteFile(shell, []byte("#!/bin/sh\necho script_shell >> "+ran+"\nexec /bin/sh \"$@\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	hook := filepath.Join(tmp, "hook.cjs")
	if err := os.WriteFile(hook, []byte(`require("fs").appendFileSync(`+"`"+ran+"`"+`, "node_options\n")`), 0o600); err != nil {
		t.Fatal(err)
	}
	npmrc := filepath.Join(tmp, "attacker.npmrc")
	if err := os.WriteFile(npmrc, []byte("script-shell="+shell+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(tmp, "npm-cache")
	const registry = "http://127.0.0.1:9/registry-npx-needs/"
	secrets := map[string]string{
		"npm_config__authToken":                         "tok-plain-0001",
		"npm_config_//registry.example.com/:_authToken": "tok-nerfdart-0002",
		"NPM_CONFIG__AUTH":                              "tok-basic-0003",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("npm_config_registry", registry)
	t.Setenv("npm_config_cache", cache)

	for _, tc := range []struct{ name, value string }{
		{"npm_config_script_shell", shell},
		{"npm_config_node_options", "--require " + hook},
		{"npm_config_userconfig", npmrc},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(tc.name, tc.value)
			os.Remove(ran)
			s := startSet(t, fastOptions(), policy.Server{ID: "npx",
				Command: []string{npx, "--offline", "--prefix", mcptest.Dir(), "mcp-server-everything", "stdio"}})
			res, err := dispatch(s, "req-env-"+tc.name, "npx", "get-env", `{}`)
			if err != nil || res.ToolError != "" {
				t.Fatalf("get-env = %s / %q / %v", res.Output, res.ToolError, err)
			}
			env := mustText(t, res.Output)
			for k, v := range secrets {
				if strings.Contains(env, v) {
					t.Errorf("the server got chiod's %s", k)
				}
			}
			if strings.Contains(env, tc.value) {
				t.Errorf("the server got chiod's %s=%s", tc.name, tc.value)
			}
			if b, err := os.ReadFile(ran); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("chiod's %s ran a program of its choosing: %q", tc.name, b)
			}
			if !strings.Contains(env, registry) || !strings.Contains(env, cache) {
				t.Errorf("the server lost the registry or cache npx needs:\n%s", env)
			}
		})
	}
}

// childEnv keeps the npm settings npx needs, as npm reads them ('-' or '_'
// between words), and drops every other one.
func TestChildEnvNpmConfig(t *testing.T) {
	keep := []string{"npm_config_registry=https://r.example/", "NPM_CONFIG_CACHE=/c",
		"npm_config_@acme:registry=https://npm.acme.example/", "npm_config_strict_ssl=true",
		"npm_config_https-proxy=http://proxy:3128", "npm_config_cafile=/etc/ssl/ca.pem", "npm_config_prefer_offline=true"}
	drop := []string{"npm_config__authToken=t", "npm_config_//r.example/:_authToken=t", "npm_config__auth=t",
		"npm_config__password=p", "npm_config_username=u", "npm_config_key=k", "npm_config_cert=c",
		"npm_config_script_shell=/x", "npm_config_node_options=--require=/x", "npm_config_userconfig=/x",
		"npm_config_globalconfig=/x", "npm_config_prefix=/x", "npm_config_shell=/x", "npm_config_editor=/x",
		"npm_config_node_gyp=/x", "npm_config_@acme:_authToken=t", "npm_config_registry_x=y"}
	got := strings.Join(childEnv(append(append([]string(nil), keep...), drop...)), " ")
	if want := strings.Join(keep, " "); got != want {
		t.Fatalf("env = %q\nwant  %q", got, want)
	}
}
