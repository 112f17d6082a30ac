package shell

import "strings"

// arityTable says how many leading words of a command line name "the same
// kind of command" for an "allow for this session" suggestion: the words
// kept are followed by " *". The longest matching prefix wins, so
// "npm run" (3: the script name matters) overrides "npm" (2).
//
// arityExact marks commands whose every argument matters: the suggestion
// is the exact line. Add entries here; docs/bash-rules.md lists the table.
var arityTable = map[string]int{
	// Version control and forges.
	"git": 2, "git stash": 3, "git remote": 3, "git submodule": 3, "git worktree": 3,
	"git config": 2, "hg": 2, "svn": 2,
	"gh": 3, "gh api": 2, "glab": 3,
	// JavaScript.
	"npm": 2, "npm run": 3, "npm run-script": 3, "npm exec": 3, "npx": 2,
	"pnpm": 2, "pnpm run": 3, "pnpm exec": 3, "pnpm dlx": 3,
	"yarn": 2, "yarn run": 3, "yarn dlx": 3, "yarn workspace": 4,
	"bun": 2, "bun run": 3, "bun x": 3, "bunx": 2, "deno": 2, "deno task": 3,
	"node": 1, "tsc": 1, "eslint": 1, "prettier": 1, "jest": 1, "vitest": 1,
	// Go, Rust, JVM, others.
	"go": 2, "go mod": 3, "go tool": 3, "gofmt": 1, "golangci-lint": 2,
	"cargo": 2, "rustup": 3, "rustc": 1,
	"mvn": 1, "gradle": 1, "./gradlew": 1, "./mvnw": 1,
	"dotnet": 2, "swift": 2, "mix": 2, "bundle": 2, "bundle exec": 3, "rake": 1, "rails": 2,
	"composer": 2, "php": 1,
	// Python.
	"python": 1, "python3": 1, "python -m": 3, "python3 -m": 3,
	"pip": 2, "pip3": 2, "uv": 2, "uv run": 3, "uv pip": 3, "uvx": 2,
	"poetry": 2, "poetry run": 3, "pytest": 1, "ruff": 2, "mypy": 1, "black": 1, "tox": 1,
	// Build tools.
	"make": 2, "cmake": 1, "ninja": 2, "bazel": 2, "just": 2, "task": 2,
	// Containers and clusters.
	"docker": 2, "docker compose": 2, "docker-compose": 2, "docker container": 3,
	"docker image": 3, "docker volume": 3, "docker network": 3, "docker buildx": 3,
	"podman": 2, "kubectl": 2, "kubectl config": 3, "helm": 2, "terraform": 2, "tofu": 2,
	"aws": 3, "gcloud": 3, "az": 3,
	// Read-only everyday tools: any arguments.
	"ls": 1, "cat": 1, "head": 1, "tail": 1, "wc": 1, "grep": 1, "rg": 1, "fd": 1,
	"tree": 1, "pwd": 1, "echo": 1, "printf": 1, "which": 1, "file": 1,
	"stat": 1, "diff": 1, "sort": 1, "uniq": 1, "jq": 1, "sed": 1, "awk": 1, "less": 1,
	"du": 1, "df": 1, "date": 1, "true": 1, "false": 1, "test": 1, "cd": 1,
	"mkdir": 1, "touch": 1,
	// Every argument matters.
	"rm": arityExact, "sudo": arityExact, "doas": arityExact, "su": arityExact,
	"dd": arityExact, "mkfs": arityExact, "chmod": arityExact, "chown": arityExact,
	"kill": arityExact, "pkill": arityExact, "killall": arityExact, "shutdown": arityExact,
	"reboot": arityExact, "curl": arityExact, "wget": arityExact, "ssh": arityExact,
	"scp": arityExact, "rsync": arityExact, "sh": arityExact, "bash": arityExact,
	"zsh": arityExact, "dash": arityExact, "eval": arityExact, "xargs": arityExact,
	"env": arityExact, "find": arityExact, "nice": arityExact, "timeout": arityExact,
	"mv": arityExact, "cp": arityExact, "ln": arityExact, "git push": arityExact,
	"git reset": arityExact, "git clean": arityExact,
}

// arityExact in arityTable means: suggest the exact line.
const arityExact = -1

// SuggestBashPattern proposes the bash-surface pattern a person's "allow
// for this session" should become for this command:
// `git checkout main` → `git checkout *`, `npm run dev` → `npm run dev`,
// `go test ./...` → `go test *`, `docker compose up -d` → `docker compose *`.
// Commands not in the table get their name plus " *" when the first
// argument is not a path, otherwise the exact line. An option among the
// words a pattern would keep makes the suggestion exact (`git -C /x push`
// must not become `git -C *`).
func SuggestBashPattern(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	// The suggestion is a pattern: a star or backslash in the command is
	// written escaped, or `rm -rf *.txt` would allow any rm -rf.
	exact := EscapeBashPattern(RenderArgv(argv))
	name := argv[0]
	if strings.HasPrefix(name, "/") {
		// The table is keyed by command names; /usr/bin/git is git.
		name = BaseName(name)
	}
	keep, matched := 0, 0
	for n := min(len(argv), 4); n >= 1; n-- {
		key := strings.Join(append([]string{name}, argv[1:n]...), " ")
		if k, ok := arityTable[key]; ok {
			keep, matched = k, n
			break
		}
	}
	found := matched > 0
	if !found {
		if len(argv) == 1 {
			return exact
		}
		if looksLikePath(argv[1]) {
			return exact
		}
		keep = 1
	}
	if keep == arityExact || len(argv) <= keep {
		return exact
	}
	for _, w := range argv[max(matched, 1):keep] {
		if strings.HasPrefix(w, "-") {
			return exact
		}
	}
	return EscapeBashPattern(RenderArgv(argv[:keep])) + " *"
}

func looksLikePath(s string) bool {
	return strings.ContainsRune(s, '/') || strings.HasPrefix(s, ".") || strings.HasPrefix(s, "~")
}

// EscapeBashPattern makes a command line a bash pattern that matches only
// itself: `*` and `\` are the pattern syntax's special characters.
func EscapeBashPattern(line string) string {
	if !strings.ContainsAny(line, `*\`) {
		return line
	}
	return strings.NewReplacer(`\`, `\\`, `*`, `\*`).Replace(line)
}
