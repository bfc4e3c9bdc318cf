package kernel

import "strings"

// resolveAliases rewrites /proc/<pid>/root/… (and its per-thread form
// /proc/<pid>/task/<tid>/root/…) to the path it names, repeatedly. It
// reports paths whose target the kernel cannot know: open file descriptors
// (/dev/fd/N, /dev/stdin, /proc/<pid>/fd/N), working directories
// (/proc/<pid>/cwd), executables and mapped files.
//
// p must be clean (path.Clean) and so is what follows an alias in it: it is
// cut off, not split, joined and cleaned again at every alias, which cost
// the square of the length of "/proc/1/root/proc/1/root/…".
func resolveAliases(p string) (string, string) {
	for {
		if !strings.HasPrefix(p, "/proc/") && !strings.HasPrefix(p, "/dev/") {
			return p, ""
		}
		// The first five segments, and the rest unsplit.
		segs := strings.SplitN(p[1:], "/", 6)
		switch {
		case segs[0] == "dev" && len(segs) >= 2:
			switch segs[1] {
			case "fd", "stdin", "stdout", "stderr":
				return p, "it refers to an open file descriptor, which could be any file"
			}
			return p, ""
		case segs[0] != "proc" || len(segs) < 3:
			return p, ""
		}
		i := 2 // the entry after /proc/<pid>
		if segs[2] == "task" && len(segs) >= 5 {
			i = 4 // /proc/<pid>/task/<tid>/<entry>
		}
		switch segs[i] {
		case "root":
			if len(segs) == i+1 {
				p = "/"
				continue
			}
			end := 0 // where segs[i] ends in p
			for _, s := range segs[:i+1] {
				end += 1 + len(s)
			}
			p = p[end:] // "/" and what follows the alias
			continue
		case "cwd":
			return p, "it refers to a process's working directory, which could be anywhere"
		case "fd", "map_files", "exe":
			return p, "it refers to a file a process holds open, which could be any file"
		}
		return p, ""
	}
}
