package cli

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

func init() {
	register("completion SHELL", "print a completion script for bash, zsh or fish (e.g. source <(chio completion bash))", runCompletion)
}

func runCompletion(e *Env, args []string) int {
	fs := newFlags(e, "completion")
	pos, err := parse(fs, args)
	if err != nil {
		return ExitUsage
	}
	if err := wantArgs("completion", pos, 1); err != nil {
		return fail(e, err)
	}
	t := completionTree()
	switch pos[0] {
	case "bash":
		fmt.Fprint(e.Stdout, "# chio completion for bash: source <(chio completion bash)\n"+bashCompletion(t))
	case "zsh":
		// zsh runs the bash function through bashcompinit.
		fmt.Fprint(e.Stdout, "#compdef chio\n# chio completion for zsh: source <(chio completion zsh)\n"+
			"autoload -U +X bashcompinit && bashcompinit\n"+bashCompletion(t))
	case "fish":
		fmt.Fprint(e.Stdout, fishCompletion(t))
	default:
		return fail(e, usageErr("completion", "unknown shell %q: bash, zsh or fish", pos[0]))
	}
	return ExitOK
}

// tree is what completion offers: after each command prefix ("" at the
// start), the next words; for each command, its flags.
type tree struct {
	prefixes []string            // "" and every group and command, sorted
	next     map[string][]string // prefix → next words
	flags    map[string][]string // command → --flags
	summary  map[string]string   // prefix + " " + word → summary (commands only)
}

func completionTree() *tree {
	t := &tree{next: map[string][]string{}, flags: map[string][]string{}, summary: map[string]string{}}
	seen := map[string]bool{"": true}
	for name, c := range commands {
		words := strings.Fields(name)
		for i := range words {
			prefix, full := strings.Join(words[:i], " "), strings.Join(words[:i+1], " ")
			if !seen[full] {
				seen[full] = true
				t.next[prefix] = append(t.next[prefix], words[i])
			}
		}
		t.summary[name] = c.summary
		t.flags[name] = commandFlags(c)
	}
	for p := range seen {
		t.prefixes = append(t.prefixes, p)
		sort.Strings(t.next[p])
	}
	sort.Strings(t.prefixes)
	t.next["completion"] = []string{"bash", "fish", "zsh"}
	return t
}

// commandFlags asks the command itself for its flags: run with --help
// into nothing, it builds its flag set and stops.
func commandFlags(c command) []string {
	if c.name == "completion" {
		return nil
	}
	e := &Env{Stdout: io.Discard, Stderr: io.Discard, Stdin: strings.NewReader(""), Getenv: func(string) string { return "" }}
	c.run(e, []string{"--help"})
	var out []string
	if e.flags != nil {
		e.flags.VisitAll(func(f *flag.Flag) { out = append(out, "--"+f.Name) })
	}
	return out
}

// word lists for shell scripts: the words are ours (lowercase, dashes).
func words(ws []string) string { return strings.Join(ws, " ") }

func bashCompletion(t *tree) string {
	var b strings.Builder
	b.WriteString(`_chio_next() {
  case "$1" in
`)
	for _, p := range t.prefixes {
		if len(t.next[p]) > 0 {
			fmt.Fprintf(&b, "    %q) echo %q ;;\n", p, words(t.next[p]))
		}
	}
	b.WriteString(`  esac
}
_chio_flags() {
  case "$1" in
`)
	for _, p := range t.prefixes {
		if fl, ok := t.flags[p]; ok {
			fmt.Fprintf(&b, "    %q) echo %q ;;\n", p, words(fl))
		}
	}
	b.WriteString(`    *) echo "--url --output --help" ;;
  esac
}
_chio() {
  local cur="${COMP_WORDS[COMP_CWORD]}" cmd="" w i
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="${COMP_WORDS[i]}"
    case "$w" in
      --url|--output|-url|-output) ((i++)); continue ;;
      -*) continue ;;
    esac
    case " $(_chio_next "$cmd") " in
      *" $w "*) cmd="${cmd:+$cmd }$w" ;;
      *) [[ -n "$(_chio_next "$cmd")" ]] && return 0; break ;; # not a command: nothing to offer
    esac
  done
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$(_chio_flags "$cmd")" -- "$cur"))
  else
    COMPREPLY=($(compgen -W "$(_chio_next "$cmd")" -- "$cur"))
  fi
}
complete -o default -F _chio chio
`)
	return b.String()
}

func fishCompletion(t *tree) string {
	var b strings.Builder
	b.WriteString(`# chio completion for fish: chio completion fish | source
function __chio_cmd
    set -l words (commandline -opc)
    set -e words[1]
    set -l path
    set -l skip 0
    for w in $words
        if test $skip = 1
            set skip 0
            continue
        end
        switch $w
            case --url --output -url -output
                set skip 1
                continue
            case '-*'
                continue
        end
        set -l cand (string join ' ' $path $w)
        if contains -- $cand $__chio_prefixes
            set path $path $w
        else if test -z "$path"; or contains -- "$path" $__chio_groups
            echo '?' # not a command: nothing to offer
            return
        else
            break
        end
    end
    string join ' ' $path
end
function __chio_at
    set -l c (__chio_cmd)
    test "$c" = "$argv[1]"
end
complete -c chio -f
`)
	var ps []string
	for _, p := range t.prefixes {
		if p != "" {
			ps = append(ps, fmt.Sprintf("'%s'", p))
		}
	}
	fmt.Fprintf(&b, "set -g __chio_prefixes %s\n", strings.Join(ps, " "))
	var gs []string
	for _, p := range t.prefixes {
		if _, isCmd := t.flags[p]; p != "" && !isCmd {
			gs = append(gs, fmt.Sprintf("'%s'", p))
		}
	}
	fmt.Fprintf(&b, "set -g __chio_groups %s\n", strings.Join(gs, " "))
	for _, p := range t.prefixes {
		for _, w := range t.next[p] {
			full := strings.TrimSpace(p + " " + w)
			desc := t.summary[full]
			if desc == "" {
				desc = w + " commands"
			}
			fmt.Fprintf(&b, "complete -c chio -n '__chio_at %s' -a %s -d %s\n", fishQuote(p), w, fishQuote(clip(desc, 70)))
		}
	}
	for _, p := range t.prefixes {
		for _, f := range t.flags[p] {
			fmt.Fprintf(&b, "complete -c chio -n '__chio_at %s' -l %s\n", fishQuote(p), strings.TrimPrefix(f, "--"))
		}
	}
	return b.String()
}

// fishQuote quotes s for fish inside a single-quoted condition or as an
// argument: double quotes, with fish's escapes.
func fishQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`, `'`, `\'`)
	return `"` + r.Replace(s) + `"`
}
