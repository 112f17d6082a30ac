package shell

import "slices"

// What a git command line may do besides what its subcommand says: git
// autocorrects a subcommand it does not know to the nearest of its own
// commands and runs that in-process (help.autocorrect, which the command
// line cannot show: it may come from any configuration file or the
// environment), and its push plumbing (send-pack, http-push) pushes
// without the word push. Both give possible readings: `git pusx origin`
// may be `git push origin`, `git send-pack ../r.git main` is read as
// `git push ../r.git main` too, so a `git push *` rule that is stricter
// holds (docs/bash-rules.md §9).

// gitCommands are git's own commands: builtins and the programs of
// git-core (`git --list-cmds=main,others,nohelpers` of git 2.39, and the
// commands added since), the candidates git's autocorrection chooses
// among besides aliases and git-* programs found in PATH.
var gitCommands = wordSet(
	"add", "am", "annotate", "apply", "archimport", "archive", "backfill", "bisect", "blame", "branch",
	"bugreport", "bundle", "cat-file", "check-attr", "check-ignore", "check-mailmap",
	"check-ref-format", "checkout", "checkout-index", "cherry", "cherry-pick", "citool", "clean",
	"clone", "column", "commit", "commit-graph", "commit-tree", "config", "count-objects",
	"credential", "credential-cache", "credential-store", "cvsexportcommit", "cvsimport",
	"cvsserver", "daemon", "describe", "diagnose", "diff", "diff-files", "diff-index", "diff-pairs",
	"diff-tree", "difftool", "fast-export", "fast-import", "fetch", "fetch-pack", "filter-branch",
	"fmt-merge-msg", "for-each-ref", "for-each-repo", "format-patch", "fsck", "fsck-objects",
	"fsmonitor--daemon", "gc", "get-tar-commit-id", "gitk", "gitweb", "grep", "gui", "hash-object",
	"help", "hook", "http-backend", "http-fetch", "http-push", "imap-send", "index-pack", "init",
	"init-db", "instaweb", "interpret-trailers", "last-modified", "log", "ls-files", "ls-remote", "ls-tree",
	"mailinfo", "mailsplit", "maintenance", "merge", "merge-base", "merge-file", "merge-index",
	"merge-octopus", "merge-one-file", "merge-ours", "merge-recursive", "merge-recursive-ours",
	"merge-recursive-theirs", "merge-resolve", "merge-subtree", "merge-tree", "mergetool", "mktag",
	"mktree", "multi-pack-index", "mv", "name-rev", "notes", "p4", "pack-objects", "pack-redundant",
	"pack-refs", "patch-id", "pickaxe", "prune", "prune-packed", "pull", "push", "quiltimport",
	"range-diff", "read-tree", "rebase", "receive-pack", "reflog", "refs", "remote", "remote-ext",
	"remote-fd", "remote-ftp", "remote-ftps", "remote-http", "remote-https", "repack", "replace",
	"replay", "repo", "request-pull", "rerere", "reset", "restore", "rev-list", "rev-parse", "revert", "rm",
	"scalar", "send-email", "send-pack", "shell", "shortlog", "show", "show-branch", "show-index",
	"show-ref", "sparse-checkout", "stage", "stash", "status", "stripspace", "submodule", "subtree",
	"svn", "switch", "symbolic-ref", "tag", "unpack-file", "unpack-objects", "update-index",
	"update-ref", "update-server-info", "upload-archive", "upload-pack", "var", "verify-commit",
	"verify-pack", "verify-tag", "version", "whatchanged", "worktree", "write-tree",
)

// gitPushPlumbing are the commands that push as `git push` does, under
// another name: their command line is also read as `git push ARGS`.
// (The remote helpers and receive-pack are not among them: the helpers
// are the transport under fetch as much as push, and receive-pack is the
// receiving end a local push itself runs; docs/bash-rules.md §9 says
// which rules stop them.)
var gitPushPlumbing = wordSet("send-pack", "http-push")

// git's autocorrection (help.c, help_unknown_cmd): the similarity of a
// candidate is levenshtein(typed, candidate, swap 0, substitution 2,
// insertion 1, deletion 3) + 1, and git runs the one candidate that is
// most similar when that is below similarityFloor.
const (
	similarityFloor = 7
	maxTypedLen     = 64 // longer words are not compared (a command name is short)
)

// gitAutocorrect returns the git commands an unknown subcommand may be
// autocorrected to: those of gitCommands at the best similarity, when
// it is below the floor. git runs one only when it is the single best
// candidate among its commands, aliases and the git-* programs in PATH,
// and no common command starts with the word; both only ever keep git
// from running one of these, so every best one is a possible reading.
func gitAutocorrect(cmd string) []string {
	if cmd == "" || len(cmd) > maxTypedLen || gitCommands[cmd] {
		return nil
	}
	best := similarityFloor
	var out []string
	var rows [3][]int
	for c := range gitCommands {
		// The length difference alone costs an insertion (1) or a
		// deletion (3) per character: past the best, c cannot win.
		if d := len(c) - len(cmd); d > 0 && d+1 > best || d < 0 && -3*d+1 > best {
			continue
		}
		s := gitLevenshtein(cmd, c, &rows) + 1
		switch {
		case s < best:
			best, out = s, append(out[:0], c)
		case s == best && s < similarityFloor:
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// gitLevenshtein is git's levenshtein.c with the weights help.c uses: the
// cost of turning a into b, a swap of adjacent characters 0, a
// substitution 2, an insertion 1, a deletion 3. rows is scratch space,
// grown as needed.
func gitLevenshtein(a, b string, rows *[3][]int) int {
	const w, s, ins, del = 0, 2, 1, 3
	for i := range rows {
		if cap(rows[i]) < len(b)+1 {
			rows[i] = make([]int, len(b)+1)
		}
		rows[i] = rows[i][:len(b)+1]
	}
	row0, row1, row2 := rows[0], rows[1], rows[2]
	for j := range row1 {
		row1[j] = j * ins
	}
	for i := 0; i < len(a); i++ {
		row2[0] = (i + 1) * del
		for j := 0; j < len(b); j++ {
			v := row1[j]
			if a[i] != b[j] {
				v += s
			}
			if i > 0 && j > 0 && a[i-1] == b[j] && a[i] == b[j-1] && v > row0[j-1]+w {
				v = row0[j-1] + w
			}
			if v > row1[j+1]+del {
				v = row1[j+1] + del
			}
			if v > row2[j]+ins {
				v = row2[j] + ins
			}
			row2[j+1] = v
		}
		row0, row1, row2 = row1, row2, row0
	}
	return row1[len(b)]
}

// gitIntents adds to r the readings of what its git lines may run besides
// their subcommand: for `git SUB ARGS` with SUB unknown, when autocorrect
// applies (a `git SUB` line, not a dashed name, which git runs only as a
// builtin), `git C ARGS` for each command C git may autocorrect SUB to;
// and `git push ARGS` for push plumbing, among those too. All are
// possible readings.
func gitIntents(r readings, autocorrect bool) readings {
	n := len(r.certain) + len(r.possible)
	for i := 0; i < n; i++ {
		var line []field
		if i < len(r.certain) {
			line = r.certain[i]
		} else {
			line = r.possible[i-len(r.certain)]
		}
		if len(line) < 2 || line[1].dyn != static {
			continue
		}
		sub, args := line[1].s, line[2:]
		if gitPushPlumbing[sub] {
			r.possible = append(r.possible, gitLine("push", args))
		}
		if !autocorrect {
			continue
		}
		for _, c := range gitAutocorrect(sub) {
			r.possible = append(r.possible, gitLine(c, args))
			if gitPushPlumbing[c] {
				r.possible = append(r.possible, gitLine("push", args))
			}
		}
	}
	return r
}
